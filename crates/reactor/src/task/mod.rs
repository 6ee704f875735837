//! Tasks: futures pinned to one event loop, with a header built for that.
//!
//! This layer knows nothing of the loop. What it needs of one is the [`Schedule`]
//! trait: where a woken task's turn goes on the loop's own thread and from any other
//! thread, whether the current thread is the task's owner, and where blocks and the
//! live-task list are kept. The loop implements it once (`crate::schedule`); the
//! tests here could implement it again.
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
//! | `header.rs` | the type-erased [`Header`] and the vtable of typed operations |
//! | `state.rs` | every bit of both state words and every transition of them |
//! | `raw.rs` | the heap block: allocation, the future's stage, deallocation |
//! | `waker.rs` | the one waker vtable of every task |
//! | `runnable.rs` | [`Runnable`]: one turn of a task, and both ways a wake makes one |
//! | `join.rs` | [`Task`], [`FallibleTask`] and [`AbortHandle`] |
//! | `list.rs` | [`TaskList`]: the owner's list of tasks that are waiting |
//!
//! What a user sees is async-task's contract with panics propagated: [`Task`] is a
//! future of the output, dropping it cancels, [`Task::detach`] lets the task run,
//! [`Task::fallible`] turns "dropped before finishing" into `None`, and a panic in the
//! future resumes where the task is awaited.

mod header;
mod join;
mod list;
mod raw;
mod runnable;
mod state;
mod waker;

use std::future::Future;

pub use join::{AbortHandle, FallibleTask, Task};
pub(crate) use list::TaskList;
pub(crate) use runnable::{Runnable, wake_in_place};
pub(crate) use waker::is_task_waker;

use crate::block_cache::{BlockCache, LocalBlocks};

/// What a task needs of the loop it belongs to.
///
/// The scheduler value (one `Arc` for the loop) is stored in every task's block; the
/// local half ([`Schedule::Local`]) exists only on the owner's thread.
pub(crate) trait Schedule: Clone + Send + Sync + Sized + 'static {
    /// The owner thread's half of the loop.
    type Local;

    /// Calls `f` with the local half of the loop the current thread drives, if any.
    fn with_current<R>(f: impl FnOnce(Option<&Self::Local>) -> R) -> R;

    /// True if `local` is this loop's local half: the owner check.
    fn is_local(&self, local: &Self::Local) -> bool;

    /// Calls `f` with the local half if the current thread is this loop's owner.
    ///
    /// `self` stays borrowed while `f` runs: a caller whose `f` may free the task
    /// holding `self` uses [`with_current`](Self::with_current) and
    /// [`is_local`](Self::is_local) instead.
    fn with_local<R>(&self, f: impl FnOnce(&Self::Local) -> R) -> Option<R> {
        Self::with_current(|local| local.filter(|local| self.is_local(local)).map(f))
    }

    /// Queues a turn of a task on its owner's thread (at the back of the run queue).
    fn schedule_local(local: &Self::Local, runnable: Runnable<Self>);

    /// Sends a turn of a task from another thread.
    fn schedule_remote(&self, runnable: Runnable<Self>);

    /// Blocks for tasks spawned from other threads.
    fn remote_blocks(&self) -> &BlockCache;

    /// Blocks for tasks spawned on the owner's thread.
    fn local_blocks(local: &Self::Local) -> &LocalBlocks;

    /// The owner's list of waiting tasks.
    fn task_list(local: &Self::Local) -> &TaskList;

    /// A task's future panicked, on the owner's thread; `payload` is what the task's
    /// handle will report.
    fn task_panicked(&self, payload: &(dyn std::any::Any + Send)) {
        let _ = payload;
    }
}

/// Allocates a task for `future`, owned by the loop `scheduler` names, already
/// scheduled: the caller queues the runnable (or drops it, which cancels the task).
/// `local`: the loop's own half if the caller is on the owner's thread; `None` for a
/// spawn from another thread, which pads the block (see `raw::TaskCell`) and takes
/// it from the loop's shared cache.
///
/// # Safety
/// The future must be polled and dropped on one thread only. Tasks guarantee that
/// once the runnable is queued on the loop (only the owner runs its runnables, and a
/// local runnable is dropped only there); before that, the caller must either be on
/// the owner's thread, or hold a future whose not-yet-polled state may be dropped on
/// the calling thread. If the output is not `Send`, the returned `Task` must stay on
/// the owner's thread (it does, being `!Send` then).
pub(crate) unsafe fn spawn_unchecked<F, S>(
    scheduler: &S,
    future: F,
    local: Option<&S::Local>,
) -> (Runnable<S>, Task<F::Output>)
where
    F: Future + 'static,
    F::Output: 'static,
    S: Schedule,
{
    let ptr = match local {
        None => raw::allocate::<F, S, raw::CachePad>(scheduler.clone(), future, |class| {
            scheduler.remote_blocks().take(class)
        }),
        Some(local) => raw::allocate::<F, S, ()>(scheduler.clone(), future, |class| S::local_blocks(local).take(class)),
    };
    // SAFETY: a fresh task, scheduled, with a handle reference and output type
    // `F::Output`.
    unsafe { (Runnable::from_scheduled(ptr), Task::from_raw(ptr)) }
}

#[cfg(all(test, loom))]
mod loom_models;
#[cfg(all(test, not(loom)))]
mod tests;
