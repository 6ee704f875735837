//! Step 5 of an iteration, confirm shutdown, and the end of a loop: the final drain,
//! closing registrations and tasks, termination (design §5).

use std::task::Waker;

use super::Driver;
use crate::LoopState;
use crate::clock;
use crate::core::Core;
use crate::fault::run_caught;
use crate::scheduled::Timer;
use crate::sync::lock;

/// Passes of the final drain before leftovers are dropped.
const FINAL_DRAIN_PASSES: usize = 16;

impl Driver {
    /// The loop is shutting down: note when tasks last ran (for the quiet period),
    /// then confirm. True when the loop may exit.
    pub(super) fn shutting_down(&mut self, core: &Core, ran: u64) -> bool {
        if ran > 0 {
            // Only the quiet period needs this, so it is only read while shutting down.
            self.last_execution = clock::now();
        }
        if core.local.state.get() < LoopState::ShuttingDown {
            core.local.state.set(LoopState::ShuttingDown);
        }
        self.confirm_shutdown(core, ran > 0)
    }

    fn run_shutdown_hooks(&mut self, core: &Core) -> bool {
        let hooks = std::mem::take(&mut *lock(&core.shared.shutdown_hooks));
        let ran = !hooks.is_empty();
        for hook in hooks {
            run_caught("shutdown hook", hook);
        }
        if ran {
            self.last_execution = clock::now();
        }
        ran
    }

    fn cancel_scheduled_tasks(&mut self, core: &Core) {
        // `EventLoopHandle::poll_timer` skips looking at an entry while the loop has not
        // begun shutting down: only then may entries leave the wheel unfired.
        debug_assert!(core.local.state.get() >= LoopState::ShuttingDown);
        let timers = core.local.scheduled.borrow_mut().drain();
        for t in &timers {
            if let Timer::Task(task) = t {
                task.state.try_cancel();
            }
        }
        drop(timers);
    }

    /// Netty's `confirmShutdown` (design §5). True when the loop may exit.
    pub(super) fn confirm_shutdown(&mut self, core: &Core, ran_tasks: bool) -> bool {
        if core.shared.gate.is_closing() {
            return true;
        }
        self.cancel_scheduled_tasks(core);
        let params = lock(&core.shared.shutdown).unwrap_or(core.shared.default_shutdown);
        let now = clock::now();
        let start = match self.graceful_start {
            Some(s) => s,
            None => {
                // The quiet period is measured from the request at the earliest.
                self.last_execution = self.last_execution.max(now);
                *self.graceful_start.get_or_insert(now)
            }
        };
        let hooks_ran = self.run_shutdown_hooks(core);
        let timeout = clock::nanos(params.timeout);
        let quiet = clock::nanos(params.quiet_period);
        if now.saturating_sub(start) >= timeout {
            return true;
        }
        if (ran_tasks || hooks_ran) && quiet == 0 {
            return true;
        }
        let quiet_end = self.last_execution.saturating_add(quiet);
        if now < quiet_end {
            self.shutdown_wait_until = Some(quiet_end.min(start.saturating_add(timeout)));
            return false;
        }
        true
    }

    /// After the run loop exits: Shutdown, final drain, close registrations, drop what
    /// is left, Terminated (design §5). After [`EventLoopHandle::shutdown_now`], no
    /// drain: see [`finish_now`](Self::finish_now).
    ///
    /// [`EventLoopHandle::shutdown_now`]: crate::EventLoopHandle::shutdown_now
    pub(super) fn finish(&mut self, core: &Core) {
        if core.shared.gate.is_closing() {
            return self.finish_now(core);
        }
        core.shared.advance_state(LoopState::Shutdown);
        core.local.state.set(LoopState::Shutdown);
        core.shared.inbox.close();
        self.final_drain(core);
        self.close_registrations(core);
        self.final_drain(core);
        self.terminate(core, true);
    }

    /// tokio's end of a loop: no task is polled again. Shutdown hooks run, then every
    /// task's future is dropped here while its sockets still work (a task a destructor
    /// wakes is only queued, and dropped in turn), then the registrations close (whoever
    /// still waits on one, off this loop, hears of it) and the loop terminates.
    pub(super) fn finish_now(&mut self, core: &Core) {
        core.shared.advance_state(LoopState::Shutdown);
        self.run_shutdown_hooks(core);
        self.drop_everything(core);
    }

    /// The end of [`finish_now`](Self::finish_now), and of a loop dropped: every task
    /// dropped unpolled (while its sockets work), then the registrations closed, then
    /// Terminated. The state is `Shutdown` or later: nothing is accepted meanwhile.
    pub(super) fn drop_everything(&mut self, core: &Core) {
        debug_assert!(core.shared.state() >= LoopState::Shutdown);
        core.local.state.set(core.local.state.get().max(LoopState::Shutdown));
        core.shared.inbox.close();
        self.cancel_scheduled_tasks(core);
        core.close_tasks();
        self.close_registrations(core);
        self.terminate(core, false);
    }

    /// Deregisters and closes every registration, and wakes whoever waits on one: every
    /// operation on a closed registration fails with the loop-shut-down error.
    pub(super) fn close_registrations(&mut self, core: &Core) {
        let mut wakers = std::mem::take(&mut self.wake_buf);
        // Completion operations first: each is cancelled and its last completion
        // awaited, so that no buffer or descriptor stays with the kernel and every
        // waiting task hears that its socket's loop is gone.
        if let Some(driver) = core.ring.borrow_mut().as_mut() {
            let left = driver.drain(std::time::Duration::from_secs(5), &mut wakers);
            if left > 0 {
                tracing::error!(target: "netloop::reactor", loop_id = core.shared.id, left,
                    "io_uring operations did not complete within 5 s of the loop's shutdown");
            }
        }
        for io in core.shared.io.close() {
            io.shutdown(&mut wakers);
        }
        wakers.drain(..).for_each(Waker::wake);
        self.wake_buf = wakers;
    }

    fn final_drain(&mut self, core: &Core) {
        for _ in 0..FINAL_DRAIN_PASSES {
            self.adopt_orphans(core);
            self.cancel_scheduled_tasks(core);
            let ran = self.run_all_tasks(core, None, None) + self.run_tail_tasks(core);
            let hooks = self.run_shutdown_hooks(core);
            if ran == 0 && !hooks && core.local.run_queue.borrow().is_empty() && core.shared.inbox.is_empty() {
                break;
            }
        }
    }

    fn adopt_orphans(&mut self, core: &Core) {
        let orphans = match lock(&core.shared.orphans).as_mut() {
            Some(list) => std::mem::take(list),
            None => return,
        };
        let mut q = core.local.run_queue.borrow_mut();
        orphans.into_iter().for_each(|r| q.push_runnable(r));
    }

    /// Closes every live task and drops every queued one on this thread, then marks the
    /// loop Terminated. `graceful`: warn about leftovers (they were not run).
    pub(super) fn terminate(&mut self, core: &Core, graceful: bool) {
        core.shared.inbox.close();
        core.local.state.set(LoopState::Terminated);
        self.cancel_scheduled_tasks(core);
        let leftovers = core.local.run_queue.borrow().len()
            + core.local.deferred_len()
            + core.shared.inbox.len()
            + core.local.tail.borrow().len()
            + lock(&core.shared.orphans).as_ref().map_or(0, Vec::len);
        core.close_tasks();
        *lock(&core.shared.orphans) = None;
        if graceful && leftovers > 0 {
            tracing::warn!(target: "netloop::reactor", loop_id = core.shared.id, tasks = leftovers,
                "event loop terminated with a non-empty task queue; those tasks were dropped");
        }
        self.publish_metrics(core);
        core.shared.set_state(LoopState::Terminated);
        core.shared.termination.complete();
    }
}
