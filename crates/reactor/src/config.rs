//! `EventLoopBuilder`: the knobs of one loop, validated before anything is created.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use crate::error::ConfigError;
pub use crate::idle_spin::{DEFAULT_IDLE_SPIN, MAX_IDLE_SPIN};

/// How long one poll may hold its loop before the loop names the task
/// ([`EventLoopBuilder::hog_threshold`]).
pub const DEFAULT_HOG_THRESHOLD: Duration = Duration::from_millis(10);

/// Default share of loop time for I/O, in percent (Netty's `ioRatio`).
pub const DEFAULT_IO_RATIO: u32 = 50;
/// Default capacity of the events buffer filled by one `select`.
pub const DEFAULT_EVENTS_CAPACITY: usize = 1024;
/// Default graceful-shutdown quiet period.
pub const DEFAULT_QUIET_PERIOD: Duration = Duration::from_secs(2);
/// Default graceful-shutdown timeout.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(15);

/// Shutdown parameters set by the first `shutdown_gracefully`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShutdownParams {
    pub(crate) quiet_period: Duration,
    pub(crate) timeout: Duration,
}

/// Configures and builds an [`EventLoop`](crate::EventLoop).
///
/// ```
/// use std::time::Duration;
/// use netloop_reactor::EventLoopBuilder;
///
/// let event_loop = EventLoopBuilder::new()
///     .io_ratio(70)
///     .max_pending_tasks(10_000)
///     .shutdown_quiet_period(Duration::from_millis(100))
///     .build()?;
/// # drop(event_loop);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Invalid values are reported by [`build`](Self::build) as a [`ConfigError`], never
/// by a panic.
#[derive(Debug, Clone)]
pub struct EventLoopBuilder {
    pub(crate) on_park: Option<ParkHook>,
    pub(crate) on_unpark: Option<ParkHook>,
    pub(crate) on_task_panic: Option<TaskPanicHook>,
    pub(crate) io_ratio: u32,
    pub(crate) max_pending_tasks: Option<usize>,
    pub(crate) events_capacity: usize,
    pub(crate) busy_events_capacity: Option<usize>,
    pub(crate) quiet_period: Duration,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) idle_spin: Duration,
    pub(crate) hog_threshold: Option<Duration>,
    /// How task polls are timed for tokio's unstable metrics (`poll_times`).
    #[cfg(tokio_unstable)]
    pub(crate) poll_times: Option<crate::unstable::PollTimes>,
    /// `complete_timers_at_shutdown` (tokio_unstable).
    #[cfg(tokio_unstable)]
    pub(crate) timers_complete_at_shutdown: bool,
    /// The driver asked for; `None`: the `NETLOOP_IO_DRIVER` environment variable's.
    pub(crate) io_driver: Option<IoDriver>,
}

/// The kernel interface a loop's I/O goes through.
///
/// `Epoll` is the default: readiness (`epoll_wait`), then a system call per read and
/// per write. `IoUring` runs the loop on an io_uring instance: each turn's reads,
/// writes and accepts go to the kernel in the one `io_uring_enter` that also waits,
/// streams receive into a pool of provided buffers without a call per read, and
/// listeners accept without a call per connection. Everything else (readiness of other
/// sources, `AsyncFd`, UDP) stays on epoll, watched through the ring.
///
/// A loop asked for `IoUring` on a kernel that refuses it (no io_uring, a seccomp
/// profile, `kernel.io_uring_disabled`) runs on epoll and logs one line saying why.
/// `docs/io-uring.md` says when to choose it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IoDriver {
    /// Readiness through epoll (the default).
    #[default]
    Epoll,
    /// Completions through io_uring, with epoll for what stays on readiness.
    IoUring,
}

/// The environment variable that chooses the driver of every loop whose builder did
/// not: `epoll` or `io_uring` (so that an unmodified application can switch).
pub const IO_DRIVER_ENV: &str = "NETLOOP_IO_DRIVER";

impl IoDriver {
    /// The driver `NETLOOP_IO_DRIVER` names, `None` if it is unset; an unknown value
    /// is reported once and ignored.
    pub fn from_env() -> Option<IoDriver> {
        let value = std::env::var(IO_DRIVER_ENV).ok()?;
        match value.trim().to_ascii_lowercase().as_str() {
            "epoll" | "" => Some(IoDriver::Epoll),
            "io_uring" | "iouring" | "uring" => Some(IoDriver::IoUring),
            other => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    report(&format!(
                        "{IO_DRIVER_ENV}={other:?} is not a driver (use `epoll` or `io_uring`); using epoll"
                    ))
                });
                None
            }
        }
    }
}

/// One line for the operator: through `tracing` if a subscriber is installed, else on
/// standard error (a driver the operator chose by environment must not fall back
/// silently).
pub(crate) fn report(line: &str) {
    if tracing::dispatcher::has_been_set() {
        tracing::warn!(target: "netloop::reactor", "{line}");
    } else {
        eprintln!("netloop: {line}");
    }
}

impl Default for EventLoopBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl EventLoopBuilder {
    /// The defaults: `io_ratio` 50, unbounded inbox, 1024 events, quiet period 2 s,
    /// shutdown timeout 15 s, idle spins of 20 µs.
    pub fn new() -> Self {
        EventLoopBuilder {
            on_park: None,
            on_unpark: None,
            on_task_panic: None,
            io_ratio: DEFAULT_IO_RATIO,
            max_pending_tasks: None,
            events_capacity: DEFAULT_EVENTS_CAPACITY,
            busy_events_capacity: None,
            quiet_period: DEFAULT_QUIET_PERIOD,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            idle_spin: DEFAULT_IDLE_SPIN,
            hog_threshold: Some(DEFAULT_HOG_THRESHOLD),
            #[cfg(tokio_unstable)]
            poll_times: None,
            #[cfg(tokio_unstable)]
            timers_complete_at_shutdown: false,
            io_driver: None,
        }
    }

    /// Runs the loop's I/O on `driver` (see [`IoDriver`]), whatever
    /// `NETLOOP_IO_DRIVER` says.
    pub fn io_driver(&mut self, driver: IoDriver) -> &mut Self {
        self.io_driver = Some(driver);
        self
    }

    /// The driver asked for: the builder's, else the environment's, else epoll.
    pub fn requested_io_driver(&self) -> IoDriver {
        self.io_driver.or_else(IoDriver::from_env).unwrap_or_default()
    }

    /// Runs `hook` on the loop's thread each time the loop is about to block in
    /// `select` because it has nothing to do (tokio's `on_thread_park`). It runs on
    /// the loop's thread with the loop's context set; keep it short.
    pub fn on_park(&mut self, hook: impl Fn() + Send + Sync + 'static) -> &mut Self {
        self.on_park = Some(ParkHook(Arc::new(hook)));
        self
    }

    /// Runs `hook` on the loop's thread each time a blocking `select` returns
    /// (tokio's `on_thread_unpark`).
    pub fn on_unpark(&mut self, hook: impl Fn() + Send + Sync + 'static) -> &mut Self {
        self.on_unpark = Some(ParkHook(Arc::new(hook)));
        self
    }

    /// Runs `hook` on the loop's thread with the payload of each panic that escapes a
    /// task's future, before the panic is stored for the task's handle. The loop goes
    /// on either way (design §7); a runtime uses this to explain panics it recognises.
    pub fn on_task_panic(&mut self, hook: impl Fn(&(dyn Any + Send)) + Send + Sync + 'static) -> &mut Self {
        self.on_task_panic = Some(TaskPanicHook(Arc::new(hook)));
        self
    }

    /// Percent of each iteration's time meant for I/O, `1..=100`. After processing
    /// I/O that took `t`, the loop runs tasks for about `t * (100 - io_ratio) /
    /// io_ratio`; 100 runs every ready task each iteration. Lower it when tasks are
    /// heavy and latency of I/O matters less; raise it for I/O-bound proxies.
    pub fn io_ratio(&mut self, io_ratio: u32) -> &mut Self {
        self.io_ratio = io_ratio;
        self
    }

    /// Bounds the inbox: a new submission from another thread is rejected with
    /// [`RejectReason::Full`](crate::RejectReason::Full) once this many tasks wait. Values below 16 count as 16.
    /// Wakes of already-spawned futures are never refused.
    pub fn max_pending_tasks(&mut self, max: usize) -> &mut Self {
        self.max_pending_tasks = Some(max);
        self
    }

    /// Capacity of the events buffer one `select` fills (default 1024).
    pub fn events_capacity(&mut self, capacity: usize) -> &mut Self {
        self.events_capacity = capacity;
        self
    }

    /// How many events a `select` that does not block takes at most (default: the
    /// [`events_capacity`](Self::events_capacity)). The loop selects without blocking
    /// when it has tasks waiting; every task an event wakes joins them, so under overload
    /// a smaller batch here keeps the run queue short and leaves the rest of the events
    /// in the kernel for the next pass, rather than waking more tasks than the loop can
    /// run soon (tokio's `max_io_events_per_busy_tick`).
    pub fn busy_events_capacity(&mut self, capacity: usize) -> &mut Self {
        self.busy_events_capacity = Some(capacity);
        self
    }

    /// Quiet period used by [`EventLoopHandle::shutdown_gracefully`](crate::EventLoopHandle::shutdown_gracefully).
    pub fn shutdown_quiet_period(&mut self, quiet_period: Duration) -> &mut Self {
        self.quiet_period = quiet_period;
        self
    }

    /// Timeout used by [`EventLoopHandle::shutdown_gracefully`](crate::EventLoopHandle::shutdown_gracefully).
    pub fn shutdown_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// How long the loop spins before it blocks, after a pass that took work from its
    /// inbox: at most 1 ms (default 20 µs; zero never spins).
    ///
    /// The spin goes in rounds: each yields the core (`sched_yield`) and looks at the
    /// queues, and every few rounds the selector is polled without blocking, so I/O is
    /// not kept waiting. While the loop spins, threads submitting to it
    /// need not wake it, which is what makes a burst of spawns from outside the loop
    /// cheap: without it, a loop faster than its producer blocks and is woken again
    /// for nearly every task. Spins that find nothing make the loop skip the next
    /// chances to spin (1, 2, 4, ... up to 64), so a trickle of cross-thread work costs
    /// little; work that arrives only as I/O never makes the loop spin. Set zero where
    /// every microsecond of idle CPU counts more than the cost of waking the loop. A
    /// timer that falls due during a spin runs when the spin ends, so at most this
    /// late.
    pub fn idle_spin(&mut self, length: Duration) -> &mut Self {
        self.idle_spin = length;
        self
    }

    /// A task whose single poll holds the loop longer than this is reported: a
    /// `tracing` warning with its id, and `LoopMetrics::hog_polls`. Default 10 ms;
    /// `None` turns the check off. The check costs one read of the CPU's time-stamp
    /// counter per task turn (the coarse clock where there is none). The poll is
    /// measured in wall time, as the loop's other tasks waited for it: on an overloaded
    /// machine a short poll whose thread the OS preempted for longer than this counts
    /// too.
    pub fn hog_threshold(&mut self, threshold: Option<Duration>) -> &mut Self {
        self.hog_threshold = threshold;
        self
    }

    /// Checks every value without creating anything.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=100).contains(&self.io_ratio) {
            return Err(ConfigError::IoRatio(self.io_ratio));
        }
        if self.events_capacity == 0 {
            return Err(ConfigError::ZeroEventsCapacity);
        }
        if self.busy_events_capacity == Some(0) {
            return Err(ConfigError::ZeroBusyEventsCapacity);
        }
        if self.idle_spin > MAX_IDLE_SPIN {
            return Err(ConfigError::IdleSpin(self.idle_spin));
        }
        check_shutdown(self.quiet_period, self.shutdown_timeout)?;
        Ok(())
    }

    /// The shutdown timeout configured (default 15 s).
    pub fn configured_shutdown_timeout(&self) -> Duration {
        self.shutdown_timeout
    }

    pub(crate) fn shutdown_params(&self) -> ShutdownParams {
        ShutdownParams {
            quiet_period: self.quiet_period,
            timeout: self.shutdown_timeout,
        }
    }
}

/// A hook run as the loop blocks or wakes (see [`EventLoopBuilder::on_park`]).
#[cfg(tokio_unstable)]
impl EventLoopBuilder {
    /// With `true`, a timer whose loop has shut down completes when polled; with
    /// `false` (the default) it fails (tokio_unstable only). `true` is what tokio's
    /// alternative timer does, which fires every timer as its runtime shuts down. Read by the timers built on the loop
    /// ([`EventLoopHandle::timers_complete_at_shutdown`](crate::EventLoopHandle::timers_complete_at_shutdown)).
    pub fn complete_timers_at_shutdown(&mut self, complete: bool) -> &mut Self {
        self.timers_complete_at_shutdown = complete;
        self
    }

    /// Times every poll of a task on the loop (tokio_unstable only): for a moving
    /// average, a histogram, or both, read through
    /// [`EventLoopHandle::unstable_metrics`](crate::EventLoopHandle::unstable_metrics).
    /// Each timed poll costs two reads of the precise clock; without this the loop
    /// reads none.
    pub fn poll_times(&mut self, times: crate::unstable::PollTimes) -> &mut Self {
        self.poll_times = Some(times);
        self
    }
}

#[derive(Clone)]
pub(crate) struct ParkHook(pub(crate) Arc<dyn Fn() + Send + Sync>);

/// What sees the payload of a task's panic.
type PanicObserver = dyn Fn(&(dyn Any + Send)) + Send + Sync;

/// A hook that sees the payload of a task's panic.
#[derive(Clone)]
pub(crate) struct TaskPanicHook(pub(crate) Arc<PanicObserver>);

impl std::fmt::Debug for TaskPanicHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskPanicHook")
    }
}

impl std::fmt::Debug for ParkHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ParkHook")
    }
}

pub(crate) fn check_shutdown(quiet_period: Duration, timeout: Duration) -> Result<(), ConfigError> {
    if quiet_period > timeout {
        return Err(ConfigError::QuietPeriodExceedsTimeout { quiet_period, timeout });
    }
    Ok(())
}

/// Why [`EventLoopBuilder::build`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// A value was out of range; nothing was created.
    Config(ConfigError),
    /// The OS refused a resource (epoll instance, eventfd): often the process is out
    /// of file descriptors.
    Io(std::io::Error),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Config(e) => write!(f, "invalid event loop configuration: {e}"),
            BuildError::Io(e) => write!(f, "could not create the event loop's selector: {e}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Config(e) => Some(e),
            BuildError::Io(e) => Some(e),
        }
    }
}

impl From<BuildError> for std::io::Error {
    fn from(e: BuildError) -> Self {
        match e {
            BuildError::Config(c) => c.into(),
            BuildError::Io(e) => e,
        }
    }
}
