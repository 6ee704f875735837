//! What wraps a task's future: its id, for `task::id`, on every task; and for a task
//! off the loops (blocking pool, `LocalSet`), panic catching and the abort flag, which
//! a loop task keeps in its header instead.

use std::any::Any;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use super::JoinError;
use super::id::{Id, IdGuard};
use crate::sync::lock;

/// The abort flag shared by a task and its handles.
pub(crate) struct AbortState {
    pub(super) aborted: AtomicBool,
    /// Set when the task's future completes or is dropped.
    pub(super) finished: AtomicBool,
    /// The task's own waker, recorded at its first poll. An async-task waker never
    /// changes for a given task, so it is set once and read without a lock.
    waker: OnceLock<Waker>,
    /// The panic of the future's destructor, when it was dropped unfinished: the
    /// handle reports it (tokio's `JoinError::Panic`) instead of a cancellation.
    pub(super) drop_panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl AbortState {
    pub(super) fn abort(&self) {
        if !self.aborted.swap(true, AcqRel)
            && let Some(w) = self.waker.get()
        {
            w.wake_by_ref();
        }
    }
}

pin_project_lite::pin_project! {
    /// What runs for a task off the loops (blocking pool, `LocalSet`): the user's
    /// future, plus panic handling, the task id and the abort flag. async-task neither
    /// catches panics nor knows abort, so this layer does both.
    pub(crate) struct Guarded<F> {
        // Dropped by hand, in `drop`: with the task id set, and with a panic caught
        // (async-task would abort the process on it).
        #[pin]
        future: ManuallyDrop<F>,
        abort: Arc<AbortState>,
        id: Id,
    }

    impl<F> PinnedDrop for Guarded<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let dropped = {
                let _id = IdGuard::enter(*this.id);
                // SAFETY: the future is dropped once, here, where it lies (it is pinned),
                // and the struct holding it is being dropped: nothing uses it after.
                catch_unwind(AssertUnwindSafe(|| unsafe { ManuallyDrop::drop(this.future.get_unchecked_mut()) }))
            };
            if let Err(payload) = dropped {
                *lock(&this.abort.drop_panic) = Some(payload);
            }
            this.abort.finished.store(true, Release);
        }
    }
}

pin_project_lite::pin_project! {
    /// What runs for a loop task: the user's future with its task id, for
    /// [`task::id`](super::id()). Nothing else: the loop task catches panics itself
    /// and keeps abort requests in its header, and the handle turns both into a
    /// [`JoinError`]. Its output is the future's own, so no `Result` is built or
    /// copied per poll.
    pub(crate) struct Identified<F> {
        // Dropped by hand, in `drop`, with the task id set: a destructor may ask for it.
        #[pin]
        future: ManuallyDrop<F>,
        id: Id,
    }

    impl<F> PinnedDrop for Identified<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let _id = IdGuard::enter(*this.id);
            // SAFETY: the future is dropped once, here, where it lies (it is pinned), and
            // the struct holding it is being dropped: nothing uses it after. A panic
            // unwinds to the loop task, which catches it.
            unsafe { ManuallyDrop::drop(this.future.get_unchecked_mut()) }
        }
    }
}

impl<F: Future> Future for Identified<F> {
    type Output = WithId<F::Output>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WithId<F::Output>> {
        let this = self.project();
        let id = *this.id;
        let _id = IdGuard::enter(id);
        // SAFETY: `ManuallyDrop` is a transparent wrapper: pinning it pins the future.
        unsafe { this.future.map_unchecked_mut(|f| &mut **f) }
            .poll(cx)
            .map(|value| WithId { value: Some(value), id })
    }
}

/// A loop task's output while the task holds it: dropped with the task's id set (its
/// destructor may ask for it, as on tokio), whether the task drops it because nobody
/// joins, or a `JoinHandle` dropped after completion does. A join takes it out whole.
pub(crate) struct WithId<T> {
    /// `None` once taken.
    value: Option<T>,
    id: Id,
}

impl<T> WithId<T> {
    pub(super) fn into_inner(mut self) -> T {
        self.value.take().expect("an output is taken once")
    }
}

impl<T> Drop for WithId<T> {
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            let _id = IdGuard::enter(self.id);
            drop(value);
        }
    }
}

/// Wraps a loop task's future.
pub(crate) fn identify<F: Future>(future: F, id: Id) -> Identified<F> {
    Identified {
        future: ManuallyDrop::new(future),
        id,
    }
}

impl<F: Future> Future for Guarded<F> {
    type Output = Result<F::Output, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if this.abort.aborted.load(Acquire) {
            return Poll::Ready(Err(JoinError::cancelled(*this.id)));
        }
        let id = *this.id;
        // SAFETY: `ManuallyDrop` is a transparent wrapper: pinning it pins the future.
        let future = unsafe { this.future.map_unchecked_mut(|f| &mut **f) };
        let polled = {
            let _id = IdGuard::enter(id);
            catch_unwind(AssertUnwindSafe(|| future.poll(cx)))
        };
        match polled {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => {
                // Only a task that waits can be aborted while waiting, so the waker is
                // recorded the first time it pends (most short tasks never do).
                if this.abort.waker.get().is_none() {
                    let _ = this.abort.waker.set(cx.waker().clone());
                    // An abort before the waker was there woke nobody: honour it now.
                    if this.abort.aborted.load(Acquire) {
                        return Poll::Ready(Err(JoinError::cancelled(id)));
                    }
                }
                Poll::Pending
            }
            Err(payload) => Poll::Ready(Err(JoinError::panic(id, payload))),
        }
    }
}

/// A fresh abort flag, for a task off the loops.
pub(crate) fn new_abort_state() -> Arc<AbortState> {
    Arc::new(AbortState {
        aborted: AtomicBool::new(false),
        finished: AtomicBool::new(false),
        waker: OnceLock::new(),
        drop_panic: Mutex::new(None),
    })
}

/// Wraps the future of a task off the loops, which checks `abort` at every poll.
pub(crate) fn guard_with_flag<F: Future>(future: F, abort: Arc<AbortState>, id: Id) -> Guarded<F> {
    Guarded {
        future: ManuallyDrop::new(future),
        abort,
        id,
    }
}
