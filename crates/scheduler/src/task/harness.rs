//! What wraps a task's future: its id, for `task::id`. Everything else a handle
//! reports (a panic, an abort, the id itself) the reactor's task keeps in its header,
//! for the loops' tasks, the blocking pool's and a `LocalSet`'s alike.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::id::{Id, IdGuard};

pin_project_lite::pin_project! {
    /// What runs for a task: the user's future with its task id, for
    /// [`task::id`](super::id()). Nothing else: the reactor's task catches panics
    /// itself and keeps abort requests in its header, and the handle turns both into a
    /// [`JoinError`](super::JoinError). Its output is the future's own, so no `Result`
    /// is built or copied per poll.
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

/// A task's output while the task holds it: dropped with the task's id set (its
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

/// Wraps a task's future.
pub(crate) fn identify<F: Future>(future: F, id: Id) -> Identified<F> {
    Identified {
        future: ManuallyDrop::new(future),
        id,
    }
}
