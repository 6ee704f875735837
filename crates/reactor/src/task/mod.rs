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
//! | `runnable.rs` | [`Runnable`]: one turn of a task, and both ways a wake makes one |
//! | `join.rs` | [`Task`], [`FallibleTask`] and [`AbortHandle`] |
//! | `list.rs` | [`TaskList`]: the owner's list of tasks that are waiting |
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
pub use runnable::Runnable;
pub(crate) use runnable::{defer_in_place, wake_in_place};
#[cfg(tokio_unstable)]
pub use waker::QuietWaker;
pub(crate) use waker::is_task_waker;
#[cfg(all(tokio_unstable, feature = "tracing"))]
pub use waker::record_span_id;

use crate::block_cache::alloc_block;

/// What a task needs of the executor it belongs to: the event loop (its one
/// implementation in this crate), or another executor that keeps the same rule, one
/// owner thread per task.
///
/// The scheduler value (one `Arc` for the executor, say) is stored in every task's
/// block; the local half ([`Schedule::Local`]) exists only on the owner's thread. A
/// task's future is polled (by [`Runnable::run`]) and dropped only on its owner's
/// thread; wakes from that thread go to [`schedule_local`](Self::schedule_local) with
/// plain loads and stores, and wakes from any other thread to
/// [`schedule_remote`](Self::schedule_remote), as runnables of their own.
///
/// # Safety
/// The task layer trusts the owner check for the soundness of its unsynchronised state:
/// - [`with_current`](Self::with_current) passes a local half only on the thread that
///   owns it, and [`is_local`](Self::is_local) is true only for the local half of this
///   scheduler's own owner thread, so that every runnable run with a given local half
///   runs on one thread at a time;
/// - a local runnable (from [`spawn_unchecked`] or given to
///   [`schedule_local`](Self::schedule_local)) is run or dropped on the owner's thread
///   (the first hand-off from the spawning thread excepted, as `spawn_unchecked`
///   says); a runnable given to [`schedule_remote`](Self::schedule_remote) may be run
///   on the owner's thread or dropped anywhere.
pub unsafe trait Schedule: Clone + Send + Sync + Sized + 'static {
    /// The owner thread's half of the executor.
    type Local;

    /// Whether tasks spawned from another thread are padded to a cache-line pair of
    /// their own and take their blocks from [`remote_blocks`](Self::remote_blocks):
    /// worth it where such tasks, spawned back to back, then run at the same time on
    /// different threads (see `raw::TaskCell`).
    const PAD_REMOTE_SPAWNS: bool = false;

    /// Calls `f` with the local half of the executor the current thread drives, if any.
    fn with_current<R>(f: impl FnOnce(Option<&Self::Local>) -> R) -> R;

    /// True if `local` is this executor's local half: the owner check.
    fn is_local(&self, local: &Self::Local) -> bool;

    /// Calls `f` with the local half if the current thread is this executor's owner.
    ///
    /// `self` stays borrowed while `f` runs: a caller whose `f` may free the task
    /// holding `self` uses [`with_current`](Self::with_current) and
    /// [`is_local`](Self::is_local) instead.
    fn with_local<R>(&self, f: impl FnOnce(&Self::Local) -> R) -> Option<R> {
        Self::with_current(|local| local.filter(|local| self.is_local(local)).map(f))
    }

    /// Queues a turn of a task on its owner's thread (at the back of the run queue).
    ///
    /// Called inside `wake()`, whose caller may hold a lock that the task's destructor
    /// takes (h2 wakes its connection task with its streams' lock held), so this never
    /// drops the runnable, even once the executor has stopped: a stopped executor's
    /// sweep closes what is queued, outside every wake, as tokio's does.
    fn schedule_local(local: &Self::Local, runnable: Runnable<Self>);

    /// Queues a turn of a task that deferred its own wake while being polled, to run
    /// after the executor's next I/O poll. Never dropped here, as for
    /// [`schedule_local`](Self::schedule_local). An executor that does not defer (the
    /// default) queues it at once.
    fn defer_local(local: &Self::Local, runnable: Runnable<Self>) {
        Self::schedule_local(local, runnable);
    }

    /// Sends a turn of a task from another thread. Dropping the runnable here is
    /// allowed only where it holds nothing but a reference (its executor has closed
    /// every task), for the same reason as [`schedule_local`](Self::schedule_local).
    fn schedule_remote(&self, runnable: Runnable<Self>);

    /// Blocks for tasks spawned from other threads; `None` takes them from the
    /// allocator.
    fn remote_blocks(&self) -> Option<&BlockCache> {
        None
    }

    /// Blocks for tasks spawned on the owner's thread; `None` takes them from the
    /// allocator.
    fn local_blocks(local: &Self::Local) -> Option<&LocalBlocks> {
        let _ = local;
        None
    }

    /// The owner's list of waiting tasks: the executor queues them all
    /// ([`TaskList::queue_all`]) when it stops, to drop their futures on its thread.
    fn task_list(local: &Self::Local) -> &TaskList;

    /// A task's future panicked, on the owner's thread; `payload` is what the task's
    /// handle will report.
    fn task_panicked(&self, payload: &(dyn std::any::Any + Send)) {
        let _ = payload;
    }
}

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
