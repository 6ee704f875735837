//! tokio's unstable runtime API (`--cfg tokio_unstable`): the builder's task hooks,
//! `unhandled_panic`, `rng_seed`, `disable_lifo_slot`, the poll-time histogram and the
//! settings that are tokio's experiments (`enable_alt_timer`, ...), and `Handle::dump`
//! with the `taskdump` feature. Above the builder and the handle, which name it not.

use std::sync::Arc;
use std::time::Duration;

use super::builder::Builder;
use super::histogram::{HistogramConfiguration, HistogramScale};
use super::hooks::TaskMeta;
use super::rng::RngSeed;
use super::unstable::UnhandledPanic;
use crate::runtime::flavor::RuntimeFlavor;

impl Builder {
    /// Runs `f` each time a task is spawned onto the runtime, on the spawning thread,
    /// before the task can run (tokio's unstable `on_task_spawn`). It sees the tasks of
    /// `spawn`, `Handle::spawn`, `spawn_local` on a loop or a `LocalRuntime`,
    /// `spawn_pinned`, `JoinSet` and `task::Builder`, not blocking tasks nor those of a
    /// `LocalSet`, as tokio. One hook per runtime: a second call replaces the first. A
    /// panic in `f` propagates to the spawner, as tokio's does.
    pub fn on_task_spawn<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.unstable.hooks.spawn = Some(Arc::new(f));
        self
    }

    /// Runs `f` when a task of the runtime ends, on the thread that drops its future
    /// (its loop's, or a blocking thread for a blocking task): once it finished,
    /// panicked, was aborted, or was dropped by the runtime's shutdown (tokio's
    /// unstable `on_task_terminate`). It runs after the future is dropped and before
    /// the task's `JoinHandle` sees the end. A panic in `f` is caught and logged.
    pub fn on_task_terminate<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.unstable.hooks.terminate = Some(Arc::new(f));
        self
    }

    /// Runs `f` on the loop's thread just before each poll of a task of the runtime
    /// (tokio's unstable `on_before_task_poll`; not for `block_on`'s own future, which
    /// is no task). A panic in `f` is caught and logged.
    pub fn on_before_task_poll<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.unstable.hooks.before_poll = Some(Arc::new(f));
        self
    }

    /// Runs `f` on the loop's thread just after each poll of a task of the runtime
    /// (tokio's unstable `on_after_task_poll`). A panic in `f` is caught and logged.
    pub fn on_after_task_poll<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.unstable.hooks.after_poll = Some(Arc::new(f));
        self
    }

    /// What the runtime does when a spawned task panics (tokio's unstable
    /// `unhandled_panic`): see [`UnhandledPanic`].
    ///
    /// # Panics
    ///
    /// `UnhandledPanic::ShutdownRuntime` on a multi-thread builder, as tokio's: only a
    /// current-thread runtime supports it.
    #[track_caller]
    pub fn unhandled_panic(&mut self, behavior: UnhandledPanic) -> &mut Self {
        if self.flavor != RuntimeFlavor::CurrentThread && matches!(behavior, UnhandledPanic::ShutdownRuntime) {
            panic!("UnhandledPanic::ShutdownRuntime is only supported in current thread runtime");
        }
        self.unstable.unhandled_panic = behavior;
        self
    }

    /// tokio's unstable `disable_lifo_slot`: on tokio a task's newest spawn is not run
    /// next on its worker, so that another worker may steal it. On netloop, with it set,
    /// a task's spawns start on another loop of the group (the next one after the
    /// spawner's): a hand-off that the receiving loop counts as a steal
    /// (`RuntimeMetrics::worker_steal_count`), so a task that blocks its loop does not
    /// hold up the tasks it spawned. Spawns from outside a loop are placed as without it.
    pub fn disable_lifo_slot(&mut self) -> &mut Self {
        self.unstable.disable_lifo_slot = true;
        self
    }

    /// Seeds the runtime's random numbers (tokio's unstable `rng_seed`): which branch
    /// of `select!` is polled first. Two runtimes built with the same seed and driven
    /// the same way draw the same numbers.
    pub fn rng_seed(&mut self, seed: RngSeed) -> &mut Self {
        self.unstable.rng_seed = Some(seed);
        self
    }

    /// Keeps a histogram of the loops' task poll times (tokio's unstable
    /// `enable_metrics_poll_time_histogram`), read through
    /// `RuntimeMetrics::poll_time_histogram_*`. Each poll then costs two reads of the
    /// clock. Default buckets: ten of 100 µs.
    pub fn enable_metrics_poll_time_histogram(&mut self) -> &mut Self {
        self.unstable.histogram.enabled = true;
        self
    }

    /// The old name of
    /// [`enable_metrics_poll_time_histogram`](Self::enable_metrics_poll_time_histogram).
    #[deprecated(
        note = "`poll_count_histogram` related methods have been renamed `poll_time_histogram` to better reflect their functionality."
    )]
    #[doc(hidden)]
    pub fn enable_metrics_poll_count_histogram(&mut self) -> &mut Self {
        self.enable_metrics_poll_time_histogram()
    }

    /// The buckets of the poll-time histogram (tokio's unstable
    /// `metrics_poll_time_histogram_configuration`); kept only once
    /// [`enable_metrics_poll_time_histogram`](Self::enable_metrics_poll_time_histogram)
    /// is called.
    pub fn metrics_poll_time_histogram_configuration(&mut self, configuration: HistogramConfiguration) -> &mut Self {
        self.unstable.histogram.shape = Some(configuration.shape);
        self
    }

    /// The deprecated histogram scale: linear, or log (the first bucket as wide as the
    /// resolution rounded up to a power of two, each next one twice as wide). Any of
    /// the deprecated setters wins over
    /// [`metrics_poll_time_histogram_configuration`](Self::metrics_poll_time_histogram_configuration),
    /// as in tokio.
    #[deprecated(note = "use `metrics_poll_time_histogram_configuration`")]
    pub fn metrics_poll_count_histogram_scale(&mut self, histogram_scale: HistogramScale) -> &mut Self {
        self.unstable.histogram.legacy_mut().0 = histogram_scale;
        self
    }

    /// The deprecated histogram resolution: the first bucket's width (default 100 µs).
    ///
    /// # Panics
    ///
    /// If `resolution` is zero or above one second, as tokio's.
    #[deprecated(note = "use `metrics_poll_time_histogram_configuration`")]
    #[track_caller]
    pub fn metrics_poll_count_histogram_resolution(&mut self, resolution: Duration) -> &mut Self {
        assert!(
            resolution > Duration::ZERO,
            "the histogram resolution must be above zero"
        );
        assert!(
            resolution <= Duration::from_secs(1),
            "the histogram resolution must be at most one second"
        );
        self.unstable.histogram.legacy_mut().1 = resolution.as_nanos() as u64;
        self
    }

    /// The deprecated histogram bucket count (default 10).
    #[deprecated(note = "use `metrics_poll_time_histogram_configuration`")]
    pub fn metrics_poll_count_histogram_buckets(&mut self, buckets: usize) -> &mut Self {
        self.unstable.histogram.legacy_mut().2 = buckets;
        self
    }

    /// tokio's unstable alternative timer (`enable_alt_timer`): enables time, as
    /// tokio's does, and makes the runtime's timers complete when polled after it shut
    /// down (tokio's alternative timer fires every timer at shutdown; its default
    /// timer, and netloop's without this, panic with "A Tokio 1.x context was found, but
    /// it is being shutdown"). netloop has one timer otherwise: each loop's timing
    /// wheel, which already keeps a loop's timers on that loop, what tokio's
    /// alternative timer aims at. A sleep still waiting when its runtime shuts down is
    /// not woken by the shutdown; it completes at its next poll.
    pub fn enable_alt_timer(&mut self) -> &mut Self {
        self.unstable.alt_timer = true;
        self.enable_time()
    }

    /// tokio's unstable `enable_eager_driver_handoff`: accepted. It exists in tokio
    /// because one worker at a time drives tokio's shared I/O and time drivers, and a
    /// worker that blocks while holding them stalls every other worker's I/O. Each
    /// netloop loop drives its own sockets and timers, so there is no driver to hand
    /// off.
    pub fn enable_eager_driver_handoff(&mut self) -> &mut Self {
        self
    }

    /// tokio's unstable `enable_sharded_blocking_queue`: accepted. netloop's blocking
    /// pool keeps one queue.
    pub fn enable_sharded_blocking_queue(&mut self) -> &mut Self {
        self
    }
}

#[cfg(feature = "taskdump")]
impl super::handle::Handle {
    /// A dump of the runtime's tasks (tokio's unstable `Handle::dump`, with the
    /// `taskdump` feature): each task's id and the stack of futures it waits in.
    ///
    /// netloop traces each task at its next poll (the dump wakes every task; each is
    /// polled once in tracing mode on its own loop, then again for real), so the
    /// traces of two tasks may be taken moments apart, where tokio's are taken while
    /// the whole runtime stands still. A trace also stops at coarser leaves where
    /// netloop's futures wait differently from tokio's. Tasks being polled when the
    /// dump starts (the one awaiting it, one blocked in `block_in_place`) are left out,
    /// as tokio leaves them out; so are blocking tasks and the tasks of a `LocalSet`
    /// or `LocalRuntime`. The dump resolves once every other task has been traced or
    /// has ended; a task that its loop cannot poll (a `!Send` task of a loop whose
    /// thread blocks in place) holds it back until it can.
    pub async fn dump(&self) -> super::dump::Dump {
        let request = super::dump::Request::new(&self.inner.unstable.tracer, crate::task::id::try_id());
        // Every loop wakes and looks at its queues, as tokio's workers all wake for a
        // dump, even with no task to trace.
        for event_loop in self.inner.group.iter() {
            let _ = event_loop.execute(|| {});
        }
        std::future::poll_fn(|cx| request.poll(cx)).await
    }

    /// Whether this thread is taking a task trace now (tokio's hidden
    /// `Handle::is_tracing`).
    #[doc(hidden)]
    pub fn is_tracing() -> bool {
        netloop_reactor::trace::is_tracing()
    }
}
