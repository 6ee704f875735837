//! `JoinHandle` and `AbortHandle`: a spawned task's output and its cancellation, with
//! tokio's semantics.

use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::error::JoinError;
use super::harness::WithId;
use super::id::Id;

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
    /// The reactor's task, of a loop, the blocking pool or a `LocalSet` (each is an
    /// executor of the task layer); it keeps the id, the abort request and a panic.
    /// Never cancels on drop: dropping a `JoinHandle` detaches.
    task: ManuallyDrop<netloop_reactor::FallibleTask<WithId<T>>>,
}

impl<T> JoinHandle<T> {
    /// A handle for a task spawned with its id.
    pub(crate) fn new(task: netloop_reactor::Task<WithId<T>>) -> Self {
        JoinHandle {
            task: ManuallyDrop::new(task.fallible()),
        }
    }

    /// Cancels the task. A task that has not finished is dropped at its next turn on
    /// its loop (or before its first poll), never mid-poll. A blocking task that has
    /// started runs to the end.
    pub fn abort(&self) {
        self.task.abort();
    }

    /// True once the task has finished (completed, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// A handle that can abort the task without owning the output.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            inner: self.task.abort_handle(),
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        Id::from_u64(self.task.id())
    }
}

impl<T: 'static> JoinHandle<T> {
    /// A handle whose task never ran (it was rejected): it resolves as cancelled.
    pub(crate) fn rejected(id: Id) -> Self {
        JoinHandle::new(netloop_reactor::task::cancelled(id.as_u64()))
    }
}

impl<T> Unpin for JoinHandle<T> {}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Awaiting a finished task spends a unit of the budget, as tokio's does: a loop
        // over many finished handles (a `JoinSet`) still yields.
        let coop = std::task::ready!(netloop_reactor::coop::poll_proceed(cx));
        let id = self.id();
        let polled = self.task.poll_outcome(cx).map(|outcome| match outcome {
            Some(Ok(output)) => Ok(output.into_inner()),
            Some(Err(payload)) => Err(JoinError::panic(id, payload)),
            // Dropped before it finished: aborted, or its executor shut down.
            None => Err(JoinError::cancelled(id)),
        });
        if polled.is_ready() {
            coop.made_progress();
        }
        polled
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // SAFETY: the task is taken once, here, and the field is not used after.
        unsafe { ManuallyDrop::take(&mut self.task) }.detach();
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id())
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
    inner: netloop_reactor::AbortHandle,
}

impl AbortHandle {
    /// Cancels the task; see [`JoinHandle::abort`].
    pub fn abort(&self) {
        self.inner.abort();
    }

    /// True once `abort` was called on this task (by any handle).
    pub fn is_aborted(&self) -> bool {
        self.inner.is_aborted()
    }

    /// True once the task has finished (completed, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        Id::from_u64(self.inner.id())
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle").field("id", &self.id()).finish()
    }
}

// A handle is a reference to a task's shared state, which a panic cannot leave
// half-written (its transitions are atomic), so handles may cross `catch_unwind`.
impl<T> std::panic::UnwindSafe for JoinHandle<T> {}
impl<T> std::panic::RefUnwindSafe for JoinHandle<T> {}
impl std::panic::UnwindSafe for AbortHandle {}
impl std::panic::RefUnwindSafe for AbortHandle {}
