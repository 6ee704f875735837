//! `EventLoopHandle`: how any thread submits work to a loop, spawns on it, shuts it
//! down and reads its metrics. Its timers, and `ScheduledHandle`, are in [`timers`].

pub(crate) mod timers;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::LoopState;
use crate::clock;
use crate::config::{ShutdownParams, check_shutdown};
use crate::context;
use crate::error::{AwaitTerminationError, ConfigError, RejectReason, RejectedExecution, SpawnLocalError};
use crate::metrics::LoopMetrics;
use crate::peers::{MAX_PEERS, Peers};
use crate::queue_item::QueueItem;
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

    /// The loop's counters for tokio's unstable worker metrics (tokio_unstable only).
    #[cfg(tokio_unstable)]
    pub fn unstable_metrics(&self) -> &crate::UnstableMetrics {
        &self.shared.unstable
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
