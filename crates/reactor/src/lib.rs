//! # netloop-reactor: one Netty-style event loop on mio
//!
//! An [`EventLoop`] is Netty's `NioEventLoop` in Rust: one thread, one mio `Poll`, and
//! a loop that repeats three steps —
//!
//! 1. **select**: poll without blocking if work is waiting, otherwise block until the
//!    next scheduled deadline or a wake;
//! 2. **process I/O**: record each readiness event on its registration and wake the
//!    reader or writer waiting on it;
//! 3. **run tasks**: due scheduled tasks, then queued tasks, for a time budget set by
//!    `io_ratio`; then the tail tasks; then, when shutting down, the shutdown check.
//!
//! Work reaches the loop through an [`EventLoopHandle`]. From the loop's own thread a
//! submission goes straight into a local run queue, with no atomic operation and no
//! syscall. From any other thread it goes through an MPSC inbox, and the loop is woken
//! (one eventfd write) only if it is blocked — and only by the first producer to notice,
//! thanks to the `next_wakeup` word (see `wakeup.rs` for the protocol and its loom model).
//!
//! This crate never spawns a thread: whoever calls [`EventLoop::run`],
//! [`EventLoop::run_once`] or [`EventLoop::block_on`] drives the loop, and the loop stays
//! pinned to that thread (a loop holding no `!Send` task may be moved with
//! [`EventLoop::move_to_current_thread`]). `netloop-scheduler` builds groups of loops on
//! top.
//!
//! ## Example
//!
//! ```
//! use std::time::Duration;
//! use netloop_reactor::EventLoop;
//!
//! let mut event_loop = EventLoop::new()?;
//! let handle = event_loop.handle();
//!
//! // From another thread: a closure, and a timer.
//! let remote = handle.clone();
//! std::thread::spawn(move || {
//!     remote.execute(|| println!("hello from the loop")).unwrap();
//!     remote.schedule(Duration::from_millis(10), || println!("10 ms later")).unwrap();
//! });
//!
//! // Futures, including `!Send` ones spawned on the loop's thread.
//! let answer = event_loop.block_on(async {
//!     let local = std::rc::Rc::new(21);
//!     let task = netloop_reactor::EventLoopHandle::current()
//!         .unwrap()
//!         .spawn_local(async move { *local * 2 })
//!         .unwrap();
//!     task.await
//! })?;
//! assert_eq!(answer, 42);
//!
//! // Graceful shutdown: quiet period 0, so it ends as soon as the queues are empty.
//! let terminated = handle.shutdown_gracefully_with(Duration::ZERO, Duration::from_secs(1))?;
//! event_loop.run()?;
//! assert!(handle.is_terminated());
//! # drop(terminated);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Where the design lives
//!
//! The design this crate follows is `docs/event-loop-design.md` (cited in the code as
//! `design §N`); `docs/ARCHITECTURE.md` draws its layers.
//!
//! | design section | module |
//! |---|---|
//! | §2 state and queues | [`LoopState`], `core.rs` (run queue, timing wheel, tail), `inbox.rs` |
//! | §3 the run loop | `event_loop/`: `iteration`, `select`, `process_io`, `run_tasks`, `run_tail_tasks` |
//! | §4 wakeups | `wakeup.rs` (`next_wakeup`), `schedule.rs` (`submit`), `shared.rs` (`wake`) |
//! | §5 graceful shutdown | `event_loop/shutdown.rs`: `confirm_shutdown`, `finish`, `terminate`; `termination.rs` |
//! | §6 fairness and I/O | [`coop`], [`io`] |
//! | §7 faults | `fault.rs` (`run_caught`), `event_loop/select.rs` (poll error back-off) |
//! | §8 metrics | [`LoopMetrics`] |

#![deny(missing_docs)]

mod block_cache;
mod clock;
mod completion;
mod config;
mod context;
pub mod coop;
mod core;
mod defer;
mod error;
mod event_loop;
mod fault;
mod handle;
mod idle_spin;
mod inbox;
pub mod io;
mod metrics;
mod peers;
mod queue_item;
mod run_queue;
mod schedule;
mod scheduled;
mod share_work;
mod shared;
mod spawn;
mod sync;
mod sys;
mod tail;
pub mod task;
mod termination;
#[cfg(tokio_unstable)]
pub mod trace;
#[cfg(tokio_unstable)]
mod unstable;
mod wakeup;
pub mod wheel;

pub use clock::{Clock, ClockError};
pub use config::{
    BuildError, DEFAULT_EVENTS_CAPACITY, DEFAULT_HOG_THRESHOLD, DEFAULT_IDLE_SPIN, DEFAULT_IO_RATIO,
    DEFAULT_QUIET_PERIOD, DEFAULT_SHUTDOWN_TIMEOUT, EventLoopBuilder, IO_DRIVER_ENV, IoDriver, MAX_IDLE_SPIN,
};
pub use context::{in_block_on, may_block, outside_loop, set_in_block_on};
pub use defer::defer;
pub use error::{
    AwaitTerminationError, ConfigError, DriveError, LoopShutDown, RejectReason, RejectedExecution, ScheduleError,
    SpawnLocalError, is_loop_shut_down,
};
pub use event_loop::{EventLoop, StandInContext, block_in_place_scope};
pub use handle::EventLoopHandle;
pub use handle::timers::ScheduledHandle;
pub use metrics::LoopMetrics;
pub use scheduled::{TimerKey, TimerRegistration, TimerState};
pub use tail::TailTaskHandle;
pub use task::{AbortHandle, FallibleTask, Task};
pub use termination::TerminationFuture;
#[cfg(tokio_unstable)]
pub use unstable::{BucketOf, PollTimes, UnstableMetrics};

/// The life of a loop (design §2). States only move forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum LoopState {
    /// Created; nobody has driven it yet.
    NotStarted = 0,
    /// Being driven.
    Started = 1,
    /// `shutdown_gracefully` was called: still accepting and running tasks until the
    /// quiet period or the timeout ends.
    ShuttingDown = 2,
    /// No longer accepting tasks; running the final drain.
    Shutdown = 3,
    /// Done: every task and registration is gone.
    Terminated = 4,
}

impl LoopState {
    pub(crate) fn from_u8(v: u8) -> LoopState {
        match v {
            0 => LoopState::NotStarted,
            1 => LoopState::Started,
            2 => LoopState::ShuttingDown,
            3 => LoopState::Shutdown,
            _ => LoopState::Terminated,
        }
    }
}
