//! Tail tasks: closures run once at the end of the current (or next) loop iteration
//! (Netty `executeAfterEventLoopIteration`), e.g. to flush what a batch of events wrote.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::AcqRel;

pub(crate) struct TailTask {
    pub(crate) f: Box<dyn FnOnce() + Send + 'static>,
    pub(crate) removed: Arc<AtomicBool>,
}

/// Removes a tail task before it runs; see
/// [`EventLoopHandle::execute_after_iteration`](crate::EventLoopHandle::execute_after_iteration).
#[derive(Debug, Clone)]
pub struct TailTaskHandle {
    pub(crate) removed: Arc<AtomicBool>,
}

impl TailTaskHandle {
    /// Removes the task if it has not run yet; true if this call removed it.
    /// A removed tail task never runs.
    pub fn remove(&self) -> bool {
        !self.removed.swap(true, AcqRel)
    }
}
