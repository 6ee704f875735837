//! Scheduled tasks: the loop's timers, filed in a hierarchical timing wheel.
//!
//! Netty keeps scheduled tasks in a priority queue and its I/O timeouts in a hashed
//! wheel; tokio keeps every timer in a hierarchical wheel. Timers here are mostly
//! timeouts that are reset or cancelled long before they fire, so they live in a
//! [`TimerWheel`]: insert and cancel are O(1), and tasks still leave in exact
//! (deadline, submission) order. The task's shared state remembers its slab key, so a
//! cancel finds it directly.
//!
//! Only the loop's thread touches the queue. Another thread's `schedule` reaches it
//! through the inbox; another thread's `cancel` marks the task cancelled at once and
//! sends a removal through the inbox without waking the loop. A `postpone` (any
//! thread) only raises the deadline in the shared state: the wheel takes it up when
//! the old deadline's slot comes, and files the task again.

use crate::sync::{AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::task::Waker;

use crate::wheel::{TimerWheel, WheelItem};

/// What runs when a scheduled task is due.
pub(crate) enum Job {
    /// Runs once.
    Once(Box<dyn FnOnce() + Send + 'static>),
    /// Runs every `every` nanos from `from`.
    Periodic {
        every: u64,
        from: PeriodFrom,
        f: Box<dyn FnMut() + Send + 'static>,
    },
    /// Wakes a future's timer (used by the scheduler's `sleep`).
    Wake(Waker),
}

/// What a periodic task's next deadline is measured from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PeriodFrom {
    /// The previous deadline, so a late run is followed by catch-up runs (Netty
    /// `scheduleAtFixedRate`).
    Deadline,
    /// The end of the previous run (Netty `scheduleWithFixedDelay`).
    Finish,
}

const PENDING: u64 = 0;
const DONE: u64 = 1;
const CANCELLED: u64 = 2;
/// A one-shot task that has started: too late to cancel (Netty `setUncancellable`).
const STARTED: u64 = 3;
const STATUS_BITS: u32 = 2;
const STATUS_MASK: u64 = (1 << STATUS_BITS) - 1;
/// The latest deadline the state word holds: about 146 years after the process
/// started. Later ones are stored as it; they are all "never" alike.
const MAX_STATE_DEADLINE: u64 = u64::MAX >> STATUS_BITS;
const NOT_QUEUED: usize = usize::MAX;

fn pack(status: u64, deadline: u64) -> u64 {
    (deadline.min(MAX_STATE_DEADLINE) << STATUS_BITS) | status
}

fn status_of(word: u64) -> u64 {
    word & STATUS_MASK
}

fn deadline_of(word: u64) -> u64 {
    word >> STATUS_BITS
}

/// The part of a scheduled task that its handle shares with the loop.
#[derive(Debug)]
pub(crate) struct ScheduledState {
    /// The status in the low bits, and above them the latest deadline asked for: never
    /// below the task's own, above it after a `postpone` until the loop takes it up.
    /// One word, so that every transition (cancel, postpone, the loop's claim) is one
    /// compare-exchange and none of them can see the others half done.
    word: AtomicU64,
    /// Slab key while the task sits in the wheel; written by the loop thread only.
    key: AtomicUsize,
}

/// What the loop may do with a task whose deadline has come ([`ScheduledTask::claim`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Now STARTED: run it; a cancel or postpone from here on reports false.
    Run,
    /// Postponed since it was filed: file it again under its new deadline.
    Later,
    /// Cancelled: drop it.
    Gone,
}

impl ScheduledState {
    pub(crate) fn new(deadline: u64) -> Arc<Self> {
        Arc::new(ScheduledState {
            word: AtomicU64::new(pack(PENDING, deadline)),
            key: AtomicUsize::new(NOT_QUEUED),
        })
    }

    /// `fetch_update` of the word with the orderings every transition uses.
    fn update(&self, f: impl FnMut(u64) -> Option<u64>) -> Result<u64, u64> {
        self.word.fetch_update(AcqRel, Acquire, f)
    }

    /// PENDING -> CANCELLED. False if it already started, ran or was cancelled.
    pub(crate) fn try_cancel(&self) -> bool {
        self.update(|w| (status_of(w) == PENDING).then(|| pack(CANCELLED, deadline_of(w))))
            .is_ok()
    }

    /// Raises a pending task's deadline to `deadline`. True if the task is pending, so
    /// the loop will see the new deadline before it starts the task; false if it has
    /// started, finished or was cancelled.
    pub(crate) fn postpone(&self, deadline: u64) -> bool {
        let raised =
            self.update(|w| (status_of(w) == PENDING && deadline > deadline_of(w)).then(|| pack(PENDING, deadline)));
        match raised {
            Ok(_) => true,
            // Nothing to write: true while pending (the deadline is as late already).
            Err(w) => status_of(w) == PENDING,
        }
    }

    /// Raises the deadline without a condition on the status (a periodic task's next
    /// run). Returns the latest deadline asked for.
    fn raise(&self, deadline: u64) -> u64 {
        match self.update(|w| (deadline > deadline_of(w)).then(|| pack(status_of(w), deadline))) {
            Ok(_) => deadline.min(MAX_STATE_DEADLINE),
            Err(w) => deadline_of(w),
        }
    }

    /// The latest deadline asked for.
    fn wanted(&self) -> u64 {
        deadline_of(self.word.load(Relaxed))
    }

    /// PENDING or STARTED -> DONE.
    pub(crate) fn set_done(&self) {
        let _ = self.update(|w| matches!(status_of(w), PENDING | STARTED).then(|| pack(DONE, deadline_of(w))));
    }

    fn status(&self) -> u64 {
        status_of(self.word.load(Acquire))
    }

    pub(crate) fn is_pending(&self) -> bool {
        self.status() == PENDING
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.status() == CANCELLED
    }

    /// Ran to completion, or was cancelled.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.status(), DONE | CANCELLED)
    }
}

/// A task waiting in (or on its way to) the wheel.
pub(crate) struct ScheduledTask {
    pub(crate) deadline: u64,
    pub(crate) seq: u64,
    pub(crate) job: Job,
    pub(crate) state: Arc<ScheduledState>,
}

impl ScheduledTask {
    pub(crate) fn new(deadline: u64, job: Job, state: Arc<ScheduledState>) -> Self {
        ScheduledTask {
            deadline,
            seq: 0,
            job,
            state,
        }
    }

    /// Claims a due task: PENDING -> STARTED, unless it was cancelled, or postponed
    /// after the wheel last looked (then it stays PENDING and takes the new deadline,
    /// to be filed again). One compare-exchange decides, so a `cancel` or `postpone`
    /// that reports success is never overtaken by a start.
    pub(crate) fn claim(&mut self) -> Claim {
        let mut later = None;
        let claimed = self.state.update(|w| {
            if status_of(w) != PENDING {
                return None;
            }
            if deadline_of(w) > self.deadline {
                later = Some(deadline_of(w));
                return None;
            }
            Some(pack(STARTED, deadline_of(w)))
        });
        match (claimed, later) {
            (Ok(_), _) => Claim::Run,
            (Err(_), Some(deadline)) => {
                self.deadline = deadline;
                Claim::Later
            }
            (Err(_), None) => Claim::Gone,
        }
    }

    /// Takes up a deadline postponed past this one. True if it moved.
    pub(crate) fn postponed(&mut self) -> bool {
        self.refresh()
    }

    /// Moves a periodic task to its next deadline (later still if it was postponed
    /// past it).
    pub(crate) fn reschedule(&mut self, deadline: u64) {
        self.deadline = deadline.max(self.state.raise(deadline));
    }
}

impl WheelItem for ScheduledTask {
    fn deadline(&self) -> u64 {
        self.deadline
    }

    fn seq(&self) -> u64 {
        self.seq
    }

    fn refresh(&mut self) -> bool {
        let wanted = self.state.wanted();
        if wanted > self.deadline {
            self.deadline = wanted;
            return true;
        }
        false
    }
}

/// A timer registered on the loop's own thread by a future polled there (`sleep`): it
/// shares nothing with other threads, so it needs no allocation of its own and no lock.
/// The future keeps its [`TimerKey`] and finds the entry again to swap the waker or to
/// cancel; an entry that is gone has fired (or a shutdown dropped it).
pub(crate) struct LocalWake {
    deadline: u64,
    seq: u64,
    waker: Waker,
}

/// Names a timer registered on its loop's thread: the slab key, and the sequence number
/// that tells this timer from a later one given the same key; and what the future
/// that owns the timer knows of it without looking at the entry: the deadline it was
/// filed for, and which task's waker the entry holds.
///
/// Three words: a `Sleep` holding one stays within a cache line. Not `Copy`: its one
/// holder is the one that polls the timer, and keeps what the key records about the
/// entry true (see [`EventLoopHandle::poll_timer`](crate::EventLoopHandle::poll_timer)).
#[derive(Debug, PartialEq, Eq)]
pub struct TimerKey {
    /// The wheel's keys fit 32 bits (its links are 32-bit).
    key: u32,
    /// The low half of the entry's sequence number: with the deadline below, what
    /// tells this timer from a later one in the same slot.
    seq: u32,
    /// The loop clock's deadline the entry was filed for.
    pub(crate) deadline: u64,
    /// [`waker_tag`] of the waker the entry holds; 0 if it is not a task's waker.
    pub(crate) waker: usize,
}

impl TimerKey {
    /// True if the entry `w` (found under this key) is this timer.
    #[inline]
    fn names(&self, w: &LocalWake) -> bool {
        w.seq as u32 == self.seq && w.deadline == self.deadline
    }
}

/// Which task a waker wakes, as one word that a timer's owner can keep: the task's
/// address with the low bit set, for a waker of the reactor's tasks; 0 for any other
/// waker, whose identity would need its vtable too. Two equal non-zero tags wake the
/// same task for as long as either waker lives (a live waker keeps its task's block).
#[inline]
pub(crate) fn waker_tag(waker: &Waker) -> usize {
    if crate::task::is_task_waker(waker) {
        waker.data().addr() | 1
    } else {
        0
    }
}

/// What [`EventLoopHandle::register_timer`](crate::EventLoopHandle::register_timer) did.
#[derive(Debug, PartialEq, Eq)]
pub enum TimerRegistration {
    /// Filed in the loop's wheel under this key.
    Filed(TimerKey),
    /// The deadline had already passed on the loop's clock: nothing was filed.
    Due,
    /// Not on the loop's thread: nothing was filed.
    NotOnLoop,
    /// The loop is shutting down: nothing was filed, and no timer will fire.
    Shutdown,
}

/// What became of a timer registered on its loop's thread
/// ([`EventLoopHandle::poll_timer`](crate::EventLoopHandle::poll_timer)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerState {
    /// In the wheel, waiting for its deadline.
    Waiting,
    /// Its deadline came and the loop woke its waker.
    Fired,
    /// Dropped unfired: the loop is shutting down.
    Dropped,
}

/// What the wheel holds. The rare task (a closure, or a timer registered from another
/// thread) is boxed, so that an entry is no larger than the common local wake needs.
pub(crate) enum Timer {
    /// A scheduled task, or a timer registered from another thread.
    Task(Box<ScheduledTask>),
    /// A timer registered on the loop's own thread.
    Wake(LocalWake),
}

impl LocalWake {
    /// Fires the timer. It has left the wheel, which is how its future sees that it
    /// fired.
    pub(crate) fn fire(self) {
        self.waker.wake();
    }
}

impl WheelItem for Timer {
    #[inline]
    fn deadline(&self) -> u64 {
        match self {
            Timer::Task(t) => t.deadline,
            Timer::Wake(w) => w.deadline,
        }
    }

    #[inline]
    fn seq(&self) -> u64 {
        match self {
            Timer::Task(t) => t.seq,
            Timer::Wake(w) => w.seq,
        }
    }

    fn refresh(&mut self) -> bool {
        match self {
            Timer::Task(t) => t.refresh(),
            // A local wake's deadline never moves: its `Sleep` files a new one instead.
            Timer::Wake(_) => false,
        }
    }
}

/// The loop's scheduled-task queue: every timer of the loop, in one wheel, so that all
/// of them leave in one (deadline, submission) order.
#[derive(Default)]
pub(crate) struct ScheduledQueue {
    wheel: TimerWheel<Timer>,
    next_seq: u64,
}

impl ScheduledQueue {
    pub(crate) fn len(&self) -> usize {
        self.wheel.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.wheel.is_empty()
    }

    fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// Inserts a task. A task cancelled before it reached the wheel is handed back:
    /// the caller drops it outside the queue's borrow, since its drop may run code that
    /// touches the queue (a `Sleep`'s).
    #[must_use = "a task handed back must be dropped after the queue's borrow ends"]
    pub(crate) fn push(&mut self, mut task: ScheduledTask) -> Option<ScheduledTask> {
        if !task.state.is_pending() {
            return Some(task);
        }
        if task.seq == 0 {
            task.seq = self.next_seq();
        }
        let state = task.state.clone();
        let key = self.wheel.insert(Timer::Task(Box::new(task)));
        state.key.store(key, Relaxed);
        None
    }

    /// Registers a local timer that wakes `waker` at `deadline`.
    pub(crate) fn push_wake(&mut self, deadline: u64, waker: Waker) -> TimerKey {
        let seq = self.next_seq();
        let tag = waker_tag(&waker);
        let key = self.wheel.insert(Timer::Wake(LocalWake { deadline, seq, waker }));
        TimerKey {
            key: u32::try_from(key).expect("the wheel's keys are 32-bit"),
            seq: seq as u32,
            deadline,
            waker: tag,
        }
    }

    #[inline]
    fn local_wake(&mut self, timer: &TimerKey) -> Option<&mut LocalWake> {
        match self.wheel.get_mut(timer.key as usize)? {
            Timer::Wake(w) if timer.names(w) => Some(w),
            _ => None,
        }
    }

    /// For a local timer still waiting: whether it already wakes `waker`. `None` if it
    /// has fired (or was removed).
    #[inline]
    pub(crate) fn wakes(&mut self, timer: &TimerKey, waker: &Waker) -> Option<bool> {
        self.local_wake(timer).map(|w| w.waker.will_wake(waker))
    }

    /// Makes a waiting local timer wake `waker`, and hands back the waker it replaced;
    /// if it has fired, hands `waker` back. The caller drops either outside the
    /// queue's borrow: a waker's drop may run code that uses the queue.
    pub(crate) fn set_waker(&mut self, timer: &TimerKey, waker: Waker) -> Result<Waker, Waker> {
        match self.local_wake(timer) {
            Some(w) => Ok(std::mem::replace(&mut w.waker, waker)),
            None => Err(waker),
        }
    }

    /// Moves a waiting local timer to `deadline` (earlier or later), keeping its waker
    /// and its key; the key records the new deadline. False if it has fired (or was
    /// removed).
    pub(crate) fn reschedule_wake(&mut self, timer: &mut TimerKey, deadline: u64) -> bool {
        if self.local_wake(timer).is_none() {
            return false;
        }
        let moved = self.wheel.reschedule(timer.key as usize, |t| {
            if let Timer::Wake(w) = t {
                w.deadline = deadline;
            }
        });
        if moved {
            timer.deadline = deadline;
        }
        moved
    }

    /// True while a local timer waits.
    pub(crate) fn is_waiting(&self, timer: &TimerKey) -> bool {
        matches!(self.wheel.get(timer.key as usize), Some(Timer::Wake(w)) if timer.names(w))
    }

    /// Removes a local timer and hands it back (to be dropped once the queue is no
    /// longer borrowed). `None` if it had fired (or was removed) already.
    pub(crate) fn remove_wake(&mut self, timer: &TimerKey) -> Option<Timer> {
        self.local_wake(timer)?;
        self.wheel.remove(timer.key as usize)
    }

    /// A lower bound of the earliest deadline (exact once it is near), if any.
    pub(crate) fn peek_deadline(&self) -> Option<u64> {
        self.wheel.peek_deadline()
    }

    /// Removes and returns the earliest timer if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<Timer> {
        let timer = self.wheel.pop_due(now)?;
        if let Timer::Task(task) = &timer {
            task.state.key.store(NOT_QUEUED, Relaxed);
        }
        Some(timer)
    }

    /// Removes the task owning `state`, in O(1). `None` if it is not in the wheel.
    pub(crate) fn remove(&mut self, state: &Arc<ScheduledState>) -> Option<ScheduledTask> {
        let key = state.key.load(Relaxed);
        match self.wheel.get(key)? {
            Timer::Task(t) if Arc::ptr_eq(&t.state, state) => {}
            _ => return None,
        }
        let Some(Timer::Task(task)) = self.wheel.remove(key) else {
            unreachable!("the entry under the key was just seen to be this task")
        };
        task.state.key.store(NOT_QUEUED, Relaxed);
        Some(*task)
    }

    /// Removes everything (shutdown cancels all scheduled tasks; local timers are
    /// dropped unfired, as their futures will never be polled on this loop again).
    pub(crate) fn drain(&mut self) -> Vec<Timer> {
        let out = self.wheel.drain();
        for t in &out {
            if let Timer::Task(task) = t {
                task.state.key.store(NOT_QUEUED, Relaxed);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;

#[cfg(all(test, loom))]
mod loom_models;
