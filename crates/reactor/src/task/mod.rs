//! Tasks: futures pinned to one event loop, with a header built for that.
//!
//! This layer knows nothing of the loop. What it needs of one is the [`Schedule`]
//! trait: where a woken task's turn goes on the loop's own thread and from any other
//! thread, whether the current thread is the task's owner, and where blocks and the
//! live-task list are kept. The loop implements it once (`crate::schedule`); other
//! executors with one owner thread per task implement it again (the scheduler crate's
//! blocking pool and `LocalSet`), so that one handle type, one word wide, joins
//! every task.
//!
//! A general-purpose task (async-task's, tokio's) must assume any thread may wake,
//! poll or cancel it at any moment, so every wake and every poll is a compare-and-swap
//! on a shared state word. A task here is only ever polled on its owner's thread, so
//! its scheduling state is owned by that thread: a wake from the owner's thread, a
//! yield and a poll are plain loads and stores on a `Cell`. Only what other threads
//! must see is atomic: the reference count, the outcome, the join handle's waker
//! handshake, and a wake from another thread, which travels as a runnable of its own.
//!
//! | file | what it holds |
//! |---|---|
//! | `header.rs` | the type-erased `Header` and the vtable of typed operations |
//! | `state.rs` | every bit of both state words and every transition of them |
//! | `raw.rs` | the heap block: allocation, the future's stage, deallocation |
//! | `waker.rs` | the one waker vtable of every task |
//! | `runnable.rs` | [`Schedule`] and [`Runnable`]: one turn of a task, what runs it, both ways a wake makes one, and the task list's closing walks |
//! | `join.rs` | [`Task`], [`FallibleTask`] and [`AbortHandle`] |
//! | `list.rs` | [`TaskList`]: the owner's list of tasks that are waiting (links only) |
//! | `detached.rs` | [`cancelled`]: the handle of a task that never ran |
//!
//! What a user sees is async-task's contract with panics propagated: [`Task`] is a
//! future of the output, dropping it cancels, [`Task::detach`] lets the task run,
//! [`Task::fallible`] turns "dropped before finishing" into `None`, and a panic in the
//! future resumes where the task is awaited.

mod detached;
mod header;
mod join;
mod list;
mod raw;
mod runnable;
mod state;
mod waker;

use std::future::Future;

pub use crate::block_cache::{BlockCache, LocalBlocks};
pub use detached::cancelled;
pub use join::{AbortHandle, FallibleTask, Task};
pub use list::TaskList;
pub use runnable::{Runnable, Schedule};
pub(crate) use runnable::{defer_in_place, wake_in_place};
#[cfg(tokio_unstable)]
pub use waker::QuietWaker;
pub(crate) use waker::is_task_waker;
#[cfg(all(tokio_unstable, feature = "tracing"))]
pub use waker::record_span_id;

use crate::block_cache::alloc_block;

/// Allocates a task for `future`, with id `id`, owned by the executor `scheduler`
/// names, already scheduled: the caller queues the runnable (or drops it, which
/// cancels the task). `local`: the executor's own half if the caller is on the owner's
/// thread; `None` for a spawn from another thread.
///
/// # Safety
/// The future must be polled and dropped on one thread only. Tasks guarantee that
/// once the runnable is queued (only the owner runs its runnables, and a local
/// runnable is dropped only there); before that, the caller must either be on the
/// owner's thread, or hold a future whose not-yet-polled state may be dropped on the
/// calling thread. If the output is not `Send`, the returned `Task` must stay on the
/// owner's thread (it does, being `!Send` then).
pub unsafe fn spawn_unchecked<F, S>(
    scheduler: &S,
    future: F,
    local: Option<&S::Local>,
    id: u64,
) -> (Runnable<S>, Task<F::Output>)
where
    F: Future + 'static,
    F::Output: 'static,
    S: Schedule,
{
    let ptr = match local {
        None if S::PAD_REMOTE_SPAWNS => raw::allocate::<F, S, raw::CachePad>(scheduler.clone(), future, id, |class| {
            scheduler
                .remote_blocks()
                .map_or_else(|| alloc_block(class), |cache| cache.take(class))
        }),
        None => raw::allocate::<F, S, ()>(scheduler.clone(), future, id, alloc_block),
        Some(local) => raw::allocate::<F, S, ()>(scheduler.clone(), future, id, |class| {
            S::local_blocks(local).map_or_else(|| alloc_block(class), |cache| cache.take(class))
        }),
    };
    // SAFETY: a fresh task, scheduled, with a handle reference and output type
    // `F::Output`.
    unsafe { (Runnable::from_scheduled(ptr), Task::from_raw(ptr)) }
}

#[cfg(all(test, not(loom)))]
mod executor_tests;
#[cfg(all(test, loom))]
mod loom_models;
#[cfg(all(test, not(loom)))]
mod tests;
