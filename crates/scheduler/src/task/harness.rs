//! What wraps a task's future: its id, for `task::id`, and under `--cfg tokio_unstable`
//! where it was spawned and its runtime's task hooks. Everything else a handle reports
//! (a panic, an abort, the id itself) the reactor's task keeps in its header, for the
//! loops' tasks, the blocking pool's and a `LocalSet`'s alike.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::id::{Id, IdGuard};

/// Where a task comes from, as its hooks see it: the source location of the spawn and
/// the runtime it was spawned onto (whose hooks run at its polls and at its end).
/// Built only with `--cfg tokio_unstable`; without it `Origin` is empty (zero-sized)
/// and nothing reads it, so a spawn and a poll cost what they cost without hooks.
#[derive(Clone)]
pub(crate) struct Origin {
    #[cfg(tokio_unstable)]
    pub(crate) spawned_at: &'static std::panic::Location<'static>,
    /// The runtime the task was spawned onto, once known: kept only if it has a poll or
    /// terminate hook.
    #[cfg(tokio_unstable)]
    pub(crate) runtime: Option<std::sync::Arc<crate::runtime::hooks::RuntimeTasks>>,
    /// Whether the runtime's poll hooks run at the task's polls: not for a blocking
    /// task, as on tokio (its terminate hook does run).
    #[cfg(tokio_unstable)]
    pub(crate) poll_hooks: bool,
    /// The task's entry in its runtime's list of traceable tasks (`Handle::dump`).
    #[cfg(all(tokio_unstable, feature = "taskdump"))]
    pub(crate) traced: Option<std::sync::Arc<crate::runtime::dump::TaskSlot>>,
    /// What the task's `runtime.spawn` span says of it (kind, name).
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    pub(crate) meta: super::trace::SpawnMeta,
    /// The task's `runtime.spawn` span, from its first poll on (`task::trace`).
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    pub(crate) span: Option<tracing::Span>,
}

impl Origin {
    /// The caller's location (with `--cfg tokio_unstable`; nothing without it).
    #[inline(always)]
    #[cfg_attr(tokio_unstable, track_caller)]
    pub(crate) fn caller() -> Origin {
        Origin {
            #[cfg(tokio_unstable)]
            spawned_at: std::panic::Location::caller(),
            #[cfg(tokio_unstable)]
            runtime: None,
            #[cfg(tokio_unstable)]
            poll_hooks: true,
            #[cfg(all(tokio_unstable, feature = "taskdump"))]
            traced: None,
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            meta: super::trace::SpawnMeta::TASK,
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            span: None,
        }
    }

    /// The task's name (`task::Builder::name`), for its `runtime.spawn` span; without
    /// tokio's `tracing` the name is not kept.
    #[cfg(tokio_unstable)]
    #[inline(always)]
    pub(crate) fn named(self, name: Option<&str>) -> Origin {
        #[cfg(feature = "tracing")]
        return Origin {
            meta: super::trace::SpawnMeta {
                name: name.map(Box::from),
                ..self.meta
            },
            ..self
        };
        #[cfg(not(feature = "tracing"))]
        {
            let _ = name;
            self
        }
    }

    /// The task's kind for its `runtime.spawn` span: "local" for a `!Send` task.
    #[inline(always)]
    pub(crate) fn kind(self, kind: &'static str) -> Origin {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        return Origin {
            meta: super::trace::SpawnMeta { kind, ..self.meta },
            ..self
        };
        #[cfg(not(all(tokio_unstable, feature = "tracing")))]
        {
            let _ = kind;
            self
        }
    }

    /// A blocking task running a closure of type `F` (its name goes to the span).
    #[inline(always)]
    #[cfg_attr(
        not(all(tokio_unstable, feature = "tracing")),
        allow(clippy::extra_unused_type_parameters)
    )]
    pub(crate) fn blocking<F>(self) -> Origin {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        return Origin {
            meta: super::trace::SpawnMeta {
                kind: "blocking",
                function: Some(std::any::type_name::<F>()),
                ..self.meta
            },
            ..self
        };
        #[cfg(not(all(tokio_unstable, feature = "tracing")))]
        self
    }
}

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
        // Empty without `--cfg tokio_unstable`.
        origin: Origin,
    }

    impl<F> PinnedDrop for Identified<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let _id = IdGuard::enter(*this.id);
            // The span is entered while the future is dropped, as tokio's is.
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            let _span = this.origin.span.as_ref().map(tracing::Span::enter);
            // SAFETY: the future is dropped once, here, where it lies (it is pinned), and
            // the struct holding it is being dropped: nothing uses it after. A panic
            // unwinds to the loop task, which catches it.
            unsafe { ManuallyDrop::drop(this.future.get_unchecked_mut()) }
            // The task has ended: finished, failed, aborted or dropped by its runtime's
            // shutdown. Its future is gone, as tokio's is when its hook runs.
            #[cfg(tokio_unstable)]
            unstable::terminated(*this.id, this.origin);
        }
    }
}

impl<F: Future> Future for Identified<F> {
    type Output = WithId<F::Output>;

    #[inline]
    #[cfg(not(tokio_unstable))]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WithId<F::Output>> {
        let this = self.project();
        let id = *this.id;
        let _id = IdGuard::enter(id);
        // SAFETY: `ManuallyDrop` is a transparent wrapper: pinning it pins the future.
        unsafe { this.future.map_unchecked_mut(|f| &mut **f) }
            .poll(cx)
            .map(|value| WithId { value: Some(value), id })
    }

    /// The poll with tokio's unstable extras: the runtime's poll hooks around it, and
    /// with `taskdump` the trace a dump asked for.
    #[inline]
    #[cfg(tokio_unstable)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WithId<F::Output>> {
        let this = self.project();
        let id = *this.id;
        let _id = IdGuard::enter(id);
        #[cfg(feature = "tracing")]
        super::trace::make_span(
            &mut this.origin.span,
            &this.origin.meta,
            id.as_u64(),
            std::mem::size_of::<F>(),
            this.origin.spawned_at,
            cx,
        );
        #[cfg(feature = "tracing")]
        let _span = this.origin.span.as_ref().map(tracing::Span::enter);
        // SAFETY: `ManuallyDrop` is a transparent wrapper: pinning it pins the future.
        let future = unsafe { this.future.map_unchecked_mut(|f| &mut **f) };
        unstable::poll(id, this.origin, cx, future).map(|value| WithId { value: Some(value), id })
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
pub(crate) fn identify<F: Future>(future: F, id: Id, origin: Origin) -> Identified<F> {
    Identified {
        future: ManuallyDrop::new(future),
        id,
        origin,
    }
}

/// The hooks' and the task dump's side of a task, under `--cfg tokio_unstable`.
#[cfg(tokio_unstable)]
mod unstable {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use crate::runtime::hooks::{TaskMeta, call};
    use crate::task::harness::Origin;
    use crate::task::id::Id;

    /// A poll of the task's future, between the runtime's poll hooks.
    #[inline(always)]
    pub(super) fn poll<F: Future>(
        id: Id,
        origin: &Origin,
        cx: &mut Context<'_>,
        future: Pin<&mut F>,
    ) -> Poll<F::Output> {
        let hooks = origin
            .runtime
            .as_deref()
            .filter(|_| origin.poll_hooks)
            .map(|rt| &rt.hooks);
        let meta = || TaskMeta::new(id, origin.spawned_at);
        if let Some(before) = hooks.and_then(|h| h.before_poll.as_ref()) {
            call(before, &meta(), "on_before_task_poll");
        }
        let polled = traced_poll(id, origin, cx, future);
        if let Some(after) = hooks.and_then(|h| h.after_poll.as_ref()) {
            call(after, &meta(), "on_after_task_poll");
        }
        polled
    }

    /// The poll, as a trace if a dump asked for one of this task; with `taskdump`, the
    /// task is the root of the traces taken in it (`dump::poll_root`).
    #[inline(always)]
    fn traced_poll<F: Future>(id: Id, origin: &Origin, cx: &mut Context<'_>, future: Pin<&mut F>) -> Poll<F::Output> {
        #[cfg(feature = "taskdump")]
        return match &origin.traced {
            Some(slot) => slot.poll(id, cx, future),
            None => crate::runtime::dump::poll_root(future, cx),
        };
        #[cfg(not(feature = "taskdump"))]
        {
            let _ = (id, origin);
            future.poll(cx)
        }
    }

    /// The task has ended: the runtime's terminate hook.
    pub(super) fn terminated(id: Id, origin: &Origin) {
        #[cfg(feature = "taskdump")]
        if let Some(slot) = &origin.traced {
            slot.ended();
        }
        if let Some(terminate) = origin.runtime.as_deref().and_then(|rt| rt.hooks.terminate.as_ref()) {
            call(terminate, &TaskMeta::new(id, origin.spawned_at), "on_task_terminate");
        }
    }
}
