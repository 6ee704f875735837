//! Loop tasks: futures pinned to one event loop, with a header built for that.
//!
//! A general-purpose task (async-task's, tokio's) must assume any thread may wake,
//! poll or cancel it at any moment, so every wake and every poll is a compare-and-swap
//! on a shared state word: three atomic read-modify-writes for a task that yields
//! once. A netloop task is only ever polled on its own loop's thread, so its
//! scheduling state can be owned by that thread: here a wake from the loop's own
//! thread, a yield, and a poll are plain loads and stores on a `Cell`. Only what other
//! threads must see is atomic: the reference count, the outcome, the join handle's
//! waker handshake, and a wake from another thread, which travels through the inbox
//! as a runnable of its own (see `raw` for the state, `schedule` for both wake paths).
//!
//! What a user sees is the same contract as async-task's with panics propagated:
//! [`Task`] is a future of the output, dropping it cancels, [`Task::detach`] lets the
//! task run, [`Task::fallible`] turns "dropped before finishing" into `None`, and a
//! panic in the future resumes where the task is awaited.

mod join;
mod raw;
mod runnable;
mod schedule;

use std::future::Future;
use std::sync::Arc;

pub use join::{AbortHandle, FallibleTask, Task};
pub(crate) use runnable::LoopRunnable;
pub(crate) use schedule::wake_by_ref_on;

use crate::block_cache::LocalBlocks;
use crate::shared::Shared;

/// What every loop task's header carries: the loop it belongs to.
pub(crate) struct TaskMeta {
    pub(crate) shared: Arc<Shared>,
}

/// Whether `waker` is a loop task's waker (of any loop).
pub(crate) fn is_loop_task_waker(waker: &std::task::Waker) -> bool {
    std::ptr::eq(waker.vtable(), &raw::WAKER_VTABLE)
}

/// Allocates a task for `future` on the loop `shared`, already scheduled: the caller
/// queues the runnable (or drops it, which cancels the task). `local`: the loop's own
/// block list if the caller is on the loop's thread (it already holds the core); `None`
/// for a spawn from another thread, which pads the block (see `raw::TaskCell`) and
/// takes it from the loop's shared cache.
///
/// # Safety
/// The future must be polled and dropped on one thread only. Loop tasks guarantee that
/// once the runnable is queued on the loop (only the loop runs its runnables, and a
/// local runnable is dropped only there); before that, the caller must either be on
/// the loop's thread, or hold a future whose not-yet-polled state may be dropped on
/// the calling thread. If the output is not `Send`, the returned `Task` must stay on
/// the loop's thread (it does, being `!Send` then).
pub(crate) unsafe fn new_unchecked<F>(
    shared: &Arc<Shared>,
    future: F,
    local: Option<&LocalBlocks>,
) -> (LoopRunnable, Task<F::Output>)
where
    F: Future + 'static,
    F::Output: 'static,
{
    let meta = TaskMeta { shared: shared.clone() };
    let ptr = match local {
        None => raw::allocate::<F, raw::CachePad>(meta, future, |class| shared.blocks.take(class)),
        Some(blocks) => raw::allocate::<F, ()>(meta, future, |class| blocks.take(class)),
    };
    // SAFETY: a fresh task with a handle reference and output type `F::Output`.
    (LoopRunnable::borrowing_loop_ref(ptr), unsafe { Task::from_raw(ptr) })
}

#[cfg(all(test, loom))]
mod loom_models;
#[cfg(all(test, not(loom)))]
mod tests;
