//! The loop-thread side of a loop: queues that need no synchronization.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::task::Waker;

use crate::LoopState;
use crate::block_cache::LocalBlocks;
use crate::error::{RejectReason, RejectedExecution};
use crate::queue_item::QueueItem;
use crate::run_queue::RunQueue;
use crate::scheduled::{ScheduledQueue, ScheduledState, ScheduledTask, TimerKey};
use crate::shared::{LoopItem, LoopRunnable, Shared};
use crate::sync::lock;
use crate::sys::Selector;
use crate::tail::TailTask;
use crate::task::TaskList;

/// Everything a loop owns: the half other threads see, and the loop thread's own.
/// Reached from tasks through `context` while the loop runs.
pub(crate) struct Core {
    pub(crate) shared: Arc<Shared>,
    pub(crate) local: Local,
    /// The loop's io_uring side, when it runs on io_uring (`IoDriver::IoUring`):
    /// borrowed like the selector, for one select, one pass over its completions, or
    /// one submission. Declared before the selector: it drops first, draining its
    /// operations while the epoll instance its poll names is still open.
    pub(crate) ring: RefCell<Option<crate::completion::RingDriver>>,
    /// The loop's poller. Used by the thread that drives the loop, or by its stand-in
    /// while that thread blocks in place (`event_loop/stand_in.rs`); each borrow lasts
    /// one select or one pass over its events and runs no task code.
    pub(crate) selector: RefCell<Selector>,
    /// True while `block_on`'s own future is polled: its writes on the ring go to the
    /// kernel at once, since it may block the thread before the loop's next turn.
    pub(crate) polling_main: Cell<bool>,
}

impl Core {
    pub(crate) fn with_ring(
        shared: Arc<Shared>,
        selector: Selector,
        ring: Option<crate::completion::RingDriver>,
    ) -> Core {
        Core {
            shared,
            local: Local::new(),
            ring: RefCell::new(ring),
            selector: RefCell::new(selector),
            polling_main: Cell::new(false),
        }
    }

    /// Netty's `select`: on epoll, `epoll_wait`; on io_uring, one `io_uring_enter` that
    /// submits the turn's operations and waits (see `Selector::select_ring`). Blocks up
    /// to `timeout` (`None`: until woken; zero: not at all).
    pub(crate) fn select(&self, timeout: Option<std::time::Duration>) -> std::io::Result<()> {
        let mut ring = self.ring.borrow_mut();
        let mut selector = self.selector.borrow_mut();
        match ring.as_mut() {
            Some(driver) => {
                let driver = &mut *driver;
                let mut out = std::mem::take(&mut driver.completions);
                let r = selector.select_ring(&mut driver.ring, timeout, &mut out);
                driver.completions = out;
                r
            }
            None => selector.select(timeout),
        }
    }

    /// Hands the ring's queued entries to the kernel now (one `io_uring_enter` that does
    /// not wait), if there are any: before code that may block the loop's thread runs
    /// (`block_on`'s own future, `block_in_place`), so that the bytes a write accepted
    /// are the kernel's before that code can wait for them to arrive elsewhere.
    pub(crate) fn submit_now(&self) {
        if let Ok(mut ring) = self.ring.try_borrow_mut()
            && let Some(driver) = ring.as_mut()
            && driver.ring.has_unsubmitted()
            && let Err(e) = driver.ring.enter(Some(std::time::Duration::ZERO))
        {
            tracing::warn!(target: "netloop::reactor", error = %e, "io_uring submission failed");
        }
    }

    /// True if the last select found readiness events or completions.
    pub(crate) fn has_io(&self) -> bool {
        !self.selector.borrow().events().is_empty()
            || self.ring.borrow().as_ref().is_some_and(|r| !r.completions.is_empty())
    }

    /// Forgets the last select's events (an iteration that skipped its I/O step);
    /// completions are never forgotten: each may own memory or a connection.
    pub(crate) fn clear_events(&self) {
        self.selector.borrow_mut().clear();
    }

    /// The termination sweep: queues every live task, then drops every queued
    /// runnable (run queue, inbox, tail tasks, orphaned wakes) until a pass finds
    /// none, which drops each task's future here. Called on the loop's thread once
    /// the loop polls no task again (`Shutdown` or later) and its inbox is closed.
    ///
    /// Every destructor runs here, from the sweep, never inside a wake: a destructor
    /// that wakes another task (under a lock that task's destructor takes, as h2's
    /// streams do) only queues it for a later pass.
    pub(crate) fn close_tasks(&self) {
        self.local.clear_deferred();
        // SAFETY: on the loop's thread (this is its local half), and nothing is polled
        // while the loop terminates.
        unsafe { self.local.tasks.queue_all::<Arc<Shared>>(self) };
        loop {
            let mut dropped = 0usize;
            while let Some(task) = self.shared.inbox.pop() {
                dropped += 1;
                drop(task);
            }
            loop {
                let next = self.local.run_queue.borrow_mut().pop();
                let Some(task) = next else { break };
                dropped += 1;
                drop(task);
            }
            let tails = std::mem::take(&mut *self.local.tail.borrow_mut());
            dropped += tails.len();
            drop(tails);
            let orphans = lock(&self.shared.orphans).as_mut().map(std::mem::take);
            if let Some(orphans) = orphans {
                dropped += orphans.len();
                drop(orphans);
            }
            if dropped == 0 {
                break;
            }
        }
    }
}

/// Reads one of the loop's queues for a moment, without a borrow guard: the loop asks
/// its queues for a length or the first deadline several times per iteration, and a
/// guard's two updates of the borrow flag each time are measurable there.
///
/// # Safety
/// `read` is a pure accessor (a length, an emptiness check, the first deadline): it
/// runs no task code and touches no other cell, so nothing can borrow `cell` mutably
/// while it holds the reference.
#[inline(always)]
unsafe fn peek<T, R>(cell: &RefCell<T>, read: impl FnOnce(&T) -> R) -> R {
    // SAFETY: per the contract, no mutable borrow can start while `read` runs; one
    // already out makes this fail instead.
    match unsafe { cell.try_borrow_unguarded() } {
        Ok(value) => read(value),
        Err(_) => panic!("a loop queue was read while it was being changed"),
    }
}

/// Loop-thread-only state. Every borrow is short and never held across user code.
pub(crate) struct Local {
    /// Same-thread submissions and wakes, plus due scheduled tasks and the inbox's
    /// contents once moved over.
    pub(crate) run_queue: RefCell<RunQueue<LoopRunnable>>,
    pub(crate) scheduled: RefCell<ScheduledQueue>,
    /// The timers' clock as the loop last read it to fire timers: a deadline at or
    /// before it has passed, so a timer registered for it is due at once.
    pub(crate) timer_now: Cell<u64>,
    pub(crate) tail: RefCell<Vec<TailTask>>,
    /// Wakers to wake after the next I/O poll (see `defer`).
    deferred: RefCell<Vec<Waker>>,
    /// Turns of this loop's tasks that deferred their own wake while polled (a task
    /// that yields), for the run queue after the next I/O poll; each holds the owner's
    /// reference, so deferring one costs no atomic operation.
    deferred_turns: RefCell<Vec<LoopRunnable>>,
    /// Every task of this loop that is waiting, so termination can close them all on
    /// this thread.
    pub(crate) tasks: TaskList,
    /// Mirror of the shared state; only this thread changes it past `ShuttingDown`.
    pub(crate) state: Cell<LoopState>,
    /// Blocks of finished tasks that were spawned on this thread, for the next such
    /// spawn (see `block_cache`).
    pub(crate) blocks: LocalBlocks,
    /// About how many movable runnables (first turns of `Send` tasks that may still
    /// move, see `share_work`) the run queue holds: counted as they are queued, and as
    /// they are run or given away. Zero means none for sure, which is all the hot path
    /// asks.
    pub(crate) movable: Cell<usize>,
    /// The running turn entered `block_in_place`: its length is the closure's, during
    /// which a stand-in ran the loop, so the hog check passes over it (and clears this).
    pub(crate) blocked_in_turn: Cell<bool>,
}

impl Local {
    pub(crate) fn new() -> Self {
        Local {
            run_queue: RefCell::new(RunQueue::with_capacity(256)),
            scheduled: RefCell::new(ScheduledQueue::default()),
            timer_now: Cell::new(0),
            tail: RefCell::new(Vec::new()),
            deferred: RefCell::new(Vec::new()),
            deferred_turns: RefCell::new(Vec::new()),
            tasks: TaskList::default(),
            state: Cell::new(LoopState::NotStarted),
            blocks: LocalBlocks::default(),
            movable: Cell::new(0),
            blocked_in_turn: Cell::new(false),
        }
    }

    /// A scheduled task submitted on the loop's own thread: straight into the wheel,
    /// with no box (timers such as `sleep` come this way).
    pub(crate) fn push_scheduled(&self, task: ScheduledTask) -> Result<(), RejectedExecution> {
        if self.state.get() >= LoopState::Shutdown {
            return Err(RejectedExecution::new(RejectReason::Shutdown, None));
        }
        self.push_timer(task);
        Ok(())
    }

    /// Files a scheduled task in the wheel; one cancelled on its way is dropped after
    /// the wheel's borrow ends (its drop may run code that touches the wheel again).
    pub(crate) fn push_timer(&self, task: ScheduledTask) {
        let rejected = self.scheduled.borrow_mut().push(task);
        drop(rejected);
    }

    /// Removes the task owning `state` from the wheel. What leaves the wheel is dropped
    /// outside its borrow, since a drop may run code that touches the wheel again. False
    /// if the wheel is borrowed now (the caller goes through the inbox instead).
    pub(crate) fn remove_scheduled(&self, state: &Arc<ScheduledState>) -> bool {
        let Ok(mut wheel) = self.scheduled.try_borrow_mut() else {
            return false;
        };
        let removed = wheel.remove(state);
        drop(wheel);
        drop(removed);
        true
    }

    /// [`remove_scheduled`](Self::remove_scheduled) for a timer registered on the loop's
    /// thread.
    pub(crate) fn remove_timer(&self, timer: &TimerKey) -> bool {
        let Ok(mut wheel) = self.scheduled.try_borrow_mut() else {
            return false;
        };
        let removed = wheel.remove_wake(timer);
        drop(wheel);
        drop(removed);
        true
    }

    /// A new submission made on the loop's own thread.
    pub(crate) fn push_new(&self, item: LoopItem) -> Result<(), RejectedExecution> {
        if self.state.get() >= LoopState::Shutdown {
            return Err(RejectedExecution::new(RejectReason::Shutdown, item.into_closure()));
        }
        self.enqueue(item);
        Ok(())
    }

    /// Puts a task where its kind belongs: a schedule into the wheel, a cancel applied to
    /// the wheel now, a tail task into the tail queue, anything else at the back of the
    /// run queue.
    pub(crate) fn enqueue(&self, item: LoopItem) {
        match item {
            QueueItem::Schedule(t) => self.push_timer(*t),
            // Applied as the inbox is drained, when nothing borrows the wheel.
            QueueItem::CancelScheduled(state) => {
                self.remove_scheduled(&state);
            }
            QueueItem::CancelTimer(timer) => {
                self.remove_timer(&timer);
            }
            QueueItem::Tail(t) => self.tail.borrow_mut().push(*t),
            QueueItem::Runnable(runnable) if runnable.is_movable() => self.push_movable(runnable),
            other => self.run_queue.borrow_mut().push(other),
        }
    }

    /// A task woken on the loop's own thread: back of the run queue (a task that
    /// yields lets everything already queued run first).
    ///
    /// Also once the loop has terminated: the runnable is then closed by the sweep of
    /// `terminate`, never here. A wake runs inside the waker's caller, which may hold a
    /// lock that the woken task's destructor takes (h2 wakes its connection task with
    /// its streams' lock held), so no task's destructor runs inside `wake()`.
    #[inline]
    pub(crate) fn push_wake(&self, runnable: LoopRunnable) {
        self.run_queue.borrow_mut().push_runnable(runnable);
    }

    /// The first turn of a task that may still move to another loop: back of the run
    /// queue, counted.
    pub(crate) fn push_movable(&self, runnable: LoopRunnable) {
        self.movable.set(self.movable.get() + 1);
        self.push_wake(runnable);
    }

    /// Tasks waiting on this loop.
    pub(crate) fn live_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// True if a task of this loop is bound to the loop's thread: a `!Send` one
    /// (`spawn_local`), waiting or queued. Everything else a loop holds (closures,
    /// timers, tail tasks, wakers) is `Send`. O(tasks): asked only when the loop would
    /// change threads.
    pub(crate) fn holds_thread_bound_tasks(&self) -> bool {
        // SAFETY: this is the loop's local half, so this is its owner's thread or the
        // loop is not being driven (the caller has the `EventLoop` itself).
        let listed_send = unsafe { self.tasks.all_send() };
        // A remote turn is left out: its task, while alive, is listed or has a local
        // turn, and one whose task has finished holds only a reference.
        let bound = |r: &LoopRunnable| !r.is_remote() && !r.is_send();
        !listed_send || self.run_queue.borrow().runnables().any(bound) || self.deferred_turns.borrow().iter().any(bound)
    }

    /// Entries in the run queue.
    #[inline]
    pub(crate) fn run_queue_len(&self) -> usize {
        // SAFETY: a pure accessor.
        unsafe { peek(&self.run_queue, RunQueue::len) }
    }

    /// Wakers and turns waiting for the next I/O poll.
    #[inline]
    pub(crate) fn deferred_len(&self) -> usize {
        // SAFETY: pure accessors.
        unsafe { peek(&self.deferred, Vec::len) + peek(&self.deferred_turns, Vec::len) }
    }

    /// A turn of a task that deferred its own wake: run after the next I/O poll.
    #[inline]
    pub(crate) fn defer_runnable(&self, runnable: LoopRunnable) {
        self.deferred_turns.borrow_mut().push(runnable);
    }

    /// Keeps `waker` for [`wake_deferred`](Self::wake_deferred); a task that yields
    /// twice in a row is kept once. `core` is this half's loop's: a task of it that
    /// defers itself while polled (`yield_now`) is marked instead, and its turn is
    /// deferred when the poll ends, with no clone of its waker.
    pub(crate) fn defer(&self, core: &Core, waker: &Waker) {
        if crate::task::defer_in_place::<Arc<Shared>>(core, waker) {
            return;
        }
        let mut deferred = self.deferred.borrow_mut();
        if !deferred.last().is_some_and(|last| last.will_wake(waker)) {
            deferred.push(waker.clone());
        }
    }

    /// Queues the deferred turns and wakes every deferred waker; called once the loop
    /// has processed its I/O.
    /// Invariant: no `deferred` borrow is held while a waker runs (a wake may defer).
    pub(crate) fn wake_deferred(&self) {
        if self.deferred_len() == 0 {
            return;
        }
        self.queue_deferred_turns();
        let mut woken = std::mem::take(&mut *self.deferred.borrow_mut());
        for waker in woken.drain(..) {
            waker.wake();
        }
        // Keep the allocation for the next iteration unless a wake deferred again.
        let mut deferred = self.deferred.borrow_mut();
        if deferred.is_empty() {
            *deferred = woken;
        }
    }

    /// Moves the deferred turns to the back of the run queue.
    fn queue_deferred_turns(&self) {
        let turns = &mut *self.deferred_turns.borrow_mut();
        if !turns.is_empty() {
            let mut run_queue = self.run_queue.borrow_mut();
            turns.drain(..).for_each(|turn| run_queue.push_runnable(turn));
        }
    }

    /// Drops the deferred wakers unwoken, and queues the deferred turns for the
    /// termination sweep (which closes their tasks): the loop is terminating.
    pub(crate) fn clear_deferred(&self) {
        self.queue_deferred_turns();
        let dropped = std::mem::take(&mut *self.deferred.borrow_mut());
        drop(dropped);
    }

    /// Tail tasks waiting for the end of the iteration.
    #[inline]
    pub(crate) fn tail_len(&self) -> usize {
        // SAFETY: a pure accessor.
        unsafe { peek(&self.tail, Vec::len) }
    }

    /// Timers in the wheel (cancelled ones not yet removed included).
    #[inline]
    pub(crate) fn scheduled_len(&self) -> usize {
        // SAFETY: a pure accessor.
        unsafe { peek(&self.scheduled, ScheduledQueue::len) }
    }

    /// When the loop must next look at its timers: a lower bound of the next scheduled
    /// task's deadline (exact once that deadline's slot has come), if any.
    #[inline]
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        // SAFETY: a pure accessor.
        unsafe { peek(&self.scheduled, ScheduledQueue::peek_deadline) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::scheduled::{Job, ScheduledState, ScheduledTask};

    #[test]
    fn unguarded_reads_see_each_queue_and_leave_it_borrowable() {
        let local = Local::new();
        assert_eq!(
            (local.run_queue_len(), local.tail_len(), local.scheduled_len()),
            (0, 0, 0)
        );
        assert_eq!(local.next_deadline(), None);
        local.enqueue(QueueItem::Closure(Box::new(|| {})));
        local.enqueue(QueueItem::Schedule(Box::new(ScheduledTask::new(
            7,
            Job::Once(Box::new(|| {})),
            ScheduledState::new(7),
        ))));
        assert_eq!(local.run_queue_len(), 1);
        assert_eq!(local.scheduled_len(), 1);
        // The wheel reports a lower bound until the deadline's slot comes.
        assert!(local.next_deadline().is_some_and(|d| d <= 7));
        assert_eq!(local.live_tasks(), 0);
        // No guard was left behind: a mutable borrow still works.
        assert!(local.run_queue.borrow_mut().pop().is_some());
        assert!(local.scheduled.try_borrow_mut().is_ok());
    }

    #[test]
    #[should_panic(expected = "read while it was being changed")]
    fn an_unguarded_read_during_a_change_panics() {
        let local = Local::new();
        let _changing = local.run_queue.borrow_mut();
        local.run_queue_len();
    }
}
