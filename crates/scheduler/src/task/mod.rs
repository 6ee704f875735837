//! Tasks: futures pinned to event loops, with tokio's `task` API.

mod blocking;
#[cfg(tokio_unstable)]
mod builder;
pub mod coop;
pub(crate) mod error;
pub(crate) mod harness;
pub(crate) mod id;
pub(crate) mod join;
#[cfg(not(tokio_unstable))]
mod join_set;
/// `JoinSet` and its task builder (public under `--cfg tokio_unstable`, as tokio's).
#[cfg(tokio_unstable)]
pub mod join_set;
pub(crate) mod local;
pub(crate) mod spawn;
mod task_local;
#[cfg(all(tokio_unstable, feature = "tracing"))]
pub(crate) mod trace;

pub use blocking::{block_in_place, spawn_blocking};
#[cfg(tokio_unstable)]
pub use builder::Builder;
pub use coop::{Unconstrained, consume_budget, unconstrained};
pub use error::JoinError;
pub use id::{Id, id, try_id};
pub use join::{AbortHandle, JoinHandle};
pub use join_set::JoinSet;
pub use local::{LocalEnterGuard, LocalSet};
pub use spawn::{spawn, spawn_local, spawn_on, spawn_pinned, spawn_pinned_on, yield_now};
pub use task_local::{AccessError, LocalKey};

/// Futures of the task module (tokio's `task::futures`).
pub mod futures {
    pub use super::task_local::TaskLocalFuture;
}
