//! `JoinHandle` and `AbortHandle`: a spawned task's output and its cancellation, with
//! tokio's semantics.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Acquire;
use std::task::{Context, Poll};

use super::harness::{AbortState, WithId};
use super::{Id, JoinError};
use crate::sync::lock;

/// An owned permission to join a task: awaiting it gives the task's output
/// (tokio's `JoinHandle`).
///
/// Dropping the handle detaches the task: it keeps running. [`abort`](Self::abort)
/// cancels it; awaiting then gives a [`JoinError`] for which `is_cancelled()` is true,
/// unless the task had already finished.
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let handles: Vec<_> = (1..=3u64).map(|i| task::spawn(async move { i * 10 })).collect();
///     let mut sum = 0;
///     for handle in handles {
///         sum += handle.await.unwrap(); // `Err` only if the task panicked or was aborted
///     }
///     assert_eq!(sum, 60);
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct JoinHandle<T> {
    /// `None` for a task that was rejected (its runtime shut down): it never ran.
    task: Option<Inner<T>>,
    id: Id,
}

/// The task behind a handle: a loop task (abort lives in its header, a panic comes
/// back as a payload), or an async-task task of the blocking pool or a `LocalSet`,
/// whose `Guarded` future reports both itself.
enum Inner<T> {
    Loop(netloop_reactor::FallibleTask<WithId<T>>),
    Plain(async_task::FallibleTask<Result<T, JoinError>>, Arc<AbortState>),
}

impl<T> Inner<T> {
    fn is_finished(&self) -> bool {
        match self {
            Inner::Loop(t) => t.is_finished(),
            Inner::Plain(t, _) => t.is_finished(),
        }
    }

    /// The task's result; `None` when its future was dropped unfinished.
    fn poll(&mut self, cx: &mut Context<'_>, id: Id) -> Poll<Option<Result<T, JoinError>>> {
        match self {
            Inner::Loop(t) => t.poll_outcome(cx).map(|outcome| {
                outcome.map(|outcome| {
                    outcome
                        .map(WithId::into_inner)
                        .map_err(|payload| JoinError::panic(id, payload))
                })
            }),
            Inner::Plain(t, abort) => Pin::new(t).poll(cx).map(|outcome| {
                // Dropped unfinished: a panic in the destructor is the outcome.
                outcome.or_else(|| {
                    let payload = lock(&abort.drop_panic).take();
                    payload.map(|payload| Err(JoinError::panic(id, payload)))
                })
            }),
        }
    }

    fn detach(self) {
        match self {
            Inner::Loop(t) => t.detach(),
            Inner::Plain(t, _) => t.detach(),
        }
    }

    fn abort(&self) {
        match self {
            Inner::Loop(t) => t.abort(),
            Inner::Plain(_, flag) => flag.abort(),
        }
    }

    fn abort_handle(&self) -> AbortInner {
        match self {
            Inner::Loop(t) => AbortInner::Loop(t.abort_handle()),
            Inner::Plain(_, flag) => AbortInner::Flag(flag.clone()),
        }
    }
}

impl<T> JoinHandle<T> {
    /// A handle for a task spawned on an event loop.
    pub(crate) fn new(task: netloop_reactor::Task<WithId<T>>, id: Id) -> Self {
        JoinHandle {
            task: Some(Inner::Loop(task.fallible())),
            id,
        }
    }

    /// A handle for a task of the blocking pool or a `LocalSet`.
    pub(crate) fn new_plain(task: async_task::Task<Result<T, JoinError>>, abort: Arc<AbortState>, id: Id) -> Self {
        JoinHandle {
            task: Some(Inner::Plain(task.fallible(), abort)),
            id,
        }
    }

    /// A handle whose task never ran (it was rejected): it resolves as cancelled.
    pub(crate) fn rejected(id: Id) -> Self {
        JoinHandle { task: None, id }
    }

    /// Cancels the task. A task that has not finished is dropped at its next turn on
    /// its loop (or before its first poll), never mid-poll.
    pub fn abort(&self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }

    /// True once the task has finished (completed, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(Inner::is_finished)
    }

    /// A handle that can abort the task without owning the output.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            inner: self.task.as_ref().map_or(AbortInner::Rejected, Inner::abort_handle),
            id: self.id,
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        self.id
    }
}

impl<T> Unpin for JoinHandle<T> {}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = self.id;
        let Some(task) = self.task.as_mut() else {
            return Poll::Ready(Err(JoinError::cancelled(id)));
        };
        match task.poll(cx, id) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(out)) => Poll::Ready(out),
            // The runnable was dropped unrun: the loop shut down.
            Poll::Ready(None) => Poll::Ready(Err(JoinError::cancelled(id))),
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.detach();
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Aborts a task without owning its output (tokio's `AbortHandle`).
///
/// It can be cloned and handed to whoever decides when the task should stop, while
/// the [`JoinHandle`] stays with whoever wants the result:
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::{runtime::Builder, task, time};
///
/// let rt = Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     let worker = task::spawn(time::sleep(Duration::from_secs(60)));
///     let stop = worker.abort_handle();
///
///     stop.abort();
///     assert!(worker.await.unwrap_err().is_cancelled());
///     assert!(stop.is_finished());
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct AbortHandle {
    inner: AbortInner,
    id: Id,
}

#[derive(Clone)]
enum AbortInner {
    Loop(netloop_reactor::AbortHandle),
    Flag(Arc<AbortState>),
    /// The task was rejected at spawn: finished, never aborted.
    Rejected,
}

impl AbortHandle {
    /// Cancels the task; see [`JoinHandle::abort`].
    pub fn abort(&self) {
        match &self.inner {
            AbortInner::Loop(h) => h.abort(),
            AbortInner::Flag(flag) => flag.abort(),
            AbortInner::Rejected => {}
        }
    }

    /// True once `abort` was called on this task (by any handle).
    pub fn is_aborted(&self) -> bool {
        match &self.inner {
            AbortInner::Loop(h) => h.is_aborted(),
            AbortInner::Flag(flag) => flag.aborted.load(Acquire),
            AbortInner::Rejected => false,
        }
    }

    /// True once the task has finished (completed, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        match &self.inner {
            AbortInner::Loop(h) => h.is_finished(),
            AbortInner::Flag(flag) => flag.finished.load(Acquire),
            AbortInner::Rejected => true,
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        self.id
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle").field("id", &self.id).finish()
    }
}

// A handle is a reference to a task's shared state, which a panic cannot leave
// half-written (its transitions are atomic), so handles may cross `catch_unwind`.
impl<T> std::panic::UnwindSafe for JoinHandle<T> {}
impl<T> std::panic::RefUnwindSafe for JoinHandle<T> {}
impl std::panic::UnwindSafe for AbortHandle {}
impl std::panic::RefUnwindSafe for AbortHandle {}
