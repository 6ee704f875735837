//! The bounded channel's capacity: a count of free slots that senders take (one per
//! message, `n` for `reserve_many`) and the receiver gives back, with a FIFO queue of
//! the senders that wait for room.
//!
//! The count lives in one atomic word, `permits << 2 | WAITING | CLOSED`, so that a
//! send or a receive with room to spare costs one compare-and-swap and no lock.
//! `WAITING` is set, under the lock, exactly while the queue holds a sender that still
//! needs permits; while it is set the word's count is zero and every permit given back
//! goes through the lock to the queue's front first. That is what makes waiting senders
//! served in order: a newcomer's `try_acquire` finds no permits while anyone waits.
//!
//! A waiting sender's node stays in the queue until its future removes it (when it
//! completes or is dropped); the releaser only marks it `Granted` or `Closed`. So a
//! future always finds its own node, and a dropped future hands back exactly what its
//! node holds.

use std::fmt;
use std::task::{Context, Poll, Waker};

use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use crate::waiters::{WaitList, WaiterKey};

const CLOSED: usize = 0b01;
const WAITING: usize = 0b10;
const SHIFT: usize = 2;

/// The most permits a channel may have.
pub(crate) const MAX_PERMITS: usize = usize::MAX >> SHIFT;

/// Why a `try_acquire` failed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TryAcquireError {
    Closed,
    NoPermits,
}

/// The channel was closed while (or before) acquiring.
#[derive(Debug)]
pub(crate) struct Closed;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Waiting,
    Granted,
    Closed,
}

#[derive(Debug)]
struct Node {
    waker: Option<Waker>,
    /// Permits still missing.
    needed: usize,
    /// Permits already handed to this node (given back if it fails or is dropped).
    held: usize,
    outcome: Outcome,
}

#[derive(Debug, Default)]
struct Queue {
    list: WaitList<Node>,
    /// Nodes whose outcome is `Waiting`.
    waiting: usize,
}

/// A channel's free slots and the senders waiting for one.
pub(crate) struct Capacity {
    state: AtomicUsize,
    queue: Mutex<Queue>,
}

/// Wakers gathered under the lock, woken after it is dropped.
/// The first one inline: a release usually wakes one sender, without allocating.
struct WakeBatch {
    first: Option<Waker>,
    rest: Vec<Waker>,
}

impl WakeBatch {
    const fn new() -> Self {
        WakeBatch {
            first: None,
            rest: Vec::new(),
        }
    }

    fn push(&mut self, w: Waker) {
        if self.first.is_none() {
            self.first = Some(w);
        } else {
            self.rest.push(w);
        }
    }

    fn wake(self) {
        if let Some(w) = self.first {
            w.wake();
        }
        for w in self.rest {
            w.wake();
        }
    }
}

impl Capacity {
    pub(crate) fn new(permits: usize) -> Self {
        assert!(
            permits <= MAX_PERMITS,
            "a semaphore may not have more than MAX_PERMITS permits ({MAX_PERMITS})"
        );
        Capacity {
            state: AtomicUsize::new(permits << SHIFT),
            queue: Mutex::new(Queue::default()),
        }
    }

    /// Free permits right now.
    pub(crate) fn available(&self) -> usize {
        self.state.load(Acquire) >> SHIFT
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Acquire) & CLOSED != 0
    }

    /// Takes `n` permits if they are free and nobody waits.
    pub(crate) fn try_acquire(&self, n: usize) -> Result<(), TryAcquireError> {
        let mut s = self.state.load(Acquire);
        loop {
            if s & CLOSED != 0 {
                return Err(TryAcquireError::Closed);
            }
            if s >> SHIFT < n {
                return Err(TryAcquireError::NoPermits);
            }
            match self.state.compare_exchange_weak(s, s - (n << SHIFT), AcqRel, Acquire) {
                Ok(_) => return Ok(()),
                Err(actual) => s = actual,
            }
        }
    }

    /// Gives back `n` permits: to the waiting senders first, in order.
    pub(crate) fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut s = self.state.load(Acquire);
        while s & WAITING == 0 {
            match self.state.compare_exchange_weak(s, s + (n << SHIFT), AcqRel, Acquire) {
                Ok(_) => return,
                Err(actual) => s = actual,
            }
        }
        let mut q = crate::loom::lock(&self.queue);
        let wakers = self.distribute(&mut q, n);
        drop(q);
        wakers.wake();
    }

    /// Hands `n` permits to waiting nodes front first; what is left (once nobody waits)
    /// goes back to the count, clearing `WAITING`. Called under the lock.
    fn distribute(&self, q: &mut Queue, mut n: usize) -> WakeBatch {
        let mut wakers = WakeBatch::new();
        let mut at = q.list.front_key();
        while let Some(key) = at {
            if n == 0 || q.waiting == 0 {
                break;
            }
            let node = q.list.get_mut(key);
            if node.outcome == Outcome::Waiting {
                let take = n.min(node.needed);
                node.needed -= take;
                node.held += take;
                n -= take;
                if node.needed == 0 {
                    node.outcome = Outcome::Granted;
                    q.waiting -= 1;
                    if let Some(w) = node.waker.take() {
                        wakers.push(w);
                    }
                }
            }
            at = q.list.next_key(key);
        }
        if q.waiting == 0 {
            let mut s = self.state.load(Acquire);
            loop {
                let new = (s & !WAITING) + (n << SHIFT);
                match self.state.compare_exchange_weak(s, new, AcqRel, Acquire) {
                    Ok(_) => break,
                    Err(actual) => s = actual,
                }
            }
        } else {
            debug_assert_eq!(n, 0, "permits left over while a sender waits");
        }
        wakers
    }

    /// Fails every queued sender (even one already granted its permits but not yet
    /// polled, as tokio's does) and every later acquire. A queued sender gives back
    /// what it holds when it is polled or dropped.
    pub(crate) fn close(&self) {
        let mut q = crate::loom::lock(&self.queue);
        let mut wakers = WakeBatch::new();
        let mut at = q.list.front_key();
        while let Some(key) = at {
            let node = q.list.get_mut(key);
            if node.outcome != Outcome::Closed {
                node.outcome = Outcome::Closed;
                if let Some(w) = node.waker.take() {
                    wakers.push(w);
                }
            }
            at = q.list.next_key(key);
        }
        q.waiting = 0;
        self.state
            .fetch_update(AcqRel, Acquire, |s| Some((s | CLOSED) & !WAITING))
            .ok();
        drop(q);
        wakers.wake();
    }
}

impl fmt::Debug for Capacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.load(Relaxed);
        f.debug_struct("Semaphore")
            .field("permits", &(s >> SHIFT))
            .field("closed", &(s & CLOSED != 0))
            .finish()
    }
}

/// Where an [`AcquireFut`] stands.
#[derive(Debug)]
enum Step {
    Start,
    Queued(WaiterKey),
    /// The permits are ours; only the budget check is left.
    Holding,
    Done,
}

/// Waiting for `n` permits, in FIFO order with the other waiting senders. Dropping it
/// before it completes gives back whatever it had gathered.
#[derive(Debug)]
pub(crate) struct AcquireFut<'a> {
    cap: &'a Capacity,
    n: usize,
    step: Step,
}

impl<'a> AcquireFut<'a> {
    pub(crate) fn new(cap: &'a Capacity, n: usize) -> Self {
        AcquireFut {
            cap,
            n,
            step: Step::Start,
        }
    }

    pub(crate) fn poll_acquire(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Closed>> {
        // A task trace stops here, before any permit is taken (tokio_unstable).
        #[cfg(tokio_unstable)]
        std::task::ready!(netloop_reactor::trace::trace_leaf(cx));
        match self.step {
            Step::Start => match self.cap.try_acquire(self.n) {
                Ok(()) => self.step = Step::Holding,
                Err(TryAcquireError::Closed) => {
                    self.step = Step::Done;
                    return Poll::Ready(Err(Closed));
                }
                Err(TryAcquireError::NoPermits) => {
                    if let Err(e) = self.enqueue(cx) {
                        return Poll::Ready(Err(e));
                    }
                }
            },
            Step::Queued(key) => {
                let mut q = crate::loom::lock(&self.cap.queue);
                let node = q.list.get_mut(key);
                match node.outcome {
                    Outcome::Waiting => {
                        match &mut node.waker {
                            Some(w) if w.will_wake(cx.waker()) => {}
                            slot => *slot = Some(cx.waker().clone()),
                        }
                        return Poll::Pending;
                    }
                    Outcome::Granted => {
                        q.list.remove(key);
                        self.step = Step::Holding;
                    }
                    Outcome::Closed => {
                        let node = q.list.remove(key);
                        self.step = Step::Done;
                        let wakers = self.cap.distribute(&mut q, node.held);
                        drop(q);
                        wakers.wake();
                        return Poll::Ready(Err(Closed));
                    }
                }
            }
            Step::Holding => {}
            Step::Done => panic!("`AcquireFut` polled after completion"),
        }
        if !matches!(self.step, Step::Holding) {
            return Poll::Pending;
        }
        let coop = std::task::ready!(netloop_reactor::coop::poll_proceed(cx));
        coop.made_progress();
        self.step = Step::Done;
        Poll::Ready(Ok(()))
    }

    /// The slow path: takes the lock, and either takes the permits after all or joins
    /// the queue with whatever part of them is free.
    fn enqueue(&mut self, cx: &mut Context<'_>) -> Result<(), Closed> {
        let mut q = crate::loom::lock(&self.cap.queue);
        let mut s = self.cap.state.load(Acquire);
        let held = loop {
            if s & CLOSED != 0 {
                self.step = Step::Done;
                return Err(Closed);
            }
            let free = s >> SHIFT;
            let (new, took) = if free >= self.n {
                (s - (self.n << SHIFT), self.n)
            } else {
                // Take what is free and wait for the rest.
                ((s & CLOSED) | WAITING, free)
            };
            match self.cap.state.compare_exchange_weak(s, new, AcqRel, Acquire) {
                Ok(_) => break took,
                Err(actual) => s = actual,
            }
        };
        if held == self.n {
            self.step = Step::Holding;
            return Ok(());
        }
        let key = q.list.push_back(Node {
            waker: Some(cx.waker().clone()),
            needed: self.n - held,
            held,
            outcome: Outcome::Waiting,
        });
        q.waiting += 1;
        self.step = Step::Queued(key);
        Ok(())
    }
}

impl Drop for AcquireFut<'_> {
    fn drop(&mut self) {
        match self.step {
            Step::Start | Step::Done => {}
            Step::Holding => self.cap.release(self.n),
            Step::Queued(key) => {
                let mut q = crate::loom::lock(&self.cap.queue);
                let node = q.list.remove(key);
                let back = match node.outcome {
                    Outcome::Waiting => {
                        q.waiting -= 1;
                        node.held
                    }
                    Outcome::Granted | Outcome::Closed => node.held,
                };
                // Even with nothing to give back, a node that stops waiting may be the
                // last: `distribute` then clears `WAITING`.
                let wakers = if back > 0 || q.waiting == 0 {
                    self.cap.distribute(&mut q, back)
                } else {
                    WakeBatch::new()
                };
                drop(q);
                wakers.wake();
            }
        }
    }
}
