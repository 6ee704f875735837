//! `EventLoopHandle`'s timers, and [`ScheduledHandle`].
//!
//! Two kinds, both entries of the loop's timing wheel:
//! - scheduled tasks (`schedule*`, `schedule_wake`), from any thread: each is a
//!   `ScheduledTask` whose state word its [`ScheduledHandle`] shares, filed at once on
//!   the loop's own thread and sent through the inbox from any other;
//! - local timers (`register_timer*`), on the loop's own thread only: a waker in the
//!   wheel and a [`TimerKey`] in the caller, shared with no other thread, so that
//!   registering, polling and cancelling on that thread take no lock and allocate
//!   nothing.
//!
//! Unless its owner cancels or fires it, a local timer's entry leaves the wheel only
//! when the loop's timer clock passes its deadline or when the loop shuts down; which
//! of the two happened is told by its deadline against the timer clock the loop last
//! fired timers with (`gone`).

use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::LoopState;
use crate::clock::{self, Clock};
use crate::context;
use crate::core::Core;
use crate::error::{RejectedExecution, ScheduleError};
use crate::handle::EventLoopHandle;
use crate::queue_item::QueueItem;
use crate::scheduled::{
    Job, PeriodFrom, ScheduledState, ScheduledTask, Timer, TimerKey, TimerRegistration, TimerState, waker_tag,
};
use crate::shared::Shared;

impl EventLoopHandle {
    /// Now on the timer clock of the loop this thread drives, if that clock has been
    /// paused or shifted (tests); `None` on a plain thread or an untouched clock.
    pub fn current_timer_now() -> Option<Instant> {
        context::with_core(|core| {
            core.filter(|c| !c.shared.clock.is_real())
                .map(|c| c.shared.clock.now_instant())
        })
    }

    /// The clock this loop's timers run on (pausable, for tests).
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    /// Runs `f` once after `delay`. Huge delays clamp to the far future instead of
    /// overflowing; a zero delay runs at the next iteration.
    pub fn schedule<F>(&self, delay: Duration, f: F) -> Result<ScheduledHandle, RejectedExecution>
    where
        F: FnOnce() + Send + 'static,
    {
        self.submit_scheduled(clock::after(self.shared.clock.now(), delay), Job::Once(Box::new(f)))
    }

    /// Runs `f` once at `deadline` (at once if it has passed).
    pub fn schedule_at<F>(&self, deadline: Instant, f: F) -> Result<ScheduledHandle, RejectedExecution>
    where
        F: FnOnce() + Send + 'static,
    {
        self.submit_scheduled(clock::from_instant(deadline), Job::Once(Box::new(f)))
    }

    /// Runs `f` first after `initial_delay`, then every `period` measured from the
    /// previous scheduled time: a run that starts late is followed by catch-up runs.
    /// Cancelled if `f` panics. A zero period is an error.
    pub fn schedule_at_fixed_rate(
        &self,
        initial_delay: Duration,
        period: Duration,
        f: impl FnMut() + Send + 'static,
    ) -> Result<ScheduledHandle, ScheduleError> {
        self.schedule_periodic(initial_delay, (period, PeriodFrom::Deadline), Box::new(f))
    }

    /// Runs `f` first after `initial_delay`, then `delay` after each run finishes.
    /// Cancelled if `f` panics. A zero delay is an error.
    pub fn schedule_with_fixed_delay(
        &self,
        initial_delay: Duration,
        delay: Duration,
        f: impl FnMut() + Send + 'static,
    ) -> Result<ScheduledHandle, ScheduleError> {
        self.schedule_periodic(initial_delay, (delay, PeriodFrom::Finish), Box::new(f))
    }

    fn schedule_periodic(
        &self,
        initial_delay: Duration,
        (every, from): (Duration, PeriodFrom),
        f: Box<dyn FnMut() + Send + 'static>,
    ) -> Result<ScheduledHandle, ScheduleError> {
        if every.is_zero() {
            return Err(ScheduleError::ZeroPeriod);
        }
        let job = Job::Periodic {
            every: clock::nanos(every),
            from,
            f,
        };
        Ok(self.submit_scheduled(clock::after(self.shared.clock.now(), initial_delay), job)?)
    }

    /// Wakes `waker` at `deadline`: the primitive under timers such as `sleep`.
    /// Cheaper than a closure: the loop wakes it straight from the wheel. On the
    /// loop's own thread, [`register_timer`](Self::register_timer) is cheaper still.
    pub fn schedule_wake(&self, deadline: Instant, waker: Waker) -> Result<ScheduledHandle, RejectedExecution> {
        self.submit_scheduled(clock::from_instant(deadline), Job::Wake(waker))
    }

    /// Registers a timer that wakes `waker` at `deadline`, if called on the loop's own
    /// thread. The timer lives only in the loop's timing wheel and is shared with no
    /// other thread: registering, polling ([`poll_timer`](Self::poll_timer)) and
    /// cancelling it allocate nothing and take no lock, and the clone of `waker` is the
    /// only other cost. This is how `sleep` registers when it is polled on its own loop;
    /// elsewhere it uses [`schedule_wake`](Self::schedule_wake).
    ///
    /// While the loop shuts down gracefully, its timers are dropped at each iteration
    /// unfired (Netty cancels scheduled tasks so); once it has shut down, nothing is
    /// registered.
    pub fn register_timer(&self, deadline: Instant, waker: &Waker) -> TimerRegistration {
        let deadline = clock::from_instant(deadline);
        context::with_own_core(&self.shared, |core| register_on(core, deadline, waker, false))
            .unwrap_or(TimerRegistration::NotOnLoop)
    }

    /// [`register_timer`](Self::register_timer) for a deadline the caller did not
    /// compute from a clock reading of its own (tokio's `sleep_until`), so it may have
    /// passed already: it is [`Due`](TimerRegistration::Due) if the loop's timer clock
    /// has passed it, or, while no timer waits (the timer clock then lags), if the
    /// clock read now has. A deadline computed as "now plus a duration" needs none of
    /// this: filed after it passed, it fires at the loop's next turn.
    pub fn register_timer_until(&self, deadline: Instant, waker: &Waker) -> TimerRegistration {
        let deadline = clock::from_instant(deadline);
        context::with_own_core(&self.shared, |core| register_on(core, deadline, waker, true))
            .unwrap_or(TimerRegistration::NotOnLoop)
    }

    /// Polls a timer from [`register_timer`](Self::register_timer): whether it still
    /// waits (with `waker` now the one it will wake), has fired, or was dropped unfired
    /// by a shutdown. `None` off the loop's thread (cancel it and register another way).
    ///
    /// Polled again by the same task before its deadline, as a reset idle timeout is,
    /// it reads only the key and the loop's state: the key records the deadline and the
    /// task the entry wakes, and an entry leaves the wheel only when the loop's timer
    /// clock passes its deadline, or when the loop shuts down. Otherwise the entry is
    /// looked up, and the key updated.
    #[inline]
    pub fn poll_timer(&self, timer: &mut TimerKey, waker: &Waker) -> Option<TimerState> {
        context::with_own_core(&self.shared, |core| {
            let tag = waker_tag(waker);
            if tag != 0
                && tag == timer.waker
                && timer.deadline > core.local.timer_now.get()
                && core.local.state.get() < LoopState::ShuttingDown
            {
                return TimerState::Waiting;
            }
            let wakes = core.local.scheduled.borrow_mut().wakes(timer, waker);
            let state = match wakes {
                Some(true) => TimerState::Waiting,
                None => gone(core, timer.deadline),
                Some(false) => swap_waker(core, timer, waker),
            };
            if state == TimerState::Waiting {
                timer.waker = tag;
            }
            state
        })
    }

    /// What became of a timer from [`register_timer`](Self::register_timer), without
    /// polling it; `None` off the loop's thread.
    pub fn timer_state(&self, timer: &TimerKey) -> Option<TimerState> {
        context::with_own_core(&self.shared, |core| {
            let waiting = core.local.scheduled.borrow().is_waiting(timer);
            if waiting {
                TimerState::Waiting
            } else {
                gone(core, timer.deadline)
            }
        })
    }

    /// Moves a waiting timer from [`register_timer`](Self::register_timer) to
    /// `deadline`, earlier or later, on the loop's thread: the entry keeps the waker it
    /// holds, so the task is woken at the new deadline (and not at the old one) without
    /// polling the timer again, as tokio's `Sleep::reset` does. `Some(Waiting)` once
    /// moved; the timer's state if it has fired or was dropped (nothing moves then);
    /// `None` off the loop's thread (cancel it and register another way).
    pub fn reset_timer(&self, timer: &mut TimerKey, deadline: Instant) -> Option<TimerState> {
        let deadline = clock::from_instant(deadline);
        context::with_own_core(&self.shared, |core| {
            let moved = core.local.scheduled.borrow_mut().reschedule_wake(timer, deadline);
            if moved {
                TimerState::Waiting
            } else {
                gone(core, timer.deadline)
            }
        })
    }

    /// Fires a waiting timer from [`register_timer`](Self::register_timer) now, on the
    /// loop's thread: removes it and wakes the waker it holds (a sleep reset to a
    /// deadline that has passed). False if it had fired or was dropped already; `None`
    /// off the loop's thread.
    pub fn fire_timer(&self, timer: &TimerKey) -> Option<bool> {
        context::with_own_core(&self.shared, |core| {
            let removed = core.local.scheduled.borrow_mut().remove_wake(timer);
            // Woken (and dropped) outside the wheel's borrow: a wake may run any code.
            match removed {
                Some(Timer::Wake(wake)) => {
                    wake.fire();
                    true
                }
                // `remove_wake` hands back local wakes only.
                Some(Timer::Task(_)) | None => false,
            }
        })
    }

    /// Cancels a timer from [`register_timer`](Self::register_timer), from any thread:
    /// at once on the loop's thread, otherwise at the loop's next iteration (without
    /// waking it). Nothing happens if it has fired.
    pub fn cancel_timer(&self, timer: TimerKey) {
        let done = context::with_own_core(&self.shared, |core| core.local.remove_timer(&timer));
        if done != Some(true) {
            // Fails only once the inbox has closed: the loop has ended, and its wheel
            // with it.
            let _ = self.shared.inbox.push(QueueItem::CancelTimer(Box::new(timer)));
        }
    }

    fn submit_scheduled(&self, deadline: u64, job: Job) -> Result<ScheduledHandle, RejectedExecution> {
        let state = ScheduledState::new(deadline);
        let task = ScheduledTask::new(deadline, job, state.clone());
        self.shared.submit_scheduled(task, deadline)?;
        Ok(ScheduledHandle {
            state,
            shared: self.shared.clone(),
        })
    }

    /// True if a timer of this loop completes when polled after the loop shut down,
    /// false if it fails ([`EventLoopBuilder::complete_timers_at_shutdown`](crate::EventLoopBuilder::complete_timers_at_shutdown);
    /// tokio_unstable only).
    #[cfg(tokio_unstable)]
    pub fn timers_complete_at_shutdown(&self) -> bool {
        self.shared.unstable.timers_complete_at_shutdown
    }
}

/// [`EventLoopHandle::register_timer`] on the loop's thread. A function of its own,
/// so that the closure around it stays small enough for the thread-local look-up to be
/// inlined.
fn register_on(core: &Core, deadline: u64, waker: &Waker, may_have_passed: bool) -> TimerRegistration {
    if core.local.state.get() >= LoopState::Shutdown {
        return TimerRegistration::Shutdown;
    }
    // The timer clock of the loop's last turn, or a paused clock's own time, which a
    // test may have moved since that turn. `timer_now` moves only while timers wait:
    // with none waiting it may be far behind, so a deadline that may have passed reads
    // the clock then (tokio's `elapsed` moves at every park of its driver).
    if deadline <= core.local.timer_now.get()
        || ((!core.shared.clock.is_real() || (may_have_passed && core.local.next_deadline().is_none()))
            && deadline <= core.shared.clock.now())
    {
        return TimerRegistration::Due;
    }
    // Cloned before the wheel is borrowed: a clone may run any code.
    let waker = waker.clone();
    let key = core.local.scheduled.borrow_mut().push_wake(deadline, waker);
    TimerRegistration::Filed(key)
}

/// Makes a waiting local timer wake `waker`. The clone of `waker` and the drop of the
/// waker it replaces happen outside the wheel's borrow: either may run any code.
#[inline(never)]
fn swap_waker(core: &Core, timer: &TimerKey, waker: &Waker) -> TimerState {
    let new = waker.clone();
    let swapped = core.local.scheduled.borrow_mut().set_waker(timer, new);
    match swapped {
        Ok(old) => {
            drop(old);
            TimerState::Waiting
        }
        Err(unused) => {
            drop(unused);
            gone(core, timer.deadline)
        }
    }
}

/// A local timer whose entry has left the wheel fired if its deadline is at or before
/// the timer clock the loop last fired timers with; otherwise a shutdown dropped it.
#[inline(never)]
fn gone(core: &Core, filed_for: u64) -> TimerState {
    if filed_for <= core.local.timer_now.get() {
        TimerState::Fired
    } else {
        TimerState::Dropped
    }
}

/// Cancels a scheduled task and reports what became of it (Netty's `ScheduledFuture`).
#[derive(Clone)]
pub struct ScheduledHandle {
    state: Arc<ScheduledState>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ScheduledHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduledHandle")
            .field("done", &self.is_done())
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl ScheduledHandle {
    /// Cancels the task if it has not started (for periodic tasks: stops further
    /// runs). True if this call cancelled it; false if it already ran, is running (a
    /// one-shot task cannot be cancelled once started), or was cancelled before. On the
    /// loop's thread the task leaves the wheel at once (O(1)); from another thread it is marked cancelled at once and removed
    /// at the loop's next iteration, without waking it.
    pub fn cancel(&self) -> bool {
        if !self.state.try_cancel() {
            return false;
        }
        let removed = context::with_own_core(&self.shared, |core| core.local.remove_scheduled(&self.state));
        if removed != Some(true) {
            let _ = self.shared.inbox.push(QueueItem::CancelScheduled(self.state.clone()));
        }
        true
    }

    /// Moves the task's deadline later, to `deadline`, without touching the loop: one
    /// atomic operation, from any thread, with nothing allocated or queued. The loop
    /// takes the new deadline up when the old one comes and files the task again; for
    /// a periodic task it moves the next run that has not started. This is what makes an
    /// idle timeout pushed back on every request cheap from any thread.
    ///
    /// Returns false if the task already started, finished or was cancelled (schedule
    /// a new one), and does nothing for a deadline earlier than the current one (cancel
    /// and schedule anew to move a deadline earlier).
    pub fn postpone(&self, deadline: Instant) -> bool {
        self.state.postpone(clock::from_instant(deadline))
    }

    /// True if cancelled (also: a periodic task that panicked).
    pub fn is_cancelled(&self) -> bool {
        self.state.is_cancelled()
    }

    /// True if it ran (one-shot) or was cancelled.
    pub fn is_done(&self) -> bool {
        self.state.is_done()
    }
}
