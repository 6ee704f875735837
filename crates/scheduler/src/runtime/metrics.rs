//! `RuntimeMetrics`: tokio's stable runtime metrics, read from the loops' own, and
//! `Handle::metrics`, which makes them (above the handle).

use std::time::Duration;

use netloop_reactor::LoopMetrics;

use super::handle::Handle;

/// A view of a runtime's metrics (tokio's `runtime::RuntimeMetrics`). Each call reads
/// the loops' published counters; a worker is one event loop, by index.
///
/// For everything netloop counts per loop (tasks run, I/O events, wakeups, ...), see
/// [`EventLoopHandle::metrics`](netloop_reactor::EventLoopHandle::metrics) through
/// [`Handle::event_loops`].
///
/// ```
/// let rt = netloop_scheduler::runtime::Builder::new_multi_thread().worker_threads(2).build()?;
/// let metrics = rt.metrics();
/// assert_eq!(metrics.num_workers(), 2);
/// assert_eq!(metrics.num_alive_tasks(), 0);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RuntimeMetrics {
    handle: Handle,
}

impl Handle {
    /// The runtime's metrics (tokio's stable set; netloop's per-loop metrics are on
    /// [`event_loops`](Self::event_loops)).
    pub fn metrics(&self) -> RuntimeMetrics {
        RuntimeMetrics { handle: self.clone() }
    }
}

impl RuntimeMetrics {
    fn worker(&self, worker: usize) -> LoopMetrics {
        let loops = self.handle.event_loops();
        match loops.get(worker) {
            Some(l) => l.metrics(),
            None => panic!(
                "worker index {worker} out of bounds: the runtime has {} workers",
                loops.len()
            ),
        }
    }

    /// The number of worker threads: event loops (1 for a current-thread runtime).
    pub fn num_workers(&self) -> usize {
        self.handle.event_loops().len()
    }

    /// Tasks spawned on the runtime's loops that have not finished (blocking tasks
    /// not included).
    pub fn num_alive_tasks(&self) -> usize {
        self.handle.event_loops().iter().map(|l| l.metrics().live_tasks).sum()
    }

    /// Tasks submitted from other threads that no loop has taken yet: the sum of the
    /// loops' inboxes, netloop's counterpart of tokio's global queue.
    pub fn global_queue_depth(&self) -> usize {
        self.handle.event_loops().iter().map(|l| l.metrics().inbox_tasks).sum()
    }

    /// How long worker `worker` has been busy (not blocked in `select`). Panics if
    /// `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_total_busy_duration(&self, worker: usize) -> Duration {
        self.worker(worker).busy
    }

    /// How many times worker `worker` blocked with nothing to do.
    pub fn worker_park_count(&self, worker: usize) -> u64 {
        self.worker(worker).parks
    }

    /// How many times worker `worker` blocked or woke from blocking.
    pub fn worker_park_unpark_count(&self, worker: usize) -> u64 {
        let m = self.worker(worker);
        m.parks + m.unparks
    }
}

/// tokio's unstable metrics (`--cfg tokio_unstable`). A worker is one loop; where
/// netloop has no event of the kind tokio counts, the figure is the closest honest one,
/// and its documentation says what it counts on netloop.
#[cfg(tokio_unstable)]
impl RuntimeMetrics {
    fn unstable(&self, worker: usize) -> &netloop_reactor::UnstableMetrics {
        let loops = self.handle.event_loops();
        match loops.get(worker) {
            Some(l) => l.unstable_metrics(),
            None => panic!(
                "worker index {worker} out of bounds: the runtime has {} workers",
                loops.len()
            ),
        }
    }

    fn sum(&self, f: impl Fn(&netloop_reactor::UnstableMetrics) -> u64) -> u64 {
        self.handle.event_loops().iter().map(|l| f(l.unstable_metrics())).sum()
    }

    /// Threads of the blocking pool, busy or idle.
    pub fn num_blocking_threads(&self) -> usize {
        self.handle.inner.blocking.stats().0
    }

    /// Threads of the blocking pool waiting for a task.
    pub fn num_idle_blocking_threads(&self) -> usize {
        self.handle.inner.blocking.stats().1
    }

    /// Blocking tasks waiting for a thread of the pool.
    pub fn blocking_queue_depth(&self) -> usize {
        self.handle.inner.blocking.stats().2
    }

    /// The old name of [`num_alive_tasks`](Self::num_alive_tasks).
    #[deprecated = "Renamed to num_alive_tasks"]
    pub fn active_tasks_count(&self) -> usize {
        self.num_alive_tasks()
    }

    /// The old name of [`global_queue_depth`](Self::global_queue_depth).
    #[deprecated = "Renamed to global_queue_depth"]
    pub fn injection_queue_depth(&self) -> usize {
        self.global_queue_depth()
    }

    /// Tasks spawned onto the runtime since it was built: its loops' tasks (`spawn`,
    /// `Handle::spawn`, `spawn_local` on a loop or a `LocalRuntime`, `JoinSet`,
    /// `spawn_pinned`), not blocking tasks nor a `LocalSet`'s, as tokio counts them.
    pub fn spawned_tasks_count(&self) -> u64 {
        self.handle
            .inner
            .unstable
            .tasks
            .spawned
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Tasks scheduled from outside the runtime: spawned or woken by a thread that
    /// drives none of its loops (a plain thread, a blocking thread, a multi-thread
    /// runtime's `block_on` caller), each through a loop's inbox.
    pub fn remote_schedule_count(&self) -> u64 {
        self.sum(netloop_reactor::UnstableMetrics::remote_schedules)
    }

    /// Times a task's cooperative budget ran out (counted on the loops; a
    /// multi-thread runtime's `block_on` future, which runs on no loop, is not
    /// counted).
    pub fn budget_forced_yield_count(&self) -> u64 {
        self.sum(netloop_reactor::UnstableMetrics::forced_yields)
    }

    /// Times loop `worker` woke from blocking in `select` and ran nothing: no task,
    /// no closure (a timer that only woke a `block_on` future, a wake that raced ahead,
    /// a shutdown request).
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_noop_count(&self, worker: usize) -> u64 {
        self.unstable(worker).noops()
    }

    /// Tasks that loop `worker` took over from another loop of the runtime. netloop's
    /// loops steal nothing: a busy loop hands tasks that no loop has polled yet to an
    /// idle one (and, with `Builder::disable_lifo_slot`, a task's spawns start on
    /// another loop); each such hand-off is netloop's steal, counted by the loop that
    /// receives it. Always 0 on a current-thread runtime, as on tokio.
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_steal_count(&self, worker: usize) -> u64 {
        self.unstable(worker).steals()
    }

    /// Hand-offs that loop `worker` received (see
    /// [`worker_steal_count`](Self::worker_steal_count)); each brings one or more
    /// tasks.
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_steal_operations(&self, worker: usize) -> u64 {
        self.unstable(worker).steal_operations()
    }

    /// Polls of tasks on loop `worker` (on its thread, or its stand-in's while its
    /// thread blocks in place). `block_on`'s own future is not a task and is not
    /// counted, as on tokio.
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_poll_count(&self, worker: usize) -> u64 {
        self.unstable(worker).polls()
    }

    /// Tasks scheduled from within the runtime by loop `worker`'s thread: spawned or
    /// woken onto its own run queue, or sent to another loop of the runtime (netloop
    /// has no shared queue; a task woken there goes to its own loop's inbox).
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_local_schedule_count(&self, worker: usize) -> u64 {
        self.unstable(worker).local_schedules()
    }

    /// Times loop `worker`'s run queue grew past 256 tasks. tokio counts the times a
    /// worker's local queue, of 256 tasks, overflowed (half of it then moves to the
    /// shared queue); a netloop loop's run queue grows as needed and never overflows, so
    /// this counts where tokio's would have: each time the queue goes from at most 256
    /// tasks to more.
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_overflow_count(&self, worker: usize) -> u64 {
        self.unstable(worker).overflows()
    }

    /// Tasks in loop `worker`'s run queue: read live on the loop's own thread, else
    /// as the loop published it at the end of its last iteration.
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_local_queue_depth(&self, worker: usize) -> usize {
        match self.handle.event_loops().get(worker) {
            Some(l) => l.local_queue_depth(),
            None => panic!(
                "worker index {worker} out of bounds: the runtime has {} workers",
                self.num_workers()
            ),
        }
    }

    /// The thread that drives loop `worker`: its own thread on a multi-thread runtime
    /// (or the stand-in that serves the loop while that thread blocks in place), the
    /// last `block_on` caller on a current-thread runtime. `None` before it first ran.
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_thread_id(&self, worker: usize) -> Option<std::thread::ThreadId> {
        self.unstable(worker).driver_thread()
    }

    /// A moving average of loop `worker`'s task poll times (each new poll weighs 1/16).
    /// Kept on a multi-thread runtime only, as tokio's; zero on a current-thread one.
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_mean_poll_time(&self, worker: usize) -> Duration {
        self.unstable(worker).mean_poll_time()
    }

    /// Whether the loops keep a poll-time histogram
    /// ([`Builder::enable_metrics_poll_time_histogram`](super::Builder::enable_metrics_poll_time_histogram)).
    pub fn poll_time_histogram_enabled(&self) -> bool {
        self.handle.inner.unstable.histogram.is_some()
    }

    /// The old name of [`poll_time_histogram_enabled`](Self::poll_time_histogram_enabled).
    #[deprecated(note = "Renamed to `poll_time_histogram_enabled`")]
    #[doc(hidden)]
    pub fn poll_count_histogram_enabled(&self) -> bool {
        self.poll_time_histogram_enabled()
    }

    /// The buckets of the poll-time histogram; 0 if it is not kept.
    pub fn poll_time_histogram_num_buckets(&self) -> usize {
        self.handle.inner.unstable.histogram.map_or(0, |h| h.num_buckets())
    }

    /// The old name of [`poll_time_histogram_num_buckets`](Self::poll_time_histogram_num_buckets).
    #[deprecated(note = "renamed to `poll_time_histogram_num_buckets`.")]
    #[doc(hidden)]
    pub fn poll_count_histogram_num_buckets(&self) -> usize {
        self.poll_time_histogram_num_buckets()
    }

    /// The poll times bucket `bucket` holds; the last bucket ends at `u64::MAX`
    /// nanoseconds. An empty range if the histogram is not kept.
    ///
    /// # Panics
    ///
    /// If `bucket` is not below the number of buckets.
    #[track_caller]
    pub fn poll_time_histogram_bucket_range(&self, bucket: usize) -> std::ops::Range<Duration> {
        self.handle.inner.unstable.histogram.map_or_else(Default::default, |h| {
            assert!(
                bucket < h.num_buckets(),
                "bucket {bucket} out of bounds: the histogram has {} buckets",
                h.num_buckets()
            );
            let range = h.range(bucket);
            Duration::from_nanos(range.start)..Duration::from_nanos(range.end)
        })
    }

    /// The old name of [`poll_time_histogram_bucket_range`](Self::poll_time_histogram_bucket_range).
    #[deprecated(note = "renamed to `poll_time_histogram_bucket_range`")]
    #[doc(hidden)]
    #[track_caller]
    pub fn poll_count_histogram_bucket_range(&self, bucket: usize) -> std::ops::Range<Duration> {
        self.poll_time_histogram_bucket_range(bucket)
    }

    /// Polls of loop `worker`'s tasks that took a time in bucket `bucket`'s range; 0 if
    /// the histogram is not kept.
    ///
    /// # Panics
    ///
    /// If `worker` is not below [`num_workers`](Self::num_workers).
    #[track_caller]
    pub fn poll_time_histogram_bucket_count(&self, worker: usize, bucket: usize) -> u64 {
        self.unstable(worker).poll_time_histogram_bucket(bucket)
    }

    /// The old name of [`poll_time_histogram_bucket_count`](Self::poll_time_histogram_bucket_count).
    #[deprecated(note = "use `poll_time_histogram_bucket_count` instead")]
    #[doc(hidden)]
    #[track_caller]
    pub fn poll_count_histogram_bucket_count(&self, worker: usize, bucket: usize) -> u64 {
        self.poll_time_histogram_bucket_count(worker, bucket)
    }

    /// Descriptors (sockets, pipes, `AsyncFd`s) registered with the runtime's loops
    /// since it was built.
    pub fn io_driver_fd_registered_count(&self) -> u64 {
        self.sum(netloop_reactor::UnstableMetrics::fds_registered)
    }

    /// Registrations removed from the runtime's loops since it was built.
    pub fn io_driver_fd_deregistered_count(&self) -> u64 {
        self.sum(netloop_reactor::UnstableMetrics::fds_deregistered)
    }

    /// Readiness events the runtime's loops processed (each loop polls its own
    /// descriptors; tokio has one driver for all).
    pub fn io_driver_ready_count(&self) -> u64 {
        self.sum(netloop_reactor::UnstableMetrics::ready_events)
    }
}
