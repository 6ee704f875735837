//! The local run queue: one FIFO of everything the loop will run, kept in two parts.
//!
//! Almost every entry is a loop task's turn (a [`LoopRunnable`], one word). The rest
//! are closures ([`Task`]s) and due scheduled tasks. A single `VecDeque` of the larger
//! entries (eight words when it was measured) made each wake build that value on the
//! stack and copy it into the queue: the copy's 16-byte loads read bytes just written
//! by narrower stores, a store-forwarding stall that cost about a tenth of a yield.
//!
//! So the order lives in `order`, one word per entry: a runnable itself, or `None`
//! meaning "the next entry of `others`". Pushing a runnable is one 8-byte store, and
//! the FIFO order between runnables and other tasks is exactly the order of pushes.

use std::collections::VecDeque;

use crate::loop_task::LoopRunnable;
use crate::scheduled::ScheduledTask;
use crate::task::Task;

/// What [`RunQueue::pop`] hands out.
pub(crate) enum Next {
    /// A loop task's turn.
    Runnable(LoopRunnable),
    /// Any other task.
    Other(Task),
    /// A scheduled task whose deadline has come (moved here from the wheel).
    Due(ScheduledTask),
}

/// An entry of the side queue.
enum Side {
    Other(Task),
    Due(ScheduledTask),
}

/// The local run queue; see the module docs.
pub(crate) struct RunQueue {
    /// Every entry in order; `None` stands for the front of `others`.
    order: VecDeque<Option<LoopRunnable>>,
    others: VecDeque<Side>,
}

impl RunQueue {
    pub(crate) fn with_capacity(capacity: usize) -> RunQueue {
        RunQueue {
            order: VecDeque::with_capacity(capacity),
            others: VecDeque::new(),
        }
    }

    /// Appends a loop task's turn.
    #[inline]
    pub(crate) fn push_runnable(&mut self, runnable: LoopRunnable) {
        self.order.push_back(Some(runnable));
    }

    /// Appends any task (a runnable takes the one-word path).
    pub(crate) fn push(&mut self, task: Task) {
        match task {
            Task::Runnable(runnable) => self.push_runnable(runnable),
            other => self.push_side(Side::Other(other)),
        }
    }

    /// Appends a scheduled task whose deadline has come.
    pub(crate) fn push_due(&mut self, task: ScheduledTask) {
        self.push_side(Side::Due(task));
    }

    fn push_side(&mut self, entry: Side) {
        self.others.push_back(entry);
        self.order.push_back(None);
    }

    /// Takes the oldest entry.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Next> {
        match self.order.pop_front()? {
            Some(runnable) => Some(Next::Runnable(runnable)),
            None => Some(match self.others.pop_front().expect("a marker has its task") {
                Side::Other(task) => Next::Other(task),
                Side::Due(task) => Next::Due(task),
            }),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    fn closure(log: &Arc<AtomicUsize>, tag: usize) -> Task {
        let log = log.clone();
        Task::Closure(Box::new(move || {
            log.store(tag, Relaxed);
        }))
    }

    #[test]
    fn other_tasks_keep_their_place_in_the_fifo() {
        let mut q = RunQueue::with_capacity(4);
        assert!(q.is_empty() && q.pop().is_none());
        let log = Arc::new(AtomicUsize::new(0));
        for tag in 1..=3 {
            q.push(closure(&log, tag));
        }
        assert_eq!(q.len(), 3);
        for tag in 1..=3 {
            let Some(Next::Other(Task::Closure(f))) = q.pop() else {
                panic!("expected closure {tag}");
            };
            f();
            assert_eq!(log.load(Relaxed), tag, "closures come out in push order");
        }
        assert!(q.is_empty());
    }
}
