//! The task API's calls for blocking work: `spawn_blocking` (onto the runtime's
//! blocking pool, through its handle) and `block_in_place` (on this thread, the loop
//! handed to a stand-in meanwhile). Above the handle and `block_on`, which they use.

use netloop_reactor::EventLoopHandle;

use super::join::JoinHandle;
use super::local::in_local_set;
use crate::context;
use crate::placement;
use crate::runtime::block_on::outside_block_on;
use crate::runtime::flavor::RuntimeFlavor;
use crate::runtime::handle::Handle;

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
    Handle::current().spawn_blocking(f)
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
/// On the loop of a current-thread runtime, and inside a [`LocalSet`](crate::task::LocalSet) (whose tasks could
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
    let on_current_thread_loop = EventLoopHandle::with_current(|l| l.is_some())
        && context::with_current(|rt| rt.is_some_and(|rt| rt.flavor == RuntimeFlavor::CurrentThread));
    if on_current_thread_loop || in_local_set() {
        panic!("can call blocking only when running on the multi-threaded runtime");
    }
    placement::blocking_in_place(|| outside_block_on(f))
}
