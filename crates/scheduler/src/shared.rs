//! What a runtime is made of, shared by its handles and by the context of every
//! thread in it: its loops, its blocking pool, its flavor and its settings.
//!
//! The bottom of the runtime's layers: it names no module that spawns, places or
//! enters (those read it), so the context, placement and the handle all build on it.

use std::sync::{Mutex, OnceLock};
use std::task::Waker;
use std::thread;
use std::time::Duration;

use crate::blocking::BlockingPool;
use crate::group::EventLoopGroup;
use crate::runtime::flavor::RuntimeFlavor;
use crate::runtime::id::Id;

/// What a runtime is made of, shared by its handles. Set once by the builder; only
/// the driver slot and `local_owner` change after.
pub(crate) struct Shared {
    pub(crate) group: EventLoopGroup,
    pub(crate) blocking: BlockingPool,
    pub(crate) flavor: RuntimeFlavor,
    /// current_thread: whose turn it is to drive the loop in `block_on`.
    pub(crate) driver: DriverSlot,
    /// The thread that created it, for a `LocalRuntime`: the only one that may spawn
    /// `!Send` tasks into it.
    pub(crate) local_owner: OnceLock<thread::ThreadId>,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) id: Id,
    pub(crate) name: Option<String>,
    /// `Builder::enable_io` was called: sockets and signals may be created.
    pub(crate) io_enabled: bool,
    /// `Builder::enable_time` was called: timers may be created.
    pub(crate) time_enabled: bool,
    /// The tokio runtime whose context every thread of this one enters.
    #[cfg(feature = "tokio-compat")]
    pub(crate) compat: crate::runtime::compat::Compat,
    /// What it keeps of tokio's unstable settings: hooks, histogram, seeds, ...
    #[cfg(tokio_unstable)]
    pub(crate) unstable: crate::runtime::unstable::RuntimeUnstable,
}

/// Whose turn it is to drive a current_thread runtime's loop: at most one `block_on`
/// caller holds `turn` at a time; the others wait in `waiters`, woken when it is let go.
#[derive(Default)]
pub(crate) struct DriverSlot {
    /// Held by the `block_on` caller that drives the loop.
    pub(crate) turn: Mutex<()>,
    /// `block_on` callers waiting for the driver, woken when it is let go.
    pub(crate) waiters: Mutex<Vec<Waker>>,
}
