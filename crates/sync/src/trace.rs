//! tokio's `tracing` instrumentation of the primitives (`--cfg tokio_unstable` and the
//! `tracing` feature), with tokio's targets, span names and fields, which
//! console-subscriber reads as resources and async operations:
//!
//! - a primitive is a `runtime.resource` span (target: tokio's module path of the
//!   type, fields `concrete_type`, `kind = "Sync"` and where it was made), a root;
//! - its state changes are `runtime::resource::state_update` events in that span
//!   (a field, and `<field>.op` of `add`, `sub` or `override` where tokio gives one);
//! - a wait on it is an [`AsyncOp`]: a `runtime.resource.async_op` span made in the
//!   resource's scope (`source`: the method), with a `runtime.resource.async_op.poll`
//!   span, all three entered around each poll, which emits a
//!   `runtime::resource::poll_op` event.
//!
//! Without the flag or the feature this module is not built and no primitive carries
//! a span.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A `runtime.resource` span of a primitive made at the caller's location `$at`.
macro_rules! resource_span {
    ($target:literal, $concrete:literal, $at:expr $(, $($field:tt)*)?) => {{
        let at: &'static std::panic::Location<'static> = $at;
        tracing::trace_span!(
            target: $target,
            parent: None,
            "runtime.resource",
            concrete_type = $concrete,
            kind = "Sync",
            loc.file = at.file(),
            loc.line = at.line(),
            loc.col = at.column(),
            $($($field)*)?
        )
    }};
}
pub(crate) use resource_span;

/// A `runtime::resource::state_update` event with the given fields, in `$span`.
macro_rules! state_update {
    ($span:expr, $($field:tt)*) => {
        $span.in_scope(|| tracing::trace!(target: "runtime::resource::state_update", $($field)*))
    };
}
pub(crate) use state_update;

/// A `runtime::resource::async_op::state_update` event with the given fields, in
/// `$span` (an async op's).
macro_rules! async_op_update {
    ($span:expr, $($field:tt)*) => {
        $span.in_scope(|| tracing::trace!(target: "runtime::resource::async_op::state_update", $($field)*))
    };
}
pub(crate) use async_op_update;

pin_project_lite::pin_project! {
    /// A wait on a resource, as tokio instruments one (see the module's comment).
    pub(crate) struct AsyncOp<F> {
        #[pin]
        inner: F,
        // Dropped in this order, as tokio's are.
        async_op: tracing::Span,
        async_op_poll: tracing::Span,
        resource: tracing::Span,
    }
}

/// `make`'s future as an async operation `source` of `resource`.
pub(crate) fn async_op<F: Future>(
    resource: &tracing::Span,
    source: &'static str,
    inherits_child_attrs: bool,
    make: impl FnOnce() -> F,
) -> AsyncOp<F> {
    resource.in_scope(|| {
        let async_op = tracing::trace_span!(
            target: "tokio::util::trace",
            "runtime.resource.async_op",
            source = source,
            inherits_child_attrs = inherits_child_attrs,
        );
        let entered = async_op.enter();
        let async_op_poll = tracing::trace_span!(target: "tokio::util::trace", "runtime.resource.async_op.poll");
        let inner = make();
        drop(entered);
        AsyncOp {
            inner,
            async_op,
            async_op_poll,
            resource: resource.clone(),
        }
    })
}

impl<F: Future> Future for AsyncOp<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _resource = this.resource.enter();
        let _async_op = this.async_op.enter();
        let _poll = this.async_op_poll.enter();
        let polled = this.inner.poll(cx);
        tracing::trace!(target: "runtime::resource::poll_op", op_name = "poll", is_ready = polled.is_ready());
        polled
    }
}
