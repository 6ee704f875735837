//! Typed errors: what went wrong, and what the caller can do about it.

use std::fmt;
use std::time::Duration;

/// Why a loop refused a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectReason {
    /// The loop has shut down (state `Shutdown` or `Terminated`); it will never run
    /// anything again. Submit to a live loop instead.
    Shutdown,
    /// The inbox already holds `max_pending_tasks` tasks. Retry later, or raise the
    /// bound on the builder.
    Full,
}

/// A submission the loop did not accept. Nothing is lost silently: the closure comes
/// back through [`RejectedExecution::into_task`] when there was one, and is otherwise
/// dropped on the submitting thread.
pub struct RejectedExecution {
    reason: RejectReason,
    task: Option<Box<dyn FnOnce() + Send + 'static>>,
}

impl RejectedExecution {
    pub(crate) fn new(reason: RejectReason, task: Option<Box<dyn FnOnce() + Send + 'static>>) -> Self {
        RejectedExecution { reason, task }
    }

    /// Why the loop refused.
    pub fn reason(&self) -> RejectReason {
        self.reason
    }

    /// True when the loop has shut down.
    pub fn is_shutdown(&self) -> bool {
        self.reason == RejectReason::Shutdown
    }

    /// True when the bounded inbox was full.
    pub fn is_full(&self) -> bool {
        self.reason == RejectReason::Full
    }

    /// The rejected closure, if the submission was one, to run elsewhere or retry.
    pub fn into_task(self) -> Option<Box<dyn FnOnce() + Send + 'static>> {
        self.task
    }
}

impl fmt::Debug for RejectedExecution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RejectedExecution")
            .field("reason", &self.reason)
            .field("has_task", &self.task.is_some())
            .finish()
    }
}

impl fmt::Display for RejectedExecution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            RejectReason::Shutdown => {
                f.write_str("task rejected: the event loop has shut down; submit to a running loop")
            }
            RejectReason::Full => f.write_str(
                "task rejected: the event loop's inbox is full (max_pending_tasks); retry later or raise the bound",
            ),
        }
    }
}

impl std::error::Error for RejectedExecution {}

impl From<RejectedExecution> for std::io::Error {
    fn from(e: RejectedExecution) -> Self {
        let kind = match e.reason {
            RejectReason::Shutdown => std::io::ErrorKind::NotConnected,
            RejectReason::Full => std::io::ErrorKind::WouldBlock,
        };
        std::io::Error::new(kind, e.to_string())
    }
}

/// An error from scheduling a delayed or periodic task.
#[derive(Debug)]
#[non_exhaustive]
pub enum ScheduleError {
    /// A fixed-rate or fixed-delay task was given a period of zero, which would spin
    /// the loop. Pass a positive period.
    ZeroPeriod,
    /// The loop refused the task.
    Rejected(RejectedExecution),
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::ZeroPeriod => {
                f.write_str("invalid argument: a periodic task needs a period greater than zero")
            }
            ScheduleError::Rejected(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ScheduleError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScheduleError::Rejected(e) => Some(e),
            ScheduleError::ZeroPeriod => None,
        }
    }
}

impl From<RejectedExecution> for ScheduleError {
    fn from(e: RejectedExecution) -> Self {
        ScheduleError::Rejected(e)
    }
}

/// An invalid value given to [`EventLoopBuilder`](crate::EventLoopBuilder) or to
/// [`shutdown_gracefully`](crate::EventLoopHandle::shutdown_gracefully).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// `io_ratio` must be in `1..=100` (100 = run every ready task after I/O).
    IoRatio(u32),
    /// The quiet period may not be longer than the timeout that bounds it.
    QuietPeriodExceedsTimeout {
        /// The quiet period asked for.
        quiet_period: Duration,
        /// The timeout asked for.
        timeout: Duration,
    },
    /// The events buffer needs room for at least one event.
    ZeroEventsCapacity,
    /// A `select` that does not block needs room for at least one event too.
    ZeroBusyEventsCapacity,
    /// An idle spin may last at most [`MAX_IDLE_SPIN`](crate::MAX_IDLE_SPIN) (the
    /// length given is inside).
    IdleSpin(Duration),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::IoRatio(r) => write!(f, "io_ratio must be between 1 and 100 (got {r})"),
            ConfigError::QuietPeriodExceedsTimeout { quiet_period, timeout } => write!(
                f,
                "shutdown quiet period ({quiet_period:?}) must not exceed the shutdown timeout ({timeout:?})"
            ),
            ConfigError::ZeroEventsCapacity => f.write_str("the events buffer capacity must be at least 1"),
            ConfigError::ZeroBusyEventsCapacity => {
                f.write_str("the busy events capacity (max_io_events_per_busy_tick) must be at least 1")
            }
            ConfigError::IdleSpin(d) => write!(
                f,
                "idle_spin must be at most {:?} (got {d:?}); use Duration::ZERO to never spin",
                crate::MAX_IDLE_SPIN
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<ConfigError> for std::io::Error {
    fn from(e: ConfigError) -> Self {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, e)
    }
}

/// Why the loop could not be driven by this call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriveError {
    /// This thread is already driving a loop (this one or another): a loop cannot be
    /// run from inside a task. Spawn the work instead of blocking on it.
    Nested,
    /// The loop was first driven by another thread; a loop is pinned to one thread
    /// because its `!Send` tasks live there. A loop with no `!Send` task can be moved
    /// with [`EventLoop::move_to_current_thread`](crate::EventLoop::move_to_current_thread).
    WrongThread,
    /// The loop could not move to this thread: a `!Send` task (`spawn_local`) is still
    /// alive on it, and may only be polled and dropped on the thread that drove the
    /// loop so far. Let those tasks finish (or abort them) first.
    ThreadBoundTasks,
    /// The loop terminated before the future completed.
    Terminated,
}

impl fmt::Display for DriveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DriveError::Nested => {
                "cannot drive an event loop from a thread that is already driving one (e.g. block_on inside a task); spawn the future instead"
            }
            DriveError::WrongThread => {
                "this event loop is pinned to the thread that first ran it; drive it from that thread, or move it first (EventLoop::move_to_current_thread)"
            }
            DriveError::ThreadBoundTasks => {
                "this event loop holds !Send tasks (spawn_local), which must stay on the thread that drove it so far; let them finish before driving it from another thread"
            }
            DriveError::Terminated => "the event loop terminated before the future completed",
        })
    }
}

impl std::error::Error for DriveError {}

/// Why waiting for termination returned without the loop having terminated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AwaitTerminationError {
    /// The timeout passed first.
    Timeout,
    /// Called on the loop's own thread, which would wait for itself forever. Wait from
    /// another thread, or `.await` the [`TerminationFuture`](crate::TerminationFuture).
    OnLoopThread,
}

impl fmt::Display for AwaitTerminationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AwaitTerminationError::Timeout => "the event loop did not terminate within the timeout",
            AwaitTerminationError::OnLoopThread => {
                "await_termination called on the event loop's own thread, which would deadlock; call it from another thread"
            }
        })
    }
}

impl std::error::Error for AwaitTerminationError {}

/// `spawn_local` was called off the loop's thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpawnLocalError {
    /// `!Send` futures can only be spawned from the loop's own thread, where they will
    /// run. Use `execute` to get onto the loop first, or spawn a `Send` future.
    NotOnLoop,
    /// The loop has shut down.
    Shutdown,
}

impl fmt::Display for SpawnLocalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpawnLocalError::NotOnLoop => {
                "spawn_local must be called on the event loop's own thread; hop onto it with execute first"
            }
            SpawnLocalError::Shutdown => "spawn_local rejected: the event loop has shut down",
        })
    }
}

impl std::error::Error for SpawnLocalError {}

/// The inner error of the `io::Error` an I/O resource returns once the loop it is
/// registered with has shut down: the resource will never be woken again, so waiting
/// on it fails instead of hanging. Recognise it with [`is_loop_shut_down`]; move the
/// work to a live runtime (re-create the socket there) rather than retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopShutDown(());

impl LoopShutDown {
    /// The `io::Error` (kind `Other`) that carries it.
    pub fn io_error() -> std::io::Error {
        std::io::Error::other(LoopShutDown(()))
    }
}

impl fmt::Display for LoopShutDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the event loop this I/O resource is registered with has shut down")
    }
}

impl std::error::Error for LoopShutDown {}

/// True if `err` was returned because the loop an I/O resource is registered with has
/// shut down (tokio's `runtime::is_rt_shutdown_err`); false for every other error,
/// whatever its message.
pub fn is_loop_shut_down(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::Other && err.get_ref().is_some_and(|inner| inner.is::<LoopShutDown>())
}
