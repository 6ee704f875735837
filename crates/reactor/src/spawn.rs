//! Spawning tasks on a loop (see `task` for the task itself).
//!
//! Every future spawned on a loop is polled and dropped on that loop's thread: a task
//! that waits joins the loop's task list, and at termination the loop queues every
//! listed task and drops what it queued (outside any wake), so a `spawn_local` future
//! is never dropped anywhere else (which would be unsound).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::LoopState;
use crate::context;
use crate::core::Core;
use crate::error::{RejectReason, RejectedExecution, SpawnLocalError};
use crate::shared::Shared;
use crate::task::{self, Task};

/// Allocates a task on the loop's own thread and queues it there.
///
/// # Safety
/// As [`task::spawn_unchecked`]; `core` is the core of `shared`'s loop, driven by
/// this thread, so the future is polled and dropped here.
unsafe fn spawn_here<F>(core: &Core, shared: &Arc<Shared>, future: F, id: u64, send: bool) -> Task<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    // SAFETY: per the contract.
    let (runnable, task) = unsafe { task::spawn_unchecked(shared, future, Some(core), id) };
    if send {
        // SAFETY: just spawned; `send` says the future and its output are `Send`.
        unsafe { runnable.mark_send() };
    }
    #[cfg(tokio_unstable)]
    crate::schedule::counts::local_schedule(core);
    core.local.push_wake(runnable);
    task
}

/// [`spawn_here`] for a `Send` future that may start on another loop of the group
/// (`share_work`): its first turn is queued movable.
fn spawn_here_movable<F>(core: &Core, shared: &Arc<Shared>, future: F, id: u64) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: on the loop's own thread (the caller has its core); the future and its
    // output are `Send`, so whichever loop's thread polls and drops them is fine, which
    // is also what `into_movable` asks of the fresh runnable.
    let (runnable, task) = unsafe { task::spawn_unchecked(shared, future, Some(core), id) };
    // SAFETY: the runnable `spawn_unchecked` just returned, for a `Send` future with a
    // `Send` output.
    unsafe { runnable.mark_send() };
    #[cfg(tokio_unstable)]
    crate::schedule::counts::local_schedule(core);
    // SAFETY: as above.
    core.local.push_movable(unsafe { runnable.into_movable() });
    task
}

/// Spawns a `Send` future on the loop `shared` belongs to, from any thread; spawned on
/// the loop's own thread, it may start on another loop of its group if this one is
/// busy and that one idle (`share_work`). It stays where it is first polled.
pub(crate) fn spawn_movable<F>(shared: &Arc<Shared>, future: F, id: u64) -> Result<Task<F::Output>, RejectedExecution>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if shared.state() >= LoopState::Shutdown {
        return Err(RejectedExecution::new(RejectReason::Shutdown, None));
    }
    match context::on_own_core(shared, future, |core, future| {
        spawn_here_movable(core, shared, future, id)
    }) {
        Ok(task) => Ok(task),
        Err(future) => spawn(shared, future, id),
    }
}

/// Admits, allocates and queues a new task, asking once which thread this is: on the
/// loop's own thread the task goes straight into the run queue; from any other thread
/// it is refused past `max_pending_tasks` (a spawn from elsewhere is a new submission
/// and counts like `execute`; later wakes of the task never do) and goes through the
/// inbox. Refused after shutdown either way.
///
/// # Safety
/// As [`task::spawn_unchecked`]: `future` may be dropped on this thread if it is
/// refused, and is otherwise polled and dropped on the loop's thread only.
unsafe fn submit_new<F>(
    shared: &Arc<Shared>,
    future: F,
    id: u64,
    send: bool,
) -> Result<Task<F::Output>, RejectedExecution>
where
    F: Future + 'static,
    F::Output: 'static,
{
    if shared.state() >= LoopState::Shutdown {
        return Err(RejectedExecution::new(RejectReason::Shutdown, None));
    }
    // SAFETY: per the contract; on the loop's own thread.
    let future = match context::on_own_core(shared, future, |core, future| unsafe {
        spawn_here(core, shared, future, id, send)
    }) {
        Ok(task) => return Ok(task),
        Err(future) => future,
    };
    if let Err(reason) = shared.inbox.admit() {
        return Err(RejectedExecution::new(reason, None));
    }
    // SAFETY: per the contract; spawned from another thread.
    let (runnable, task) = unsafe { task::spawn_unchecked(shared, future, None, id) };
    if send {
        // SAFETY: just spawned; `send` says the future and its output are `Send`.
        unsafe { runnable.mark_send() };
    }
    #[cfg(tokio_unstable)]
    crate::schedule::counts::schedule(shared);
    shared.schedule_new_remote(runnable);
    Ok(task)
}

/// Spawns a `Send` future on the loop `shared` belongs to, from any thread.
pub(crate) fn spawn<F>(shared: &Arc<Shared>, future: F, id: u64) -> Result<Task<F::Output>, RejectedExecution>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: the future and its output are `Send`, so any thread may drop them.
    unsafe { submit_new(shared, future, id, true) }
}

/// Spawns a `!Send` future; only on the loop's own thread.
pub(crate) fn spawn_local<F>(shared: &Arc<Shared>, future: F, id: u64) -> Result<Task<F::Output>, SpawnLocalError>
where
    F: Future + 'static,
    F::Output: 'static,
{
    context::on_own_core(shared, future, |core, future| {
        if core.local.state.get() >= LoopState::Shutdown {
            return Err(SpawnLocalError::Shutdown);
        }
        // SAFETY: on the loop's own thread, and the runnable is queued right here: the
        // future is created, polled and dropped on this thread only. A `!Send` output
        // makes the `Task` `!Send`, so it stays here too.
        Ok(unsafe { spawn_here(core, shared, future, id, false) })
    })
    .unwrap_or(Err(SpawnLocalError::NotOnLoop))
}

/// A `!Send` future that does not exist yet: `make` builds it at the first poll, on
/// the loop's thread.
///
/// The future gets a box of its own rather than living in the task's block: a
/// connection's future can be large (a handler's buffers), and the task's value is
/// moved a few times on its way into the block and out of it at the end, each move a
/// copy of its whole size. Boxed, those moves copy two words.
struct BuildOnFirstPoll<M, Fut> {
    make: Option<M>,
    future: Option<Pin<Box<Fut>>>,
}

impl<M, Fut> Future for BuildOnFirstPoll<M, Fut>
where
    M: FnOnce() -> Fut,
    Fut: Future,
{
    type Output = Fut::Output;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
        // Both fields are Unpin (an FnOnce value is moved out, the future is boxed).
        let this = &mut *self;
        // Looked at before it is taken: `take` copies the whole closure (the socket
        // and the handler, for a connection) out at every poll.
        if this.make.is_some()
            && let Some(make) = this.make.take()
        {
            this.future = Some(Box::pin(make()));
        }
        match this.future.as_mut() {
            Some(f) => f.as_mut().poll(cx),
            // Only after `make` panicked, which failed the task: it is not polled again.
            None => Poll::Pending,
        }
    }
}

impl<M, Fut> Unpin for BuildOnFirstPoll<M, Fut> {}

/// Spawns, from any thread, a `!Send` future built on the loop by a `Send` closure:
/// one hop, no channel (tokio-util's `spawn_pinned`).
pub(crate) fn spawn_pinned<M, Fut>(
    shared: &Arc<Shared>,
    make: M,
    id: u64,
) -> Result<Task<Fut::Output>, RejectedExecution>
where
    M: FnOnce() -> Fut + Send + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    let future = BuildOnFirstPoll {
        make: Some(make),
        future: None,
    };
    // SAFETY: the future is `!Send` only once `make` has run, and `make` runs at the
    // first poll. Every poll of a loop task happens on the loop's thread (all wakes go
    // there and only the loop runs runnables), and a queued local runnable is only
    // ever dropped there. The one exception is a runnable rejected before its first
    // poll, whose future still holds only `make: Send`. So the
    // `!Send` value is created, polled and dropped on a single thread. The output is
    // `Send`, so the `Task` may be awaited and dropped anywhere.
    unsafe { submit_new(shared, future, id, false) }
}
