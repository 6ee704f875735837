//! What sits in a loop's queues.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::loop_task::LoopRunnable;
use crate::scheduled::{ScheduledState, ScheduledTask, TimerKey};
use crate::tail::TailTask;

/// One entry of the local run queue or the inbox.
///
/// Three words: the inbox's ring has a slot of this size per entry, so the rare large
/// variants are boxed (a scheduled task or a tail task from another thread is one
/// allocation more; a runnable or a closure, the common entries, is not). A due
/// scheduled task never crosses threads, so it is not a `Task` at all: the run queue
/// keeps it unboxed (see `run_queue`).
pub(crate) enum Task {
    /// A loop task's turn to be polled.
    Runnable(LoopRunnable),
    /// A closure from `execute`.
    Closure(Box<dyn FnOnce() + Send + 'static>),
    /// Another thread's `schedule`: insert into the wheel.
    Schedule(Box<ScheduledTask>),
    /// Another thread's `cancel`: remove from the wheel now rather than at the deadline.
    CancelScheduled(Arc<ScheduledState>),
    /// Another thread's drop of a future whose timer is registered locally (`sleep`
    /// polled on the loop, then moved and dropped elsewhere): remove it now.
    CancelTimer(Box<TimerKey>),
    /// Another thread's tail task.
    Tail(Box<TailTask>),
}

// Three words, as the ring's slot size depends on it (see above).
const _: () = assert!(std::mem::size_of::<Task>() <= 3 * std::mem::size_of::<usize>());

impl Task {
    pub(crate) fn into_closure(self) -> Option<Box<dyn FnOnce() + Send + 'static>> {
        match self {
            Task::Closure(f) => Some(f),
            _ => None,
        }
    }
}

/// Runs `f`, logging and swallowing a panic (spec section 7: the loop goes on).
/// Returns false if it panicked.
pub(crate) fn run_caught(what: &'static str, f: impl FnOnce()) -> bool {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(()) => true,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("<non-string panic payload>");
            tracing::warn!(target: "netloop::reactor", kind = what, panic = msg, "a task panicked; the event loop goes on");
            false
        }
    }
}
