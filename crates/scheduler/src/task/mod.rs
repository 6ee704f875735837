//! Tasks: futures pinned to event loops, with tokio's `task` API.

pub mod coop;
pub(crate) mod join;
mod join_set;
mod local;
pub(crate) mod spawn;
mod task_local;

pub use coop::{Unconstrained, consume_budget, unconstrained};
pub use join::{AbortHandle, Id, JoinError, JoinHandle, id, try_id};
pub use join_set::JoinSet;
pub use local::LocalSet;
pub use spawn::{spawn, spawn_local, spawn_pinned, spawn_pinned_on, yield_now};
pub use task_local::{AccessError, LocalKey};

/// Futures of the task module (tokio's `task::futures`).
pub mod futures {
    pub use super::task_local::TaskLocalFuture;
}

use std::future::Future;

/// Runs a blocking closure on the runtime's blocking pool (tokio's
/// `task::spawn_blocking`). Panics outside a runtime.
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    crate::runtime::Handle::current().spawn_blocking(f)
}

/// Spawns `future` on a specific event loop, for life.
pub fn spawn_on<F>(event_loop: &netloop_reactor::EventLoopHandle, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    spawn::spawn_on(event_loop, future)
}
