//! Tasks: futures pinned to event loops, with tokio's `task` API.

#[cfg(tokio_unstable)]
mod builder;
pub mod coop;
mod error;
pub(crate) mod harness;
mod id;
mod join;
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

#[cfg(tokio_unstable)]
pub use builder::Builder;
pub use coop::{Unconstrained, consume_budget, unconstrained};
pub use error::JoinError;
pub use id::{Id, id, try_id};
pub use join::{AbortHandle, JoinHandle};
pub use join_set::JoinSet;
pub use local::{LocalEnterGuard, LocalSet};
pub use spawn::{spawn, spawn_local, spawn_pinned, spawn_pinned_on, yield_now};
pub use task_local::{AccessError, LocalKey};

/// Futures of the task module (tokio's `task::futures`).
pub mod futures {
    pub use super::task_local::TaskLocalFuture;
}

use std::future::Future;

use crate::shared::RuntimeFlavor;

/// Runs a blocking closure on the runtime's blocking pool (tokio's
/// `task::spawn_blocking`). Panics outside a runtime, and, as tokio does, when the pool
/// has no thread and the OS refuses to start one ("OS can't spawn worker thread").
///
/// For work that would hold up a loop: blocking calls (a synchronous library, a
/// file), or a long computation. The loops go on serving their tasks meanwhile.
///
/// ```
/// use netloop_scheduler::{runtime::Runtime, task};
///
/// let rt = Runtime::new()?;
/// let sum = rt.block_on(async {
///     task::spawn_blocking(|| (1..=1_000_000u64).sum::<u64>()).await.unwrap()
/// });
/// assert_eq!(sum, 500_000_500_000);
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    crate::runtime::Handle::current().spawn_blocking(f)
}

/// Runs the blocking closure `f` on this thread (tokio's `task::block_in_place`).
///
/// On a netloop loop thread, the loop's tasks that have not started move to the
/// group's other loops, and a stand-in thread polls the loop's sockets, runs its other
/// `Send` tasks and fires its timers while `f` runs. The loop's `!Send` tasks wait for
/// `f` to return (they may share state with the caller). Prefer [`spawn_blocking`],
/// which runs `f` on the blocking pool and leaves the loop whole. Inside `f` the
/// thread counts as off the loops: `f` may `block_on`
/// (another runtime, or this one's handle), and what it spawns goes to the runtime's
/// other loops. In `block_on` of a multi-thread runtime, or outside any runtime, `f`
/// simply runs.
///
/// # Panics
///
/// On the loop of a current-thread runtime, and inside a [`LocalSet`] (whose tasks could
/// not run meanwhile), as tokio does: "can call blocking only when running on the
/// multi-threaded runtime".
///
/// ```
/// use netloop_scheduler::{runtime::Runtime, task};
///
/// let rt = Runtime::new()?;
/// let task = rt.spawn(async {
///     // Borrows from the task are fine, unlike with `spawn_blocking`.
///     let config = String::from("key = value");
///     task::block_in_place(|| config.split(" = ").count())
/// });
/// assert_eq!(rt.block_on(task).unwrap(), 2);
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn block_in_place<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    let on_current_thread_loop = netloop_reactor::EventLoopHandle::with_current(|l| l.is_some())
        && crate::context::with_current(|rt| rt.is_some_and(|rt| rt.flavor == RuntimeFlavor::CurrentThread));
    if on_current_thread_loop || local::in_local_set() {
        panic!("can call blocking only when running on the multi-threaded runtime");
    }
    crate::placement::blocking_in_place(|| crate::runtime::outside_block_on(f))
}

/// Spawns `future` on a specific event loop, for life.
///
/// For placing tasks by hand, such as all the tasks of one shard on one loop:
///
/// ```
/// use netloop_scheduler::runtime::{Builder, Handle};
/// use netloop_scheduler::task;
///
/// let rt = Builder::new_multi_thread().worker_threads(2).build()?;
/// let on_second = rt.block_on(async {
///     let second = Handle::current().event_loops().get(1).unwrap().clone();
///     task::spawn_on(&second, async { netloop_scheduler::runtime::worker_index() }).await
/// });
/// assert_eq!(on_second.unwrap(), Some(1));
/// # Ok::<(), std::io::Error>(())
/// ```
#[cfg_attr(tokio_unstable, track_caller)]
pub fn spawn_on<F>(event_loop: &netloop_reactor::EventLoopHandle, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    spawn::spawn_on(event_loop, future, harness::Origin::caller())
}
