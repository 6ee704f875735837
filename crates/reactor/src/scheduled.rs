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

use crate::sync::{AtomicU8, AtomicU64, AtomicUsize, fence};
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use std::task::Waker;

use crate::wheel::{TimerWheel, WheelItem};

/// What runs when a scheduled task is due.
pub(crate) enum Job {
    /// Runs once.
    Once(Box<dyn FnOnce() + Send + 'static>),
    /// Runs every `period` nanos measured from the previous *deadline*, so a late run
    /// is followed by catch-up runs (Netty `scheduleAtFixedRate`).
    FixedRate {
        period: u64,
        f: Box<dyn FnMut() + Send + 'static>,
    },
    /// Runs `delay` nanos after the previous run *finished* (Netty `scheduleWithFixedDelay`).
    FixedDelay {
        delay: u64,
        f: Box<dyn FnMut() + Send + 'static>,
    },
    /// Wakes a future's timer (used by the scheduler's `sleep`).
    Wake(Waker),
}

const PENDING: u8 = 0;
const DONE: u8 = 1;
const CANCELLED: u8 = 2;
/// A one-shot task that has started: too late to cancel (Netty `setUncancellable`).
const STARTED: u8 = 3;
const NOT_QUEUED: usize = usize::MAX;

/// The part of a scheduled task that its handle shares with the loop.
#[derive(Debug)]
pub(crate) struct ScheduledState {
    status: AtomicU8,
    /// Slab key while the task sits in the wheel; written by the loop thread only.
    key: AtomicUsize,
    /// The latest deadline asked for: never below the task's own; above it after a
    /// `postpone`, until the loop takes it up.
    deadline: AtomicU64,
}

/// What the loop may do with a task whose deadline has come ([`ScheduledTask::claim`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Started: run it (a one-shot task can no longer be cancelled).
    Run,
    /// Postponed since it was filed: file it again under its new deadline.
    Later,
    /// Cancelled: drop it.
    Gone,
}

impl ScheduledState {
    pub(crate) fn new(deadline: u64) -> Arc<Self> {
        Arc::new(ScheduledState {
            status: AtomicU8::new(PENDING),
            key: AtomicUsize::new(NOT_QUEUED),
            deadline: AtomicU64::new(deadline),
        })
    }

    /// PENDING -> CANCELLED. False if it already ran to completion or was cancelled.
    pub(crate) fn try_cancel(&self) -> bool {
        self.status
            .compare_exchange(PENDING, CANCELLED, AcqRel, Acquire)
            .is_ok()
    }

    /// Raises the deadline to `deadline`. True if the task is still pending, so the
    /// loop will see the new deadline before it runs the task; false if it already
    /// started, finished or was cancelled.
    ///
    /// A store-buffering handshake with [`ScheduledTask::claim`]: each side writes,
    /// then a SeqCst fence, then reads what the other wrote. So either `claim` reads the
    /// raised deadline (and files the task again), or this reads the status `claim`
    /// set (and reports false); never both stale.
    pub(crate) fn postpone(&self, deadline: u64) -> bool {
        self.deadline.fetch_max(deadline, Relaxed);
        fence(SeqCst);
        self.status.load(Acquire) == PENDING
    }

    /// PENDING or STARTED -> DONE.
    pub(crate) fn set_done(&self) {
        let _ = self
            .status
            .fetch_update(AcqRel, Acquire, |s| matches!(s, PENDING | STARTED).then_some(DONE));
    }

    pub(crate) fn is_pending(&self) -> bool {
        self.status.load(Acquire) == PENDING
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.status.load(Acquire) == CANCELLED
    }

    /// Ran to completion, or was cancelled.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.status.load(Acquire), DONE | CANCELLED)
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
    /// after the wheel last looked (then it goes back to PENDING with the new deadline).
    pub(crate) fn claim(&mut self) -> Claim {
        if self
            .state
            .status
            .compare_exchange(PENDING, STARTED, AcqRel, Acquire)
            .is_err()
        {
            return Claim::Gone;
        }
        // The other half of `postpone`'s handshake.
        fence(SeqCst);
        let wanted = self.state.deadline.load(Relaxed);
        if wanted > self.deadline {
            self.deadline = wanted;
            self.state.status.store(PENDING, Release);
            return Claim::Later;
        }
        Claim::Run
    }

    /// Moves a periodic task to its next deadline.
    pub(crate) fn reschedule(&mut self, deadline: u64) {
        self.deadline = deadline;
        self.state.deadline.fetch_max(deadline, Relaxed);
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
        let wanted = self.state.deadline.load(Relaxed);
        if wanted > self.deadline {
            self.deadline = wanted;
            return true;
        }
        false
    }
}

/// A timer registered on the loop's own thread by a future polled there (`sleep`): it
/// shares nothing with other threads, so it needs no allocation of its own, no atomic
/// operation and no lock. The future keeps its [`TimerKey`] and finds the entry again
/// to update the waker, move the deadline or cancel; an entry that is gone has fired.
pub(crate) struct LocalWake {
    deadline: u64,
    seq: u64,
    waker: Waker,
}

/// Names a timer registered on its loop's thread: the slab key, and the sequence number
/// that tells this timer from a later one given the same key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerKey {
    key: usize,
    seq: u64,
}

/// What [`EventLoopHandle::register_timer`](crate::EventLoopHandle::register_timer) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// What the wheel holds. A wheel entry is this plus two links and its place: 48
/// bytes, so the rare task (a closure, or a timer from another thread) is boxed to keep
/// the common local wake small.
pub(crate) enum Timer {
    /// A scheduled task, or a timer registered from another thread.
    Task(Box<ScheduledTask>),
    /// A timer registered on the loop's own thread.
    Wake(LocalWake),
}

impl Timer {
    /// Fires a local wake (the entry has left the wheel, which is how its future sees
    /// that it fired).
    pub(crate) fn wake_local(wake: LocalWake) {
        wake.waker.wake();
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
            // Postponed in place (`TimerWheel::postpone`).
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

    /// Inserts a task. A task cancelled before it reached the wheel is dropped here.
    pub(crate) fn push(&mut self, mut task: ScheduledTask) {
        if !task.state.is_pending() {
            return;
        }
        if task.seq == 0 {
            task.seq = self.next_seq();
        }
        let state = task.state.clone();
        let key = self.wheel.insert(Timer::Task(Box::new(task)));
        state.key.store(key, Relaxed);
    }

    /// Registers a local timer that wakes `waker` at `deadline`.
    pub(crate) fn push_wake(&mut self, deadline: u64, waker: Waker) -> TimerKey {
        let seq = self.next_seq();
        let key = self.wheel.insert(Timer::Wake(LocalWake { deadline, seq, waker }));
        TimerKey { key, seq }
    }

    fn local_wake(&mut self, timer: TimerKey) -> Option<&mut LocalWake> {
        match self.wheel.get_mut(timer.key)? {
            Timer::Wake(w) if w.seq == timer.seq => Some(w),
            _ => None,
        }
    }

    /// For a local timer still waiting: makes `waker` the one it wakes. `None` if it
    /// has fired (or was removed); otherwise the waker it replaced, if any, for the
    /// caller to drop once the queue is no longer borrowed (a drop may run any code).
    pub(crate) fn poll_wake(&mut self, timer: TimerKey, waker: &Waker) -> Option<Option<Waker>> {
        let w = self.local_wake(timer)?;
        if w.waker.will_wake(waker) {
            return Some(None);
        }
        Some(Some(std::mem::replace(&mut w.waker, waker.clone())))
    }

    /// True while a local timer waits.
    pub(crate) fn is_waiting(&mut self, timer: TimerKey) -> bool {
        self.local_wake(timer).is_some()
    }

    /// Moves a waiting local timer's deadline later. False if it has fired.
    pub(crate) fn postpone_wake(&mut self, timer: TimerKey, deadline: u64) -> bool {
        if self.local_wake(timer).is_none() {
            return false;
        }
        self.wheel
            .postpone(timer.key, |t| {
                if let Timer::Wake(w) = t {
                    w.deadline = w.deadline.max(deadline);
                }
            })
            .is_some()
    }

    /// Removes a local timer and hands it back (to be dropped once the queue is no
    /// longer borrowed). `None` if it had fired (or was removed) already.
    pub(crate) fn remove_wake(&mut self, timer: TimerKey) -> Option<Timer> {
        self.local_wake(timer)?;
        self.wheel.remove(timer.key)
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
mod tests {
    use super::*;

    fn task(deadline: u64) -> ScheduledTask {
        ScheduledTask::new(deadline, Job::Once(Box::new(|| {})), ScheduledState::new(deadline))
    }

    fn pop_task(q: &mut ScheduledQueue, now: u64) -> Option<ScheduledTask> {
        match q.pop_due(now)? {
            Timer::Task(t) => Some(*t),
            Timer::Wake(_) => panic!("a local wake where a task was expected"),
        }
    }

    /// A waker that counts its wakes.
    fn counting_waker() -> (Waker, Arc<std::sync::atomic::AtomicUsize>) {
        struct Count(Arc<std::sync::atomic::AtomicUsize>);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Relaxed);
            }
        }
        let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        (Waker::from(Arc::new(Count(n.clone()))), n)
    }

    #[test]
    fn a_wheel_entry_takes_48_bytes() {
        assert_eq!(std::mem::size_of::<Timer>(), 32);
        assert_eq!(crate::wheel::node_size::<Timer>(), 48);
    }

    #[test]
    fn local_wakes_and_tasks_leave_in_one_deadline_order() {
        let mut q = ScheduledQueue::default();
        let (w, _) = counting_waker();
        q.push(task(30));
        let a = q.push_wake(10, w.clone());
        q.push(task(20));
        let b = q.push_wake(30, w.clone());
        let mut order = vec![];
        while let Some(t) = q.pop_due(100) {
            order.push(match t {
                Timer::Task(t) => ("task", t.deadline),
                Timer::Wake(w) => ("wake", w.deadline),
            });
        }
        // Equal deadlines: first submitted first.
        assert_eq!(order, vec![("wake", 10), ("task", 20), ("task", 30), ("wake", 30)]);
        assert!(
            q.poll_wake(a, &w).is_none() && q.poll_wake(b, &w).is_none(),
            "fired timers are gone"
        );
    }

    #[test]
    fn a_local_wake_is_found_postponed_and_removed_by_its_key_only() {
        let mut q = ScheduledQueue::default();
        let (w1, fired1) = counting_waker();
        let (w2, fired2) = counting_waker();
        let a = q.push_wake(5 * crate::wheel::TICK, w1.clone());
        assert!(q.poll_wake(a, &w2).unwrap().is_some(), "waiting: takes the new waker");
        assert!(q.poll_wake(a, &w2).unwrap().is_none(), "the same waker is kept");
        assert!(q.postpone_wake(a, 50 * crate::wheel::TICK));
        // Its old deadline passes without a pop; the new one pops it.
        assert!(q.pop_due(10 * crate::wheel::TICK).is_none());
        match q.pop_due(50 * crate::wheel::TICK) {
            Some(Timer::Wake(w)) => Timer::wake_local(w),
            _ => panic!("the postponed wake is due"),
        }
        assert_eq!(
            (fired1.load(Relaxed), fired2.load(Relaxed)),
            (0, 1),
            "the latest waker is woken"
        );
        // Its key, reused by a new timer, does not reach the new one.
        let b = q.push_wake(60 * crate::wheel::TICK, w1);
        assert!(q.remove_wake(a).is_none() && !q.postpone_wake(a, u64::MAX - 1));
        assert!(q.remove_wake(b).is_some());
        assert!(q.remove_wake(b).is_none());
        assert!(q.is_empty());
    }

    #[test]
    fn pops_in_deadline_then_submission_order() {
        let mut q = ScheduledQueue::default();
        let deadlines = [50, 10, 30, 10, 70, 20, 30];
        let states: Vec<_> = deadlines
            .iter()
            .map(|&d| {
                let t = task(d);
                let s = t.state.clone();
                q.push(t);
                s
            })
            .collect();
        let mut order = vec![];
        while let Some(t) = pop_task(&mut q, u64::MAX - 1) {
            order.push(states.iter().position(|s| Arc::ptr_eq(s, &t.state)).unwrap());
        }
        assert_eq!(order, vec![1, 3, 5, 2, 6, 0, 4]);
    }

    #[test]
    fn pop_due_respects_now() {
        let mut q = ScheduledQueue::default();
        q.push(task(100));
        assert!(pop_task(&mut q, 99).is_none());
        assert_eq!(q.peek_deadline(), Some(100));
        assert!(pop_task(&mut q, 100).is_some());
        assert!(q.is_empty());
    }

    #[test]
    fn remove_any_element_keeps_the_rest_in_order() {
        // Deterministic pseudo-random deadlines and removal order.
        let mut x: u64 = 0x2545F4914F6CDD1D;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut q = ScheduledQueue::default();
        let mut states = vec![];
        for _ in 0..2_000 {
            let t = task(rnd() % 500);
            states.push(t.state.clone());
            q.push(t);
        }
        for i in (0..states.len()).step_by(3) {
            assert!(q.remove(&states[i]).is_some());
            assert!(q.remove(&states[i]).is_none(), "removing twice finds nothing");
        }
        let mut last = 0;
        let mut n = 0;
        while let Some(t) = pop_task(&mut q, u64::MAX - 1) {
            assert!(t.deadline >= last);
            last = t.deadline;
            n += 1;
        }
        assert_eq!(n, 2_000 - (0..2_000).step_by(3).count());
    }

    #[test]
    fn cancelled_before_insert_is_dropped() {
        let mut q = ScheduledQueue::default();
        let t = task(1);
        assert!(t.state.try_cancel());
        q.push(t);
        assert!(q.is_empty());
    }

    #[test]
    fn stale_key_does_not_remove_a_stranger() {
        let mut q = ScheduledQueue::default();
        let a = task(1);
        let sa = a.state.clone();
        q.push(a);
        pop_task(&mut q, 1).unwrap();
        let b = task(2);
        q.push(b); // likely reuses a's slab slot
        assert!(q.remove(&sa).is_none());
        assert_eq!(q.len(), 1);
    }
}

/// The race between another thread's `postpone` and the loop claiming the due task.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::thread;

    /// A postpone that reports success is never lost: the loop either sees the new
    /// deadline when it claims the task, or the postpone sees the claim and says so.
    #[test]
    fn loom_models_postpone_races_the_loop_claiming_the_task() {
        loom::model(|| {
            let state = ScheduledState::new(10);
            let mut task = ScheduledTask::new(10, Job::Wake(Waker::noop().clone()), state.clone());
            let other = thread::spawn(move || state.postpone(20));
            let claim = task.claim();
            let postponed = other.join().unwrap();
            match claim {
                Claim::Run => assert!(!postponed, "postponed, yet run at the old deadline"),
                Claim::Later => assert_eq!(task.deadline, 20),
                Claim::Gone => unreachable!("nothing cancelled the task"),
            }
        });
    }
}
