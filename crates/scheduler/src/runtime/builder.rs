//! tokio's runtime `Builder`, plus netloop's own knobs.

use std::fmt;
use std::io;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use netloop_reactor::EventLoopBuilder;

use super::id::Id;
use super::runtime::Runtime;
use crate::blocking::BlockingPool;
use crate::context;
use crate::group::{EventLoopGroup, ThreadConfig, next_group_number};
use crate::runtime::flavor::RuntimeFlavor;
use crate::shared::Shared;

type Callback = Arc<dyn Fn() + Send + Sync>;

/// Configures a [`Runtime`] (tokio's `runtime::Builder`).
///
/// tokio's setters panic on a value tokio rejects (zero worker threads, a blank name,
/// ...), as tokio's do, at the caller's line. netloop's own settings (an `io_ratio`
/// outside `1..=100`, a quiet period longer than the shutdown timeout, ...) and a bad
/// `NETLOOP_WORKER_THREADS` are reported by [`build`](Self::build) as `InvalidInput`
/// errors.
///
/// ```
/// use netloop_scheduler::runtime::Builder;
///
/// let rt = Builder::new_multi_thread()
///     .worker_threads(2)
///     .thread_name("my-worker")
///     .enable_all()
///     .build()?;
/// rt.block_on(async { /* ... */ });
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Builder {
    pub(super) flavor: RuntimeFlavor,
    worker_threads: Option<usize>,
    thread_name: Option<Arc<dyn Fn() -> String + Send + Sync>>,
    thread_stack_size: Option<usize>,
    on_thread_start: Option<Callback>,
    on_thread_stop: Option<Callback>,
    max_blocking_threads: usize,
    thread_keep_alive: Duration,
    eager_start: bool,
    start_paused: bool,
    /// Whether the user chose a quiet period (otherwise it shrinks to fit the timeout).
    quiet_period_set: bool,
    event_loop: EventLoopBuilder,
    enable_io: bool,
    enable_time: bool,
    name: Option<String>,
    /// tokio's unstable settings (`unstable_api` has their setters).
    #[cfg(tokio_unstable)]
    pub(super) unstable: super::unstable::UnstableSettings,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("flavor", &self.flavor)
            .field("worker_threads", &self.worker_threads)
            .field("max_blocking_threads", &self.max_blocking_threads)
            .field("event_loop", &self.event_loop)
            .finish()
    }
}

/// Environment variable that overrides the default number of worker loops.
pub const WORKER_THREADS_ENV: &str = "NETLOOP_WORKER_THREADS";

impl Builder {
    fn new(flavor: RuntimeFlavor) -> Builder {
        Builder {
            flavor,
            worker_threads: None,
            thread_name: None,
            thread_stack_size: None,
            on_thread_start: None,
            on_thread_stop: None,
            max_blocking_threads: 512,
            thread_keep_alive: Duration::from_secs(10),
            eager_start: true,
            start_paused: false,
            quiet_period_set: false,
            event_loop: EventLoopBuilder::new(),
            enable_io: false,
            enable_time: false,
            name: None,
            #[cfg(tokio_unstable)]
            unstable: Default::default(),
        }
    }

    /// One event loop per worker thread (default: the number of cores).
    pub fn new_multi_thread() -> Builder {
        Builder::new(RuntimeFlavor::MultiThread)
    }

    /// One event loop, driven by the thread that calls `block_on`.
    pub fn new_current_thread() -> Builder {
        Builder::new(RuntimeFlavor::CurrentThread)
    }

    /// Number of event loops (multi-thread only). Default: `NETLOOP_WORKER_THREADS`,
    /// else the available parallelism.
    ///
    /// # Panics
    ///
    /// If `n` is zero, as tokio's.
    #[track_caller]
    pub fn worker_threads(&mut self, n: usize) -> &mut Self {
        assert!(n > 0, "Worker threads cannot be set to 0");
        self.worker_threads = Some(n);
        self
    }

    /// Names every thread of the runtime `name` (default: `netloop-{group}-{index}`).
    pub fn thread_name(&mut self, name: impl Into<String>) -> &mut Self {
        let name: String = name.into();
        self.thread_name = Some(Arc::new(move || name.clone()));
        self
    }

    /// Names threads by calling `f`.
    pub fn thread_name_fn<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn() -> String + Send + Sync + 'static,
    {
        self.thread_name = Some(Arc::new(f));
        self
    }

    /// Names the runtime (see [`Handle::name`](super::Handle::name)).
    ///
    /// # Panics
    ///
    /// If the name is empty or only whitespace, as tokio's.
    #[track_caller]
    pub fn name(&mut self, name: impl Into<String>) -> &mut Self {
        let name = name.into();
        assert!(!name.trim().is_empty(), "runtime name shouldn't be empty");
        self.name = Some(name);
        self
    }

    /// Runs `f` on a loop thread each time its loop is about to block with nothing to
    /// do (tokio's worker park). It runs on the loop, so it should be short.
    pub fn on_thread_park<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.event_loop.on_park(f);
        self
    }

    /// Runs `f` on a loop thread each time its loop wakes from blocking.
    pub fn on_thread_unpark<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.event_loop.on_unpark(f);
        self
    }

    /// Accepted for tokio code. tokio's workers look at their shared queue every `val`
    /// tasks; a netloop loop takes what other threads sent it once per iteration,
    /// before its own queue, so there is nothing to tune.
    ///
    /// # Panics
    ///
    /// If `val` is zero, as tokio's.
    #[track_caller]
    pub fn global_queue_interval(&mut self, val: u32) -> &mut Self {
        assert!(val > 0, "global_queue_interval must be greater than 0");
        self
    }

    /// How many readiness events one `select` returns at most (tokio's
    /// `max_io_events_per_tick`; netloop's `events_capacity`, default 1024).
    ///
    /// # Panics
    ///
    /// If `capacity` is zero, as tokio's.
    #[track_caller]
    pub fn max_io_events_per_tick(&mut self, capacity: usize) -> &mut Self {
        assert!(capacity > 0, "max_io_events_per_tick must be non-zero");
        self.event_loop.events_capacity(capacity);
        self
    }

    /// How many readiness events a loop takes at most from a `select` that does not
    /// block, which it makes when it has tasks waiting (tokio's
    /// `max_io_events_per_busy_tick`; netloop's `busy_events_capacity`; default: the
    /// same as [`max_io_events_per_tick`](Self::max_io_events_per_tick)). Each event
    /// wakes tasks that join the queue, so under overload a small batch keeps the queue
    /// short and leaves the other events in the kernel for the next pass.
    ///
    /// # Panics
    ///
    /// If `capacity` is zero, as tokio's.
    #[track_caller]
    pub fn max_io_events_per_busy_tick(&mut self, capacity: usize) -> &mut Self {
        assert!(capacity > 0, "max_io_events_per_busy_tick must be non-zero");
        self.event_loop.busy_events_capacity(capacity);
        self
    }

    /// Stack size of the runtime's threads.
    pub fn thread_stack_size(&mut self, size: usize) -> &mut Self {
        self.thread_stack_size = Some(size);
        self
    }

    /// Runs `f` on every runtime thread when it starts.
    pub fn on_thread_start<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.on_thread_start = Some(Arc::new(f));
        self
    }

    /// Runs `f` on every runtime thread before it exits.
    pub fn on_thread_stop<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.on_thread_stop = Some(Arc::new(f));
        self
    }

    /// Enables I/O and time: sockets, signals and timers may be created on this runtime.
    ///
    /// netloop's loops always poll for I/O and timers; as in tokio, creating a socket
    /// or signal without `enable_io`, or a timer without `enable_time`, panics, so a
    /// program behaves the same on both runtimes.
    pub fn enable_all(&mut self) -> &mut Self {
        self.enable_io = true;
        self.enable_time = true;
        self
    }

    /// Enables sockets and signals (see [`enable_all`](Self::enable_all)).
    pub fn enable_io(&mut self) -> &mut Self {
        self.enable_io = true;
        self
    }

    /// Enables timers (see [`enable_all`](Self::enable_all)).
    pub fn enable_time(&mut self) -> &mut Self {
        self.enable_time = true;
        self
    }

    /// Upper bound of the blocking pool (default 512).
    ///
    /// # Panics
    ///
    /// If `n` is zero, as tokio's.
    #[track_caller]
    pub fn max_blocking_threads(&mut self, n: usize) -> &mut Self {
        assert!(n > 0, "Max blocking threads cannot be set to 0");
        self.max_blocking_threads = n;
        self
    }

    /// How long an idle blocking thread waits for work before it exits (default 10 s).
    pub fn thread_keep_alive(&mut self, d: Duration) -> &mut Self {
        self.thread_keep_alive = d;
        self
    }

    /// Accepted for tokio code; netloop's loops balance I/O and tasks with
    /// [`io_ratio`](Self::io_ratio) instead.
    ///
    /// # Panics
    ///
    /// If `n` is zero, as tokio's.
    #[track_caller]
    pub fn event_interval(&mut self, n: u32) -> &mut Self {
        assert!(n > 0, "event_interval must be greater than 0");
        self
    }

    /// netloop: percent of loop time for I/O, `1..=100` (default 50).
    pub fn io_ratio(&mut self, ratio: u32) -> &mut Self {
        self.event_loop.io_ratio(ratio);
        self
    }

    /// netloop: how long a loop spins before it blocks, after taking work submitted
    /// from other threads: at most 1 ms (default 20 µs; zero never spins). Spinning
    /// spares the submitting threads the wake of a blocked loop in a burst of remote
    /// spawns; spins that find nothing back off. See
    /// [`EventLoopBuilder::idle_spin`](netloop_reactor::EventLoopBuilder::idle_spin).
    pub fn idle_spin(&mut self, length: Duration) -> &mut Self {
        self.event_loop.idle_spin(length);
        self
    }

    /// netloop: a task whose single poll holds its loop longer than this is named in a
    /// `tracing` warning (target `netloop::reactor`, with its task id) and counted in
    /// the loop's metrics (`LoopMetrics::hog_polls`). Default 10 ms; `None` turns the
    /// check off. See
    /// [`EventLoopBuilder::hog_threshold`](netloop_reactor::EventLoopBuilder::hog_threshold).
    pub fn hog_threshold(&mut self, threshold: Option<Duration>) -> &mut Self {
        self.event_loop.hog_threshold(threshold);
        self
    }

    /// netloop: the kernel interface every loop's I/O goes through: epoll (the
    /// default) or io_uring, which falls back to epoll with one log line where the
    /// kernel refuses it. Without this call the `NETLOOP_IO_DRIVER` environment
    /// variable decides (`epoll` or `io_uring`), so that an unmodified application can
    /// switch. See [`IoDriver`](netloop_reactor::IoDriver) and `docs/io-uring.md`.
    ///
    /// ```
    /// use netloop_scheduler::runtime::Builder;
    /// use netloop_reactor::IoDriver;
    ///
    /// let rt = Builder::new_multi_thread().io_driver(IoDriver::IoUring).enable_all().build()?;
    /// rt.block_on(async {
    ///     // Accepted streams on these loops read and write through io_uring (or epoll,
    ///     // where the kernel refused it).
    /// });
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn io_driver(&mut self, driver: netloop_reactor::IoDriver) -> &mut Self {
        self.event_loop.io_driver(driver);
        self
    }

    /// netloop: bound on each loop's inbox (default unbounded, floor 16).
    pub fn max_pending_tasks(&mut self, n: usize) -> &mut Self {
        self.event_loop.max_pending_tasks(n);
        self
    }

    /// netloop: quiet period of a graceful loop shutdown (default 2 s).
    pub fn shutdown_quiet_period(&mut self, d: Duration) -> &mut Self {
        self.event_loop.shutdown_quiet_period(d);
        self.quiet_period_set = true;
        self
    }

    /// netloop: how long dropping the runtime waits for its loops (default 15 s). A
    /// default quiet period longer than this shrinks to it.
    pub fn shutdown_timeout(&mut self, d: Duration) -> &mut Self {
        self.event_loop.shutdown_timeout(d);
        self
    }

    /// netloop: whether `build` starts every loop's thread (multi-thread only).
    ///
    /// The default, `true`, is tokio's: every worker thread exists once `build`
    /// returns, and `on_thread_start` has been called (or is about to be) for each.
    /// `false` is Netty's way: each loop's thread starts with the first task or socket
    /// that reaches it, so a runtime whose loops go unused costs no threads, and
    /// `on_thread_start` runs as each loop starts.
    pub fn eager_start(&mut self, eager: bool) -> &mut Self {
        self.eager_start = eager;
        self
    }

    /// Starts the runtime with time paused (current-thread only; `test-util`): timers
    /// complete as soon as the loop has nothing else to do.
    #[cfg(feature = "test-util")]
    pub fn start_paused(&mut self, start_paused: bool) -> &mut Self {
        self.start_paused = start_paused;
        self
    }

    fn worker_count(&self) -> io::Result<usize> {
        if self.flavor == RuntimeFlavor::CurrentThread {
            return Ok(1);
        }
        // Never zero: the setter panics on it.
        if let Some(n) = self.worker_threads {
            return Ok(n);
        }
        if let Ok(v) = std::env::var(WORKER_THREADS_ENV) {
            return match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(invalid_input(format!(
                    "{WORKER_THREADS_ENV}={v:?} is not a positive whole number"
                ))),
            };
        }
        Ok(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// Creates the runtime. Invalid settings are `InvalidInput` errors; if any loop
    /// cannot be created, the others are shut down and the error is returned.
    pub fn build(&mut self) -> io::Result<Runtime> {
        self.fit_quiet_period();
        #[cfg(all(not(feature = "tokio-compat"), not(tokio_unstable)))]
        self.event_loop.on_task_panic(super::compat_hint::observe);
        #[cfg(tokio_unstable)]
        let unstable = self.unstable_runtime_state();
        self.validate()?;
        let workers = self.worker_count()?;
        let group_no = next_group_number();
        // Every runtime thread enters the runtime's context first, through a weak
        // reference set once the runtime exists: the threads must not keep it alive.
        let runtime: Arc<OnceLock<Weak<Shared>>> = Arc::new(OnceLock::new());
        #[cfg(feature = "tokio-compat")]
        let compat = super::compat::Compat::new(group_no)?;
        let threads = self.loop_threads(group_no, enter_runtime(runtime.clone()));
        // Every thread enters tokio's context too.
        #[cfg(feature = "tokio-compat")]
        let threads = ThreadConfig {
            tokio: Some(compat.handle().clone()),
            ..threads
        };
        let blocking_threads = ThreadConfig {
            name: self.blocking_thread_names(group_no),
            ..threads.clone()
        };
        let lazy = self.flavor == RuntimeFlavor::MultiThread;
        let group = EventLoopGroup::build(workers, &self.event_loop, threads, lazy)?;
        let blocking = BlockingPool::new(
            self.max_blocking_threads,
            self.thread_keep_alive,
            blocking_threads,
            #[cfg(tokio_unstable)]
            Some(unstable.tasks.clone()),
        );
        let rt = Runtime::from_shared(Shared {
            group,
            blocking,
            flavor: self.flavor,
            driver: Default::default(),
            local_owner: OnceLock::new(),
            shutdown_timeout: self.event_loop.configured_shutdown_timeout(),
            id: Id::from_group(group_no),
            name: self.name.clone(),
            io_enabled: self.enable_io,
            time_enabled: self.enable_time,
            #[cfg(feature = "tokio-compat")]
            compat,
            #[cfg(tokio_unstable)]
            unstable,
        });
        let _ = runtime.set(Arc::downgrade(&rt.handle().inner));
        self.start(&rt, lazy);
        Ok(rt)
    }

    /// What the runtime keeps of tokio's unstable settings, and what they ask of its
    /// loops: poll times, and a runtime shut down by a task's panic.
    #[cfg(tokio_unstable)]
    fn unstable_runtime_state(&mut self) -> super::unstable::RuntimeUnstable {
        let state = self.unstable.runtime_state();
        if let Some(times) = self.unstable.poll_times(self.flavor == RuntimeFlavor::MultiThread) {
            self.event_loop.poll_times(times);
        }
        self.event_loop.complete_timers_at_shutdown(self.unstable.alt_timer);
        let panicked = state.panicked.clone();
        self.event_loop.on_task_panic(move |_payload| {
            #[cfg(not(feature = "tokio-compat"))]
            super::compat_hint::observe(_payload);
            if let Some(panicked) = &panicked {
                panicked.store(true, std::sync::atomic::Ordering::SeqCst);
                // On the loop's thread: the loop drops every task and stops, and
                // `block_on` panics when it sees it (`block_on.rs`).
                if let Some(event_loop) = netloop_reactor::EventLoopHandle::current() {
                    let _ = event_loop.shutdown_gracefully_with(Duration::ZERO, Duration::ZERO);
                }
            }
        });
        state
    }

    /// A default quiet period longer than the shutdown timeout shrinks to it.
    fn fit_quiet_period(&mut self) {
        if !self.quiet_period_set {
            let timeout = self.event_loop.configured_shutdown_timeout();
            if timeout < netloop_reactor::DEFAULT_QUIET_PERIOD {
                self.event_loop.shutdown_quiet_period(timeout);
            }
        }
    }

    /// Every setting but the worker count, checked in the order `build` reports them.
    fn validate(&self) -> io::Result<()> {
        self.event_loop.validate().map_err(io::Error::from)?;
        if self.start_paused && self.flavor != RuntimeFlavor::CurrentThread {
            return Err(invalid_input("start_paused requires the current_thread runtime"));
        }
        Ok(())
    }

    /// How the loops' threads are named and prepared: `enter` runs first on each.
    fn loop_threads(&self, group_no: usize, enter: EnterFn) -> ThreadConfig {
        let name: ThreadNames = match self.thread_name.clone() {
            Some(f) => Arc::new(move |_| f()),
            None => Arc::new(move |i| format!("netloop-{group_no}-{i}")),
        };
        ThreadConfig {
            name,
            stack_size: self.thread_stack_size,
            on_start: self.on_thread_start.clone(),
            on_stop: self.on_thread_stop.clone(),
            enter: Some(enter),
            #[cfg(feature = "tokio-compat")]
            tokio: None,
        }
    }

    /// The names of the blocking pool's threads.
    fn blocking_thread_names(&self, group_no: usize) -> ThreadNames {
        match self.thread_name.clone() {
            Some(f) => Arc::new(move |_| f()),
            None => Arc::new(move |_| format!("netloop-{group_no}-blocking")),
        }
    }

    /// What `build` does to a new runtime as configured: pauses its clock, starts its
    /// loops' threads.
    fn start(&self, rt: &Runtime, lazy: bool) {
        if self.start_paused {
            for l in rt.handle().inner.group.iter() {
                let _ = l.clock().pause();
            }
        }
        if self.eager_start && lazy {
            rt.handle().inner.group.start_all();
        }
    }
}

// Here rather than beside `Runtime`: the runtime is below its builder, so the builder's
// shortcut is added from above.
impl Runtime {
    /// A multi-thread runtime with one loop per core (or `NETLOOP_WORKER_THREADS`).
    pub fn new() -> io::Result<Runtime> {
        Builder::new_multi_thread().enable_all().build()
    }
}

/// The names of a group's threads, by index.
type ThreadNames = Arc<dyn Fn(usize) -> String + Send + Sync>;

/// What every runtime thread runs first; what it returns is dropped as the thread ends.
type EnterFn = Arc<dyn Fn() -> Box<dyn std::any::Any> + Send + Sync>;

/// Enters the context of `runtime`, once it is set and while it is alive (and, under
/// `tokio_unstable`, seeds the thread's random numbers from the runtime's seed).
fn enter_runtime(runtime: Arc<OnceLock<Weak<Shared>>>) -> EnterFn {
    Arc::new(move || {
        let runtime = runtime.get().and_then(Weak::upgrade);
        #[cfg(tokio_unstable)]
        let seeded = runtime
            .as_ref()
            .and_then(|rt| rt.unstable.seeds.as_ref())
            .map(|seeds| super::rng::reseed(seeds.next()));
        let entered = runtime.map(context::set);
        #[cfg(tokio_unstable)]
        let entered = (entered, seeded);
        Box::new(entered)
    })
}

/// A setting's error, as `build` reports it.
pub(super) fn invalid_input(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}
