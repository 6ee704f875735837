//! tokio's `tracing` instrumentation of tasks (`--cfg tokio_unstable` and the `tracing`
//! feature): the `runtime.spawn` span that console-subscriber reads as a task, with
//! tokio's target, name and fields, and netloop's own field `netloop.loop`, the index
//! of the loop the task lives on in its runtime's group.
//!
//! The span is made at the task's first poll, not at its spawn: only then is the
//! task's loop known for good (a task may start on another, idle loop; from its first
//! poll on it never moves), and console-subscriber reads a task's fields when its span
//! is made, never later. The span is entered around every poll of the task's future
//! and around its drop, as tokio's is, and its id is handed to the reactor's task
//! (`record_span_id`), whose wakers then emit tokio's waker events.

use std::panic::Location;
use std::task::Context;

use netloop_reactor::EventLoopHandle;

/// The index of the loop this thread drives in its runtime's group, if the thread
/// drives (or stands in for) a loop of a group.
fn loop_index() -> Option<u64> {
    EventLoopHandle::with_current(|current| current?.group_index()).map(|i| i as u64)
}

/// What a task's span says of it, kept from its spawn until its first poll.
#[derive(Clone)]
pub(crate) struct SpawnMeta {
    /// tokio's `kind`: "task", "local" or "blocking".
    pub(crate) kind: &'static str,
    /// `task::Builder::name`'s name.
    pub(crate) name: Option<Box<str>>,
    /// A blocking task's closure type (tokio's `fn` field).
    pub(crate) function: Option<&'static str>,
}

impl SpawnMeta {
    pub(crate) const TASK: SpawnMeta = SpawnMeta {
        kind: "task",
        name: None,
        function: None,
    };
}

/// The span of a task `id` spawned at `at`, whose future is `size` bytes: made now,
/// on the loop that polls it first.
fn task_span(meta: &SpawnMeta, id: u64, size: usize, at: &'static Location<'static>) -> tracing::Span {
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.function {
        Some(function) => tracing::trace_span!(
            target: "tokio::task::blocking",
            parent: None,
            "runtime.spawn",
            kind = %meta.kind,
            task.name = %name,
            task.id = id,
            "fn" = %function,
            size.bytes = size,
            loc.file = at.file(),
            loc.line = at.line(),
            loc.col = at.column(),
        ),
        None => tracing::trace_span!(
            target: "tokio::task",
            parent: None,
            "runtime.spawn",
            kind = %meta.kind,
            task.name = %name,
            task.id = id,
            size.bytes = size,
            loc.file = at.file(),
            loc.line = at.line(),
            loc.col = at.column(),
            "netloop.loop" = loop_index(),
        ),
    }
}

/// Makes the task's span at its first poll: `span` is `None` until then, and
/// afterwards stays `Some` (a disabled span if no subscriber wanted it), so that each
/// poll after the first costs one test. `id`: the task's; `size`: its future's;
/// `at`: where it was spawned.
#[inline]
pub(crate) fn make_span(
    span: &mut Option<tracing::Span>,
    meta: &SpawnMeta,
    id: u64,
    size: usize,
    at: &'static Location<'static>,
    cx: &Context<'_>,
) {
    if span.is_none() {
        let made = task_span(meta, id, size, at);
        if let Some(span_id) = made.id() {
            netloop_reactor::task::record_span_id(cx.waker(), span_id.into_u64());
        }
        *span = Some(made);
    }
}
