//! `EventLoopHandle`: how any thread submits work to a loop.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::LoopState;
use crate::clock;
use crate::config::{ShutdownParams, check_shutdown};
use crate::context;
use crate::error::{
    AwaitTerminationError, ConfigError, RejectReason, RejectedExecution, ScheduleError, SpawnLocalError,
};
use crate::metrics::LoopMetrics;
use crate::peers::{MAX_PEERS, Peers};
use crate::queue_item::QueueItem;
use crate::scheduled::{
    Job, PeriodFrom, ScheduledState, ScheduledTask, Timer, TimerKey, TimerRegistration, TimerState, waker_tag,
};
use crate::shared::{Shared, Wake};
use crate::spawn;
use crate::sync::lock;
use crate::tail::{TailTask, TailTaskHandle};
use crate::task::Task as AsyncTask;
use crate::termination::TerminationFuture;

/// A cheap, cloneable, `Send + Sync` handle to one event loop.
///
/// Submissions made on the loop's own thread go to its local run queue without any
/// atomic operation or wake; submissions from other threads go through the inbox and
/// wake the loop only if it is blocked (design §4).
#[derive(Clone)]
#[repr(transparent)]
pub struct EventLoopHandle {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for EventLoopHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLoopHandle")
            .field("id", &self.shared.id)
            .field("state", &self.state())
            .finish()
    }
}

impl PartialEq for EventLoopHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}
impl Eq for EventLoopHandle {}

impl EventLoopHandle {
    /// The loop this thread is driving, if any.
    pub fn current() -> Option<EventLoopHandle> {
        Self::with_current(|current| current.cloned())
    }

    /// Calls `f` with the loop this thread is driving, borrowed: what
    /// [`current`](Self::current) gives, without the reference-count traffic of a
    /// clone. Spawning paths that run once per task use it.
    pub fn with_current<R>(f: impl FnOnce(Option<&EventLoopHandle>) -> R) -> R {
        context::with_core(|core| f(core.map(|c| EventLoopHandle::from_shared(&c.shared))))
    }

    /// The loop's shared half seen as a handle, without a clone.
    fn from_shared(shared: &Arc<Shared>) -> &EventLoopHandle {
        // SAFETY: `EventLoopHandle` is `repr(transparent)` over its one field, an
        // `Arc<Shared>`, so the two have the same layout and the reference keeps its
        // lifetime.
        unsafe { &*std::ptr::from_ref(shared).cast::<EventLoopHandle>() }
    }

    /// A process-unique id for this loop.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// Where the loop is in its life.
    pub fn state(&self) -> LoopState {
        self.shared.state()
    }

    /// True if the calling thread is this loop's thread (Netty `inEventLoop`).
    pub fn in_event_loop(&self) -> bool {
        context::is_own_thread(&self.shared)
    }

    /// True once shutdown was requested.
    pub fn is_shutting_down(&self) -> bool {
        self.state() >= LoopState::ShuttingDown
    }

    /// True once the loop stopped accepting tasks.
    pub fn is_shutdown(&self) -> bool {
        self.state() >= LoopState::Shutdown
    }

    /// True once the loop has fully terminated.
    pub fn is_terminated(&self) -> bool {
        self.state() == LoopState::Terminated
    }

    /// The driver this loop's I/O runs on: [`IoDriver::IoUring`](crate::IoDriver) only
    /// if it was asked for and the kernel allowed it.
    pub fn io_driver(&self) -> crate::IoDriver {
        if self.shared.on_ring.load(std::sync::atomic::Ordering::Relaxed) {
            crate::IoDriver::IoUring
        } else {
            crate::IoDriver::Epoll
        }
    }

    /// Runs `f` on the loop, waking it if it is blocked.
    ///
    /// Rejected (with `f` handed back) after shutdown or when a bounded inbox is full.
    pub fn execute<F>(&self, f: F) -> Result<(), RejectedExecution>
    where
        F: FnOnce() + Send + 'static,
    {
        self.shared.submit(QueueItem::Closure(Box::new(f)), Wake::Now)
    }

    /// Like [`execute`](Self::execute) but never wakes the loop: `f` runs at the loop's
    /// next iteration, whenever something else wakes it. For work that is not urgent.
    pub fn lazy_execute<F>(&self, f: F) -> Result<(), RejectedExecution>
    where
        F: FnOnce() + Send + 'static,
    {
        self.shared.submit(QueueItem::Closure(Box::new(f)), Wake::Lazy)
    }

    /// Runs `f` once at the end of the loop's current (or next) iteration, after the
    /// I/O and tasks of that iteration (Netty `executeAfterEventLoopIteration`).
    pub fn execute_after_iteration<F>(&self, f: F) -> Result<TailTaskHandle, RejectedExecution>
    where
        F: FnOnce() + Send + 'static,
    {
        let removed = Arc::new(AtomicBool::new(false));
        let task = TailTask {
            f: Box::new(f),
            removed: removed.clone(),
        };
        self.shared.submit(QueueItem::Tail(Box::new(task)), Wake::Now)?;
        Ok(TailTaskHandle { removed })
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

    /// Spawns a `Send` future on this loop, from any thread. It stays on this loop for
    /// its whole life. Dropping the returned task cancels it; call `detach` to let it
    /// run on its own. Awaiting it re-raises a panic of the future.
    pub fn spawn<F>(&self, future: F) -> Result<AsyncTask<F::Output>, RejectedExecution>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn::spawn(&self.shared, future, 0)
    }

    /// [`spawn`](Self::spawn), with an id that the task's handles report
    /// ([`Task::id`](crate::Task::id)): a runtime built on loops numbers its tasks so.
    pub fn spawn_with_id<F>(&self, id: u64, future: F) -> Result<AsyncTask<F::Output>, RejectedExecution>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn::spawn(&self.shared, future, id)
    }

    /// [`spawn_with_id`](Self::spawn_with_id), except that a task spawned on this loop's
    /// own thread may start on another loop of its group ([`join_peers`](Self::join_peers))
    /// when this one is busy and that one idle. Wherever it is first polled, it stays
    /// for life. `tokio::spawn`'s placement, for a runtime built on loops.
    pub fn spawn_movable_with_id<F>(&self, id: u64, future: F) -> Result<AsyncTask<F::Output>, RejectedExecution>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn::spawn_movable(&self.shared, future, id)
    }

    /// Records the loop's index in its executor's group, once (later calls are
    /// ignored): what [`group_index`](Self::group_index) answers, for tokio's task
    /// spans (`--cfg tokio_unstable` and the `tracing` feature).
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    pub fn set_group_index(&self, index: usize) {
        let _ = self.shared.group_index.set(index);
    }

    /// The loop's index in its executor's group, if the executor recorded it.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    pub fn group_index(&self) -> Option<usize> {
        self.shared.group_index.get().copied()
    }

    /// Introduces the loops of one group to each other, once, at build: from then on a
    /// busy loop hands tasks that have not started yet to an idle one (see
    /// [`spawn_movable_with_id`](Self::spawn_movable_with_id)). The first 64 loops take
    /// part. A loop already introduced stays in its first group.
    pub fn join_peers(loops: &[EventLoopHandle]) {
        let members: Box<[_]> = loops.iter().map(|l| Arc::downgrade(&l.shared)).collect();
        let peers = Arc::new(Peers::new(members));
        for (index, l) in loops.iter().enumerate().take(MAX_PEERS) {
            let _ = l.shared.peers.set((peers.clone(), index));
        }
    }

    /// True while this loop's thread is inside `block_in_place`
    /// ([`block_in_place_scope`](crate::block_in_place_scope)): it runs nothing until
    /// the closure returns, so new work is better placed elsewhere.
    pub fn is_blocked_in_place(&self) -> bool {
        self.shared.peers.get().is_some_and(|(peers, me)| peers.is_blocked(*me))
    }

    /// True while every loop of this loop's group blocks in place: new work placed on
    /// any of them waits for a closure to return.
    pub fn group_blocked_in_place(&self) -> bool {
        self.shared.peers.get().is_some_and(|(peers, _)| peers.all_blocked())
    }

    /// Spawns a `!Send` future on this loop. Only callable on the loop's own thread.
    pub fn spawn_local<F>(&self, future: F) -> Result<AsyncTask<F::Output>, SpawnLocalError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        spawn::spawn_local(&self.shared, future, 0)
    }

    /// [`spawn_local`](Self::spawn_local), with an id (see
    /// [`spawn_with_id`](Self::spawn_with_id)).
    pub fn spawn_local_with_id<F>(&self, id: u64, future: F) -> Result<AsyncTask<F::Output>, SpawnLocalError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        spawn::spawn_local(&self.shared, future, id)
    }

    /// Spawns a `!Send` future on this loop from any thread, in one hop: `make` (which
    /// is `Send`) is sent to the loop and builds the future there, at its first poll.
    pub fn spawn_pinned<M, Fut>(&self, make: M) -> Result<AsyncTask<Fut::Output>, RejectedExecution>
    where
        M: FnOnce() -> Fut + Send + 'static,
        Fut: Future + 'static,
        Fut::Output: Send + 'static,
    {
        spawn::spawn_pinned(&self.shared, make, 0)
    }

    /// [`spawn_pinned`](Self::spawn_pinned), with an id (see
    /// [`spawn_with_id`](Self::spawn_with_id)).
    pub fn spawn_pinned_with_id<M, Fut>(&self, id: u64, make: M) -> Result<AsyncTask<Fut::Output>, RejectedExecution>
    where
        M: FnOnce() -> Fut + Send + 'static,
        Fut: Future + 'static,
        Fut::Output: Send + 'static,
    {
        spawn::spawn_pinned(&self.shared, make, id)
    }

    /// Runs `hook` on the loop while it shuts down (before it terminates).
    pub fn add_shutdown_hook<F>(&self, hook: F) -> Result<(), RejectedExecution>
    where
        F: FnOnce() + Send + 'static,
    {
        if self.is_shutdown() {
            return Err(RejectedExecution::new(RejectReason::Shutdown, Some(Box::new(hook))));
        }
        lock(&self.shared.shutdown_hooks).push(Box::new(hook));
        Ok(())
    }

    /// Starts a graceful shutdown with the builder's quiet period and timeout
    /// (defaults 2 s and 15 s). See [`shutdown_gracefully_with`](Self::shutdown_gracefully_with).
    pub fn shutdown_gracefully(&self) -> TerminationFuture {
        let p = self.shared.default_shutdown;
        self.request_shutdown(p)
    }

    /// Starts a graceful shutdown (Netty `shutdownGracefully`).
    ///
    /// Tasks submitted while shutting down are still accepted and run. The loop stops
    /// once no task has run for `quiet_period`, or once `timeout` has passed, whichever
    /// comes first; then it rejects submissions, runs what is left, closes its
    /// registrations and terminates. Only the first request's values count.
    pub fn shutdown_gracefully_with(
        &self,
        quiet_period: Duration,
        timeout: Duration,
    ) -> Result<TerminationFuture, ConfigError> {
        check_shutdown(quiet_period, timeout)?;
        Ok(self.request_shutdown(ShutdownParams { quiet_period, timeout }))
    }

    /// Stops the loop as tokio stops a runtime: the task being polled finishes its
    /// poll, and from then on no task of the loop is polled again. The loop runs its
    /// shutdown hooks, drops every task's future on its own thread (their sockets still
    /// work in those destructors, and a task they wake is not polled), then closes its
    /// registrations and terminates. Submissions are rejected from then on.
    ///
    /// Overrides a graceful shutdown in progress. Netty's `shutdownNow`; the runtime's
    /// drop, `shutdown_timeout` and `shutdown_background` use it. To stop several loops
    /// so that none polls a task another one's destructors woke, use
    /// [`shutdown_all_now`](Self::shutdown_all_now).
    pub fn shutdown_now(&self) -> TerminationFuture {
        Self::shutdown_all_now([self]);
        self.termination()
    }

    /// [`shutdown_now`](Self::shutdown_now) for every loop of `loops`, so that none
    /// polls a task once any has begun dropping its tasks: each loop is told to poll
    /// no more before the first is woken to shut down.
    pub fn shutdown_all_now<'a, I>(loops: I)
    where
        I: IntoIterator<Item = &'a EventLoopHandle>,
        I::IntoIter: Clone,
    {
        let loops = loops.into_iter();
        for l in loops.clone() {
            l.shared.gate.close();
        }
        for l in loops {
            drop(l.request_shutdown(ShutdownParams {
                quiet_period: Duration::ZERO,
                timeout: Duration::ZERO,
            }));
        }
    }

    fn request_shutdown(&self, params: ShutdownParams) -> TerminationFuture {
        {
            let mut p = lock(&self.shared.shutdown);
            if p.is_none() && !self.is_shutting_down() {
                *p = Some(params);
            }
        }
        let prev = self.shared.advance_state(LoopState::ShuttingDown);
        if prev < LoopState::ShuttingDown && !self.in_event_loop() {
            self.shared.force_wake();
            if prev == LoopState::NotStarted {
                self.shared.request_start();
            }
        }
        self.termination()
    }

    /// A future that resolves when the loop has terminated.
    pub fn termination(&self) -> TerminationFuture {
        TerminationFuture {
            termination: self.shared.termination.clone(),
            loop_id: self.shared.id,
        }
    }

    /// Blocks the calling thread until the loop terminates or `timeout` passes.
    /// Calling it on the loop's own thread is an error, not a deadlock.
    pub fn await_termination(&self, timeout: Duration) -> Result<(), AwaitTerminationError> {
        if self.in_event_loop() {
            return Err(AwaitTerminationError::OnLoopThread);
        }
        if self.shared.termination.wait(timeout) {
            Ok(())
        } else {
            Err(AwaitTerminationError::Timeout)
        }
    }

    /// Installs the function a lazily started loop calls (once, from the submitting
    /// thread) when the first task reaches it before anyone drives it. The scheduler
    /// uses it to spawn the loop's thread on demand. False if one was installed already.
    pub fn set_lazy_starter<F>(&self, start: F) -> bool
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.shared.set_starter(Box::new(start))
    }

    /// Now on the timer clock of the loop this thread drives, if that clock has been
    /// paused or shifted (tests); `None` on a plain thread or an untouched clock.
    pub fn current_timer_now() -> Option<Instant> {
        context::with_core(|core| {
            core.filter(|c| !c.shared.clock.is_real())
                .map(|c| c.shared.clock.now_instant())
        })
    }

    /// The clock this loop's timers run on (pausable, for tests).
    pub fn clock(&self) -> &crate::Clock {
        &self.shared.clock
    }

    /// The loop's counters for tokio's unstable worker metrics (tokio_unstable only).
    #[cfg(tokio_unstable)]
    pub fn unstable_metrics(&self) -> &crate::UnstableMetrics {
        &self.shared.unstable
    }

    /// True if a timer of this loop completes when polled after the loop shut down,
    /// false if it fails ([`EventLoopBuilder::complete_timers_at_shutdown`](crate::EventLoopBuilder::complete_timers_at_shutdown);
    /// tokio_unstable only).
    #[cfg(tokio_unstable)]
    pub fn timers_complete_at_shutdown(&self) -> bool {
        self.shared.unstable.timers_complete_at_shutdown
    }

    /// Counts a task that another loop of the group handed to this one before any
    /// loop polled it (a steal, in tokio's metrics). For a scheduler that places such
    /// a task itself (tokio_unstable only).
    #[cfg(tokio_unstable)]
    pub fn count_handoff(&self) {
        self.shared.unstable.count_steal(1);
    }

    /// Tasks in the loop's run queue now if this thread drives the loop, else as the
    /// loop last published them (once per iteration). tokio_unstable only.
    #[cfg(tokio_unstable)]
    pub fn local_queue_depth(&self) -> usize {
        crate::context::with_own_core(&self.shared, |core| core.local.run_queue_len())
            .unwrap_or_else(|| self.shared.published.local_pending.load(Relaxed) as usize)
    }

    /// A snapshot of the loop's metrics (design §8).
    pub fn metrics(&self) -> LoopMetrics {
        let s = &self.shared;
        let p = &s.published;
        let started_at = p.started_at.load(Relaxed);
        let busy = Duration::from_nanos(crate::sys::busy_ticks_to_nanos(p.busy_ticks.load(Relaxed)));
        let elapsed = if started_at == 0 {
            0
        } else {
            clock::now().saturating_sub(started_at)
        };
        LoopMetrics {
            state: s.state(),
            pending_tasks: s.inbox.len() + p.local_pending.load(Relaxed) as usize,
            tasks_run: p.tasks_run.load(Relaxed),
            io_events: p.io_events.load(Relaxed),
            io_wakes_remote: p.io_wakes_remote.load(Relaxed),
            iterations: p.iterations.load(Relaxed),
            wakeups_sent: s.producers.wakeups_sent.load(Relaxed),
            wakeups_suppressed: s.producers.wakeups_suppressed.load(Relaxed),
            wakeups_received: p.wakeups_received.load(Relaxed),
            premature_wakeups: p.premature_wakeups.load(Relaxed),
            parks: p.parks.load(Relaxed),
            unparks: p.unparks.load(Relaxed),
            inbox_tasks: s.inbox.len(),
            idle_spins: p.idle_spins.load(Relaxed),
            idle_spins_found_work: p.idle_spins_found_work.load(Relaxed),
            hog_polls: p.hog_polls.load(Relaxed),
            scheduled_tasks: p.scheduled_tasks.load(Relaxed) as usize,
            registrations: s.io.len(),
            live_tasks: p.live_tasks.load(Relaxed) as usize,
            busy,
            utilization: if elapsed == 0 {
                0.0
            } else {
                (busy.as_nanos() as f64 / elapsed as f64).min(1.0)
            },
        }
    }
}

/// [`EventLoopHandle::register_timer`] on the loop's thread. A function of its own,
/// so that the closure around it stays small enough for the thread-local look-up to be
/// inlined.
fn register_on(core: &crate::core::Core, deadline: u64, waker: &Waker, may_have_passed: bool) -> TimerRegistration {
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
fn swap_waker(core: &crate::core::Core, timer: &TimerKey, waker: &Waker) -> TimerState {
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
fn gone(core: &crate::core::Core, filed_for: u64) -> TimerState {
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
