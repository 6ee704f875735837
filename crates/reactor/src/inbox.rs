//! The inbox: the MPSC queue through which other threads reach a loop.
//!
//! A `concurrent-queue` queue, always unbounded underneath. `max_pending_tasks` is an
//! admission limit checked when a *new* task is submitted (`execute`, `schedule`,
//! `spawn`): wakes of tasks the loop already owns are never refused, because refusing
//! one would leave that task asleep forever. With several producers racing the check,
//! the inbox may overshoot the limit by at most one task per producer.
//!
//! Shutdown closes the queue. `close` and `push` act on the same atomic word inside
//! the queue, so a push either lands before the close (and the loop's final drain runs
//! it) or fails with the task handed back: never lost. The loom model below checks it.

use concurrent_queue::{ConcurrentQueue, PushError};

use crate::error::RejectReason;

/// Smallest bound `max_pending_tasks` may set (Netty uses the same floor).
pub(crate) const MIN_MAX_PENDING: usize = 16;

#[derive(Debug)]
pub(crate) struct Inbox<T> {
    queue: ConcurrentQueue<T>,
    limit: usize,
}

impl<T> Inbox<T> {
    /// `limit`: `None` for unbounded, else at least [`MIN_MAX_PENDING`].
    pub(crate) fn new(limit: Option<usize>) -> Self {
        Inbox {
            queue: ConcurrentQueue::unbounded(),
            limit: limit.map_or(usize::MAX, |l| l.max(MIN_MAX_PENDING)),
        }
    }

    /// Push a wake or internal message: refused only after shutdown.
    pub(crate) fn push(&self, task: T) -> Result<(), T> {
        self.queue.push(task).map_err(PushError::into_inner)
    }

    /// Push a new submission, subject to `max_pending_tasks`.
    pub(crate) fn push_new(&self, task: T) -> Result<(), (T, RejectReason)> {
        if let Err(reason) = self.admit() {
            return Err((task, reason));
        }
        self.push(task).map_err(|t| (t, RejectReason::Shutdown))
    }

    /// Would a new submission be admitted now? (Used before a spawn builds its task.)
    pub(crate) fn admit(&self) -> Result<(), RejectReason> {
        if self.queue.is_closed() {
            Err(RejectReason::Shutdown)
        } else if self.limit != usize::MAX && self.queue.len() >= self.limit {
            Err(RejectReason::Full)
        } else {
            Ok(())
        }
    }

    pub(crate) fn pop(&self) -> Option<T> {
        self.queue.pop().ok()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Refuse every later push. Items pushed before stay poppable.
    pub(crate) fn close(&self) {
        self.queue.close();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn bound_has_a_floor_and_rejects_as_full() {
        let inbox = Inbox::new(Some(1));
        for i in 0..MIN_MAX_PENDING {
            inbox.push_new(i).unwrap();
        }
        let (back, reason) = inbox.push_new(99).unwrap_err();
        assert_eq!((back, reason), (99, RejectReason::Full));
        // Wakes of tasks the loop already owns are never refused by the bound.
        inbox.push(100).unwrap();
        assert_eq!(inbox.len(), MIN_MAX_PENDING + 1);
    }

    #[test]
    fn close_rejects_as_shutdown_and_keeps_what_was_queued() {
        let inbox = Inbox::new(None);
        inbox.push_new(1).unwrap();
        inbox.close();
        assert_eq!(inbox.push_new(2).unwrap_err(), (2, RejectReason::Shutdown));
        assert_eq!(inbox.push(3).unwrap_err(), 3);
        assert_eq!(inbox.pop(), Some(1));
        assert_eq!(inbox.pop(), None);
    }

    #[test]
    fn fifo_across_threads() {
        let inbox = std::sync::Arc::new(Inbox::new(None));
        let p = {
            let inbox = inbox.clone();
            std::thread::spawn(move || (0..10_000).for_each(|i| inbox.push(i).unwrap()))
        };
        let mut next = 0;
        while next < 10_000 {
            if let Some(v) = inbox.pop() {
                assert_eq!(v, next);
                next += 1;
            }
        }
        p.join().unwrap();
    }
}

/// Model (2) of the issue: a submission racing shutdown is either run or rejected,
/// never lost. The loop's side is what `EventLoop::finish` does: close, then drain.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::thread;

    #[test]
    fn submission_racing_shutdown_is_run_or_rejected() {
        loom::model(|| {
            let inbox = Arc::new(Inbox::new(None));
            let rejected = Arc::new(AtomicUsize::new(0));
            let producers: Vec<_> = (0..2)
                .map(|i| {
                    let (inbox, rejected) = (inbox.clone(), rejected.clone());
                    thread::spawn(move || {
                        if let Err((task, reason)) = inbox.push_new(i) {
                            assert_eq!(reason, RejectReason::Shutdown);
                            assert_eq!(task, i, "a rejected task is handed back");
                            rejected.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            // The loop shuts down: close, then the final drain.
            inbox.close();
            let mut ran = 0;
            while inbox.pop().is_some() {
                ran += 1;
            }
            for p in producers {
                p.join().unwrap();
            }
            assert_eq!(
                ran + rejected.load(Ordering::Relaxed),
                2,
                "every submission ran or was rejected"
            );
        });
    }
}
