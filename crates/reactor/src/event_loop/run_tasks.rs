//! Step 3 of an iteration, run tasks, and step 4, run tail tasks (design §3).

use std::sync::atomic::Ordering::AcqRel;

use super::Driver;
use super::hog::report_hog;
use crate::clock;
use crate::coop;
use crate::core::Core;
use crate::fault::run_caught;
use crate::queue_item::QueueItem;
use crate::run_queue::Next;
use crate::scheduled::{Claim, Job, PeriodFrom, ScheduledTask, Timer};
use crate::share_work;
use crate::shared::{LoopItem, LoopRunnable};
use crate::sys;

/// Tasks run between two reads of the clock (Netty checks every 64).
pub(super) const CLOCK_CHECK_INTERVAL: u64 = 64;

/// Looked at after every [`CLOCK_CHECK_INTERVAL`] tasks of a pass: has the pass used
/// its time? `budget` is as [`Driver::run_all_tasks`] takes it: `None` never ends the
/// pass early, `Some(0)` (or no start reading) ends it at the first look.
#[cold]
fn task_time_is_up(start: Option<u64>, budget: Option<u64>) -> bool {
    match (budget, start) {
        (None, _) => false,
        (Some(0), _) | (Some(_), None) => true,
        (Some(budget), Some(start)) => clock::now() >= start.saturating_add(budget),
    }
}

/// A task's turn, under a fresh cooperative budget; a panic that escapes the task (it
/// catches its future's own) is logged and the loop goes on.
pub(super) fn run_runnable(core: &Core, runnable: LoopRunnable) {
    #[cfg(tokio_unstable)]
    let timed = {
        let unstable = &core.shared.unstable;
        unstable.count_poll();
        unstable.times_polls().then(clock::now)
    };
    // SAFETY: every runnable in a loop's queues is a turn of one of its own tasks, and
    // `core` is that loop's, driven by this thread.
    coop::with_budget(|| run_caught("future", || unsafe { runnable.run(core) }));
    #[cfg(tokio_unstable)]
    if let Some(start) = timed {
        core.shared
            .unstable
            .record_poll_time(clock::now().saturating_sub(start));
    }
}

impl Driver {
    /// A task's turn: its movable count, the hog check, then whether to give work to an
    /// idle peer (`share_work`).
    #[inline(always)]
    fn run_turn(&mut self, core: &Core, runnable: LoopRunnable) {
        let first_of_movable = runnable.is_movable();
        if first_of_movable {
            core.local.movable.set(core.local.movable.get().saturating_sub(1));
        }
        let ticks = match self.hog {
            None if first_of_movable && core.local.movable.get() > share_work::SMALL_BURST => {
                let start = sys::busy_ticks();
                run_runnable(core, runnable);
                sys::busy_ticks().wrapping_sub(start)
            }
            None => {
                run_runnable(core, runnable);
                0
            }
            Some(watch) => {
                let id = runnable.id();
                run_runnable(core, runnable);
                let end = sys::busy_ticks();
                let ticks = end.wrapping_sub(self.last_turn_end);
                self.last_turn_end = end;
                if ticks >= watch.floor_ticks && ticks < u64::MAX / 2 && !core.local.blocked_in_turn.replace(false) {
                    report_hog(core, watch, id, ticks);
                }
                ticks
            }
        };
        if core.local.movable.get() != 0 {
            share_work::after_turn(
                core,
                first_of_movable && (share_work::LONG_TURN_TICKS..u64::MAX / 2).contains(&ticks),
            );
        }
    }

    /// When I/O processing starts, if the I/O ratio could use how long it takes: the
    /// task budget is looked at after every 64th task, and an event wakes at most two
    /// tasks, so with fewer than 64 tasks possibly ready the time is not read.
    pub(super) fn io_timer_start(&self, core: &Core) -> Option<u64> {
        if self.io_ratio == 100 {
            return None;
        }
        let selector = core.selector.borrow();
        (!selector.events().is_empty()
            && self.ready_tasks(core) + 2 * selector.event_count() >= CLOCK_CHECK_INTERVAL as usize)
            .then(clock::now)
    }

    /// Runs tasks for as long as the I/O ratio allows after I/O that started at
    /// `io_start` and brought `io_events` events. Returns how many ran.
    pub(super) fn run_tasks(&mut self, core: &Core, io_start: Option<u64>, io_events: u64) -> u64 {
        if self.io_ratio == 100 {
            return self.run_all_tasks(core, None, None);
        }
        if let Some(io_start) = io_start
            && io_events > 0
            && self.ready_tasks(core) >= CLOCK_CHECK_INTERVAL as usize
        {
            let io_end = clock::now();
            let io_time = io_end.saturating_sub(io_start);
            return self.run_all_tasks(
                core,
                Some(io_end),
                Some(io_time * (100 - self.io_ratio) / self.io_ratio),
            );
        }
        // With fewer than 64 tasks ready the budget would be looked at only if tasks
        // woken meanwhile take the pass to its 64th task; it stops there, as an
        // iteration without I/O does.
        self.run_all_tasks(core, None, Some(0))
    }

    /// Moves the inbox's current contents into the run queue, applying wheel and tail
    /// messages on the way. Bounded by the length seen at the start, so a fast producer
    /// cannot keep the loop here.
    fn fetch_from_inbox(&mut self, core: &Core) {
        // With the inbox's counters the length is as cheap as the emptiness check.
        let n = core.shared.inbox.len();
        if n == 0 {
            return;
        }
        self.took_from_inbox = true;
        #[cfg(tokio_unstable)]
        crate::schedule::counts::queue_grows(core, n);
        for _ in 0..n {
            let Some(task) = core.shared.inbox.pop() else { break };
            core.local.enqueue(task);
        }
    }

    /// Moves due scheduled tasks into the run queue; timer wakes fire directly.
    pub(super) fn fetch_from_scheduled(core: &Core, now: u64) {
        loop {
            let due = core.local.scheduled.borrow_mut().pop_due(now);
            let mut task = match due {
                None => break,
                // The wake may run a waker's code: the wheel's borrow has ended.
                Some(Timer::Wake(wake)) => {
                    wake.fire();
                    continue;
                }
                Some(Timer::Task(task)) => *task,
            };
            match task.job {
                Job::Wake(_) => match task.claim() {
                    Claim::Run => {
                        task.state.set_done();
                        let Job::Wake(waker) = task.job else { unreachable!() };
                        waker.wake();
                    }
                    Claim::Later => core.local.push_timer(task),
                    Claim::Gone => {}
                },
                job => {
                    core.local
                        .run_queue
                        .borrow_mut()
                        .push_due(ScheduledTask { job, ..task });
                }
            }
        }
    }

    /// Netty's `runAllTasks`: `budget` is the time for tasks in nanos (`Some(0)` runs
    /// at most 64), `None` runs every task that was ready when the pass began.
    /// Returns how many tasks ran.
    /// `start` is a recent reading of the precise clock if the caller took one (it
    /// must for a budget above zero); otherwise the clock is read only if timers wait.
    pub(super) fn run_all_tasks(&mut self, core: &Core, start: Option<u64>, budget: Option<u64>) -> u64 {
        self.fetch_from_inbox(core);
        if core.local.next_deadline().is_some() {
            // Never backwards: a timer filed for a deadline after `timer_now` is still in
            // the wheel (what `poll_timer` relies on to skip looking).
            let timer_now = core
                .shared
                .clock
                .now_from(start.unwrap_or_else(clock::now))
                .max(core.local.timer_now.get());
            core.local.timer_now.set(timer_now);
            Self::fetch_from_scheduled(core, timer_now);
        }
        let mut remaining = match budget {
            None => core.local.run_queue_len(),
            Some(_) => usize::MAX,
        };
        let mut ran = 0u64;
        if self.hog.is_some() {
            self.last_turn_end = sys::busy_ticks();
        }
        while remaining > 0 && !core.shared.gate.is_closing() {
            remaining -= 1;
            let next = core.local.run_queue.borrow_mut().pop();
            match next {
                Some(Next::Runnable(runnable)) => self.run_turn(core, runnable),
                Some(other) => {
                    self.run_other(core, other);
                    if self.hog.is_some() {
                        self.last_turn_end = sys::busy_ticks();
                    }
                }
                None => break,
            }
            ran += 1;
            if ran.is_multiple_of(CLOCK_CHECK_INTERVAL) && task_time_is_up(start, budget) {
                break;
            }
        }
        self.counters.tasks_run += ran;
        ran
    }

    /// A closure or a due scheduled task: rare next to loop tasks' turns, so out of
    /// the task loop.
    #[inline(never)]
    fn run_other(&mut self, core: &Core, next: Next<LoopRunnable>) {
        match next {
            Next::Runnable(runnable) => self.run_turn(core, runnable),
            Next::Other(item) => self.run_item(core, item),
            Next::Due(task) => self.run_scheduled(core, task),
        }
    }

    fn run_item(&mut self, core: &Core, item: LoopItem) {
        match item {
            QueueItem::Runnable(runnable) => run_runnable(core, runnable),
            QueueItem::Closure(f) => {
                run_caught("closure", f);
            }
            // Messages are routed as they arrive (`Local::enqueue`), so none reaches the
            // run queue; routing one here would do the same.
            message => core.local.enqueue(message),
        }
    }

    /// Runs a due scheduled task that is not a timer wake (those fire straight from
    /// the wheel, `fetch_from_scheduled`).
    fn run_scheduled(&mut self, core: &Core, mut task: ScheduledTask) {
        if !task.state.is_pending() {
            return;
        }
        if matches!(task.job, Job::Once(_)) {
            match task.claim() {
                Claim::Run => {
                    let Job::Once(f) = task.job else { unreachable!() };
                    run_caught("scheduled task", f);
                    task.state.set_done();
                }
                Claim::Later => core.local.push_timer(task),
                Claim::Gone => {}
            }
            return;
        }
        // A periodic task is never started (it stays pending across runs), so a
        // postpone that landed since the wheel let it go is taken up here.
        if task.postponed() {
            core.local.push_timer(task);
            return;
        }
        let Job::Periodic { every, from, f } = &mut task.job else {
            unreachable!("a one-shot job is run above, a wake fires from the wheel");
        };
        let next = run_caught("periodic task", f).then(|| {
            let base = match from {
                PeriodFrom::Deadline => task.deadline,
                PeriodFrom::Finish => core.shared.clock.now(),
            };
            base.saturating_add(*every)
        });
        match next {
            Some(deadline) => {
                task.reschedule(deadline.min(clock::MAX_DEADLINE));
                core.local.push_timer(task);
            }
            // A periodic task that panicked is cancelled.
            None => {
                task.state.try_cancel();
            }
        }
    }

    /// Runs every tail task queued before this call, once.
    #[inline]
    pub(super) fn run_tail_tasks(&mut self, core: &Core) -> u64 {
        if core.local.tail_len() == 0 {
            return 0;
        }
        self.run_queued_tail_tasks(core)
    }

    #[inline(never)]
    fn run_queued_tail_tasks(&mut self, core: &Core) -> u64 {
        let tasks = std::mem::take(&mut *core.local.tail.borrow_mut());
        let mut ran = 0;
        for t in tasks {
            if !t.removed.swap(true, AcqRel) {
                run_caught("tail task", t.f);
                ran += 1;
            }
        }
        self.counters.tasks_run += ran;
        ran
    }
}
