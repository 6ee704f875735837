//! What sits in a loop's inbox and run queue.

use std::sync::Arc;

use crate::scheduled::{ScheduledState, ScheduledTask, TimerKey};
use crate::tail::TailTask;

/// One entry of the local run queue or the inbox. `R` is a task's turn (the loop's
/// [`Runnable`](crate::task::Runnable) type).
///
/// Three words: the inbox's ring has a slot of this size per entry, so the rare large
/// variants are boxed (a scheduled task or a tail task from another thread is one
/// allocation more; a runnable or a closure, the common entries, is not). A due
/// scheduled task never crosses threads, so it is not a `QueueItem` at all: the run queue
/// keeps it unboxed (see `run_queue`).
pub(crate) enum QueueItem<R> {
    /// A task's turn to be polled.
    Runnable(R),
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
const _: () = assert!(std::mem::size_of::<QueueItem<Box<u8>>>() <= 3 * std::mem::size_of::<usize>());

impl<R> QueueItem<R> {
    pub(crate) fn into_closure(self) -> Option<Box<dyn FnOnce() + Send + 'static>> {
        match self {
            QueueItem::Closure(f) => Some(f),
            _ => None,
        }
    }
}
