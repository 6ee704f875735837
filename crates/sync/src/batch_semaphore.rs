//! The fair counting semaphore every lock here is built on (`Semaphore`, `Mutex`,
//! `RwLock`, `OnceCell`), and that a bounded channel can use for its capacity.
//!
//! # Design
//!
//! One word, `permits`, holds the free permits (shifted left by [`SHIFT`]) and two
//! flags: [`CLOSED`] and [`QUEUED`]. An acquire that finds enough free permits takes
//! them with one compare-and-swap and never touches the lock; a release that finds
//! `QUEUED` clear adds its permits the same way.
//!
//! Otherwise the wait list, under a `Mutex`, decides. Waiters are served strictly in
//! arrival order: released permits go to the front waiter, a few at a time if need be
//! (partial assignment), and only when it has all it asked for does the next one get
//! any. So a waiter for many permits at the front holds back later small ones.
//!
//! Invariants, true whenever the lock is free:
//! - `QUEUED` is set exactly when the queue is non-empty and the semaphore is open;
//! - when the queue is non-empty, no permit is free (released ones went to waiters);
//! - every permit is either free, held by a caller, or assigned to a queued node or
//!   to a future whose node was served (popped) but that has not completed yet.
//!
//! A waiting future keeps the key of its node and an identity (`id`) to tell its node
//! from a newer one that reused the slot. A node absent from the list has been
//! fully served: the future then owns all its permits. Closing wakes every waiter but
//! leaves the nodes in place, so that each future, when dropped, still knows how many
//! permits it had been given and returns exactly those.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use crate::loom::sync::Mutex;
use crate::loom::sync::MutexGuard;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire as AcquireOrd, Release};
use crate::waiters::{WaitList, WaiterKey};

/// Flag: the semaphore is closed; no acquire succeeds any more.
const CLOSED: usize = 1;
/// Flag: the queue holds waiters, so releases must go through the lock.
const QUEUED: usize = 2;
/// The permit count sits above the flags.
const SHIFT: usize = 2;
const FLAGS: usize = CLOSED | QUEUED;

/// How many wakers are collected under the lock before it is dropped to wake them.
const WAKE_BATCH: usize = 32;

/// A fair counting semaphore (crate-internal).
///
/// Its API, for the primitives built on it:
/// - [`Semaphore::acquire`] returns a cancel-safe [`Acquire`] future (`Unpin`): drop
///   it at any time and whatever it had been given goes back to the semaphore;
/// - [`Semaphore::try_acquire`] takes permits only if they are free right now;
/// - [`Semaphore::release`] returns permits (or adds new ones), serving waiters first;
/// - [`Semaphore::close`] fails every current and future acquire;
/// - [`Semaphore::forget_permits`], [`Semaphore::available_permits`],
///   [`Semaphore::is_closed`].
pub(crate) struct Semaphore {
    permits: AtomicUsize,
    waiters: Mutex<Waitlist>,
    /// tokio's internal `runtime.resource` span of the semaphore (`is_internal`),
    /// made in the scope of the primitive that owns it, if any.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    pub(crate) resource_span: tracing::Span,
}

struct Waitlist {
    queue: WaitList<Node>,
    closed: bool,
    next_id: u64,
}

struct Node {
    /// Tells this waiter's node from a later one in the same slot.
    id: u64,
    /// Permits still missing.
    remaining: usize,
    waker: Option<Waker>,
    /// The waiter's async-op span, in which its obtained permits are reported.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    span: tracing::Span,
}

/// The error of an acquire on a closed semaphore.
#[derive(Debug)]
pub struct AcquireError(());

/// Why a `try_acquire` gave no permit.
#[derive(Debug, PartialEq, Eq)]
pub enum TryAcquireError {
    /// The semaphore was closed.
    Closed,
    /// The semaphore is open but has too few free permits.
    NoPermits,
}

impl Semaphore {
    /// The most permits a semaphore can hold: `usize::MAX >> 3`.
    pub(crate) const MAX_PERMITS: usize = usize::MAX >> 3;

    /// A semaphore with `permits` free permits.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub(crate) fn new(permits: usize) -> Self {
        assert!(
            permits <= Self::MAX_PERMITS,
            "a semaphore may not have more than MAX_PERMITS permits ({})",
            Self::MAX_PERMITS
        );
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        let resource_span = {
            let span = tracing::trace_span!(
                target: "tokio::sync::batch_semaphore",
                parent: None,
                "runtime.resource",
                concrete_type = "Semaphore",
                kind = "Sync",
                is_internal = true,
            );
            crate::trace::state_update!(span, permits = permits, permits.op = "override");
            span
        };
        Semaphore {
            permits: AtomicUsize::new(permits << SHIFT),
            waiters: Mutex::new(Waitlist {
                queue: WaitList::new(),
                closed: false,
                next_id: 0,
            }),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span,
        }
    }

    /// Like [`Semaphore::new`], usable in constants and statics.
    #[cfg(not(loom))]
    #[track_caller]
    pub(crate) const fn const_new(permits: usize) -> Self {
        assert!(permits <= Self::MAX_PERMITS);
        Semaphore {
            permits: AtomicUsize::new(permits << SHIFT),
            waiters: Mutex::new(Waitlist {
                queue: WaitList::new(),
                closed: false,
                next_id: 0,
            }),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: tracing::Span::none(),
        }
    }

    /// A semaphore that is closed from the start, with no permits.
    pub(crate) fn new_closed() -> Self {
        Semaphore {
            permits: AtomicUsize::new(CLOSED),
            waiters: Mutex::new(Waitlist {
                queue: WaitList::new(),
                closed: true,
                next_id: 0,
            }),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: tracing::Span::none(),
        }
    }

    /// Like [`Semaphore::new_closed`], usable in constants and statics.
    #[cfg(not(loom))]
    pub(crate) const fn const_new_closed() -> Self {
        Semaphore {
            permits: AtomicUsize::new(CLOSED),
            waiters: Mutex::new(Waitlist {
                queue: WaitList::new(),
                closed: true,
                next_id: 0,
            }),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: tracing::Span::none(),
        }
    }

    /// The permits free right now.
    pub(crate) fn available_permits(&self) -> usize {
        self.permits.load(AcquireOrd) >> SHIFT
    }

    /// True once [`Semaphore::close`] was called (or the semaphore was made closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.permits.load(AcquireOrd) & CLOSED != 0
    }

    /// Takes `n` permits if they are free now.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub(crate) fn try_acquire(&self, n: usize) -> Result<(), TryAcquireError> {
        assert!(
            n <= Self::MAX_PERMITS,
            "a semaphore may not have more than MAX_PERMITS permits ({})",
            Self::MAX_PERMITS
        );
        let needed = n << SHIFT;
        let mut curr = self.permits.load(AcquireOrd);
        loop {
            if curr & CLOSED != 0 {
                return Err(TryAcquireError::Closed);
            }
            if (curr & !FLAGS) < needed {
                return Err(TryAcquireError::NoPermits);
            }
            match self.permits.compare_exchange(curr, curr - needed, AcqRel, AcquireOrd) {
                Ok(_) => {
                    #[cfg(all(tokio_unstable, feature = "tracing"))]
                    crate::trace::state_update!(self.resource_span, permits = n, permits.op = "sub");
                    return Ok(());
                }
                Err(actual) => curr = actual,
            }
        }
    }

    /// A future that takes `n` permits, waiting its turn if they are not free.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub(crate) fn acquire(&self, n: usize) -> Acquire<'_> {
        assert!(
            n <= Self::MAX_PERMITS,
            "a semaphore may not have more than MAX_PERMITS permits ({})",
            Self::MAX_PERMITS
        );
        Acquire {
            sem: self,
            num_permits: n,
            state: State::Idle,
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            spans: AcquireSpans::new(&self.resource_span, n),
        }
    }

    /// Returns (or adds) `n` permits: the waiters in the queue are served first, in
    /// order, and what they do not need becomes free.
    ///
    /// # Panics
    ///
    /// If the free permits would exceed [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub(crate) fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut curr = self.permits.load(AcquireOrd);
        while curr & QUEUED == 0 {
            let next = Self::added(curr, n);
            match self.permits.compare_exchange(curr, next, AcqRel, AcquireOrd) {
                Ok(_) => {
                    #[cfg(all(tokio_unstable, feature = "tracing"))]
                    crate::trace::state_update!(self.resource_span, permits = n, permits.op = "add");
                    return;
                }
                Err(actual) => curr = actual,
            }
        }
        self.add_permits_locked(n, crate::loom::lock(&self.waiters));
    }

    /// The permit word `curr` with `n` more free permits.
    #[track_caller]
    fn added(curr: usize, n: usize) -> usize {
        assert!(
            n <= Self::MAX_PERMITS,
            "cannot add more than MAX_PERMITS permits ({})",
            Self::MAX_PERMITS
        );
        let prev = curr >> SHIFT;
        assert!(
            prev + n <= Self::MAX_PERMITS,
            "number of added permits ({}) would overflow MAX_PERMITS ({})",
            n,
            Self::MAX_PERMITS
        );
        curr + (n << SHIFT)
    }

    /// Hands `rem` permits to the queue's front waiters, the rest to the free count,
    /// clearing `QUEUED` when the queue ends up empty. Wakes the served waiters with
    /// the lock dropped, re-taking it for each batch of [`WAKE_BATCH`].
    #[track_caller]
    fn add_permits_locked<'a>(&'a self, mut rem: usize, mut guard: MutexGuard<'a, Waitlist>) {
        loop {
            let mut wakers = WakeBatch::new();
            if !guard.closed {
                while rem > 0 && !wakers.is_full() {
                    let Some(front) = guard.queue.front_mut() else { break };
                    let take = rem.min(front.remaining);
                    front.remaining -= take;
                    rem -= take;
                    if front.remaining != 0 {
                        break;
                    }
                    let served = guard.queue.pop_front().expect("the front node exists");
                    #[cfg(all(tokio_unstable, feature = "tracing"))]
                    wakers.served(served.span, take);
                    wakers.push(served.waker);
                }
            }
            // With waiters left and `rem > 0`, the batch is full: wake it and go on.
            if guard.closed || guard.queue.is_empty() {
                // Nothing (more) waits: the rest is free, and releases may skip the lock.
                let mut curr = self.permits.load(AcquireOrd);
                loop {
                    let next = if rem > 0 { Self::added(curr, rem) } else { curr } & !QUEUED;
                    if next == curr {
                        break;
                    }
                    match self.permits.compare_exchange(curr, next, AcqRel, AcquireOrd) {
                        Ok(_) => break,
                        Err(actual) => curr = actual,
                    }
                }
                #[cfg(all(tokio_unstable, feature = "tracing"))]
                if rem > 0 {
                    crate::trace::state_update!(self.resource_span, permits = rem, permits.op = "add");
                }
                rem = 0;
            }
            drop(guard);
            // The count is settled and the lock released: a panicking subscriber
            // loses no permit (the served waiters' wakes are then lost, not their
            // permits; a poll finds them served).
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            wakers.trace_served();
            wakers.wake_all();
            if rem == 0 {
                return;
            }
            guard = crate::loom::lock(&self.waiters);
        }
    }

    /// Removes up to `n` free permits for good; returns how many were removed.
    pub(crate) fn forget_permits(&self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let mut curr = self.permits.load(AcquireOrd);
        loop {
            let free = curr >> SHIFT;
            let take = free.min(n);
            match self
                .permits
                .compare_exchange(curr, curr - (take << SHIFT), AcqRel, AcquireOrd)
            {
                Ok(_) => {
                    #[cfg(all(tokio_unstable, feature = "tracing"))]
                    crate::trace::state_update!(self.resource_span, permits = take, permits.op = "sub");
                    return take;
                }
                Err(actual) => curr = actual,
            }
        }
    }

    /// Closes the semaphore: every waiting acquire and every later one fails with
    /// [`AcquireError`]. Permits still held can be released as usual.
    pub(crate) fn close(&self) {
        let mut guard = crate::loom::lock(&self.waiters);
        // Under the lock, so that the flag and `closed` change together for anyone
        // who holds it. Releases on a closed semaphore ignore the queue: `QUEUED` is clear.
        self.permits.fetch_or(CLOSED, Release);
        self.permits.fetch_and(!QUEUED, Release);
        guard.closed = true;
        let wakers: Vec<Waker> = guard.queue.iter_mut().filter_map(|n| n.waker.take()).collect();
        drop(guard);
        for w in wakers {
            w.wake();
        }
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("permits", &self.available_permits())
            .finish()
    }
}

/// Wakers collected under the lock, woken after it is dropped; no allocation.
struct WakeBatch {
    wakers: [Option<Waker>; WAKE_BATCH],
    len: usize,
    /// The served waiters' async-op spans and the permits each got last.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    served: Vec<(tracing::Span, usize)>,
}

impl WakeBatch {
    fn new() -> Self {
        WakeBatch {
            wakers: [const { None }; WAKE_BATCH],
            len: 0,
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            served: Vec::new(),
        }
    }

    #[cfg(all(tokio_unstable, feature = "tracing"))]
    fn served(&mut self, span: tracing::Span, permits: usize) {
        self.served.push((span, permits));
    }

    /// tokio's event of each served waiter, in its async op.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    fn trace_served(&mut self) {
        for (span, permits) in self.served.drain(..) {
            crate::trace::async_op_update!(span, permits_obtained = permits, permits.op = "add");
        }
    }

    fn is_full(&self) -> bool {
        self.len == WAKE_BATCH
    }

    fn push(&mut self, waker: Option<Waker>) {
        if let Some(w) = waker {
            self.wakers[self.len] = Some(w);
            self.len += 1;
        }
    }

    fn wake_all(mut self) {
        for w in self.wakers[..self.len].iter_mut() {
            if let Some(w) = w.take() {
                w.wake();
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Not polled yet.
    Idle,
    /// Queued in the wait list under `key`, with identity `id`.
    Waiting { key: WaiterKey, id: u64 },
    /// Holds all its permits; only the cooperative budget stands before completion.
    Holding,
    /// Completed: the permits belong to the caller.
    Done,
}

/// The future of [`Semaphore::acquire`]: resolves to `Ok(())` once it holds its
/// permits, which then belong to the caller (who gives them back with
/// [`Semaphore::release`]), or `Err` if the semaphore is closed.
///
/// Cancel safe: dropping it before completion removes it from the queue and returns
/// whatever permits it had been given. It is `Unpin` (its node lives in the list).
#[must_use = "futures do nothing unless polled"]
pub(crate) struct Acquire<'a> {
    sem: &'a Semaphore,
    num_permits: usize,
    state: State,
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    spans: AcquireSpans,
}

/// tokio's async-op spans of an acquire (`Acquire::new`), in the semaphore's scope.
#[cfg(all(tokio_unstable, feature = "tracing"))]
struct AcquireSpans {
    async_op: tracing::Span,
    async_op_poll: tracing::Span,
}

#[cfg(all(tokio_unstable, feature = "tracing"))]
impl AcquireSpans {
    fn new(resource: &tracing::Span, requested: usize) -> AcquireSpans {
        resource.in_scope(|| {
            let async_op = tracing::trace_span!(
                target: "tokio::sync::batch_semaphore",
                "runtime.resource.async_op",
                source = "Acquire::new",
            );
            let async_op_poll = async_op.in_scope(|| {
                tracing::trace!(
                    target: "runtime::resource::async_op::state_update",
                    permits_requested = requested,
                    permits.op = "override",
                );
                tracing::trace!(
                    target: "runtime::resource::async_op::state_update",
                    permits_obtained = 0usize,
                    permits.op = "override",
                );
                tracing::trace_span!(target: "tokio::sync::batch_semaphore", "runtime.resource.async_op.poll")
            });
            AcquireSpans {
                async_op,
                async_op_poll,
            }
        })
    }
}

impl Semaphore {
    /// `taken` permits went from the semaphore to a waiter whose async op is
    /// `async_op`: tokio's events, emitted once the permits are recorded as the
    /// waiter's, so that a panicking subscriber loses none.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    fn trace_taken(&self, async_op: &tracing::Span, taken: usize) {
        crate::trace::state_update!(self.resource_span, permits = taken, permits.op = "sub");
        crate::trace::async_op_update!(async_op, permits_obtained = taken, permits.op = "add");
    }
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("num_permits", &self.num_permits)
            .finish_non_exhaustive()
    }
}

impl Future for Acquire<'_> {
    type Output = Result<(), AcquireError>;

    #[cfg(all(tokio_unstable, feature = "tracing"))]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let sem = this.sem;
        let _resource = sem.resource_span.enter();
        let spans = std::mem::replace(
            &mut this.spans,
            AcquireSpans {
                async_op: tracing::Span::none(),
                async_op_poll: tracing::Span::none(),
            },
        );
        let polled = {
            let _async_op = spans.async_op.enter();
            let _poll = spans.async_op_poll.enter();
            let polled = this.poll_acquire(cx, &spans.async_op);
            tracing::trace!(target: "runtime::resource::poll_op", op_name = "poll_acquire", is_ready = polled.is_ready());
            polled
        };
        this.spans = spans;
        polled
    }

    #[cfg(not(all(tokio_unstable, feature = "tracing")))]
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_acquire(cx)
    }
}

impl Acquire<'_> {
    /// The poll; `async_op`: the acquire's span, with tokio's `tracing`.
    #[inline(always)]
    fn poll_acquire(
        &mut self,
        cx: &mut Context<'_>,
        #[cfg(all(tokio_unstable, feature = "tracing"))] async_op: &tracing::Span,
    ) -> Poll<Result<(), AcquireError>> {
        // A task trace stops here, before any permit is taken (tokio_unstable).
        #[cfg(tokio_unstable)]
        ready!(netloop_reactor::trace::trace_leaf(cx));
        let this = self;
        let sem = this.sem;
        match this.state {
            State::Idle => ready!(this.poll_first(
                cx,
                #[cfg(all(tokio_unstable, feature = "tracing"))]
                async_op
            ))?,
            State::Waiting { key, id } => {
                if sem.is_closed() {
                    return Poll::Ready(Err(AcquireError(())));
                }
                let mut guard = crate::loom::lock(&sem.waiters);
                match guard.queue.try_get_mut(key) {
                    Some(node) if node.id == id => {
                        let old = match &node.waker {
                            Some(w) if w.will_wake(cx.waker()) => None,
                            _ => node.waker.replace(cx.waker().clone()),
                        };
                        drop(guard);
                        drop(old);
                        return Poll::Pending;
                    }
                    // Served: the node was popped with all its permits.
                    _ => this.state = State::Holding,
                }
            }
            State::Holding => {
                if sem.is_closed() {
                    return Poll::Ready(Err(AcquireError(())));
                }
            }
            State::Done => panic!("`Acquire` polled after completion"),
        }
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        coop.made_progress();
        this.state = State::Done;
        Poll::Ready(Ok(()))
    }
}

impl Acquire<'_> {
    /// The first poll: take the permits if free, else take what is free and queue.
    /// `Ready(Ok)` leaves the state at `Holding`.
    fn poll_first(
        &mut self,
        cx: &mut Context<'_>,
        #[cfg(all(tokio_unstable, feature = "tracing"))] async_op: &tracing::Span,
    ) -> Poll<Result<(), AcquireError>> {
        let sem = self.sem;
        let needed = self.num_permits << SHIFT;
        let mut guard = None;
        let mut curr = sem.permits.load(AcquireOrd);
        let taken = loop {
            if curr & CLOSED != 0 {
                return Poll::Ready(Err(AcquireError(())));
            }
            let free = curr & !FLAGS;
            if free >= needed {
                match sem.permits.compare_exchange(curr, curr - needed, AcqRel, AcquireOrd) {
                    Ok(_) => {
                        self.state = State::Holding;
                        #[cfg(all(tokio_unstable, feature = "tracing"))]
                        sem.trace_taken(async_op, self.num_permits);
                        return Poll::Ready(Ok(()));
                    }
                    Err(actual) => curr = actual,
                }
                continue;
            }
            if guard.is_none() {
                // We will (probably) wait: take the lock before touching the count, so
                // that no release slips between taking the free permits and queueing.
                guard = Some(crate::loom::lock(&sem.waiters));
                curr = sem.permits.load(AcquireOrd);
                continue;
            }
            // Take every free permit and mark the queue as non-empty in one step.
            match sem
                .permits
                .compare_exchange(curr, (curr & CLOSED) | QUEUED, AcqRel, AcquireOrd)
            {
                Ok(_) => break free >> SHIFT,
                Err(actual) => curr = actual,
            }
        };
        let mut guard = guard.expect("the lock is held to queue");
        let id = guard.next_id;
        guard.next_id += 1;
        let key = guard.queue.push_back(Node {
            id,
            remaining: self.num_permits - taken,
            waker: Some(cx.waker().clone()),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            span: async_op.clone(),
        });
        self.state = State::Waiting { key, id };
        drop(guard);
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        sem.trace_taken(async_op, taken);
        Poll::Pending
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        match self.state {
            State::Idle | State::Done => {}
            State::Holding => self.sem.release(self.num_permits),
            State::Waiting { key, id } => {
                let mut guard = crate::loom::lock(&self.sem.waiters);
                let given = match guard.queue.try_get(key) {
                    Some(node) if node.id == id => {
                        let node = guard.queue.remove(key);
                        self.num_permits - node.remaining
                    }
                    _ => self.num_permits,
                };
                // Also clears `QUEUED` if this was the last waiter.
                self.sem.add_permits_locked(given, guard);
            }
        }
    }
}

impl AcquireError {
    #[allow(dead_code)]
    pub(crate) fn closed() -> AcquireError {
        AcquireError(())
    }
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("semaphore closed")
    }
}

impl std::error::Error for AcquireError {}

impl TryAcquireError {
    /// True if the semaphore was closed.
    #[allow(dead_code)]
    pub(crate) fn is_closed(&self) -> bool {
        matches!(self, TryAcquireError::Closed)
    }

    /// True if the semaphore was open but had too few free permits.
    #[allow(dead_code)]
    pub(crate) fn is_no_permits(&self) -> bool {
        matches!(self, TryAcquireError::NoPermits)
    }
}

impl fmt::Display for TryAcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryAcquireError::Closed => f.write_str("semaphore closed"),
            TryAcquireError::NoPermits => f.write_str("no permits available"),
        }
    }
}

impl std::error::Error for TryAcquireError {}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_models;
