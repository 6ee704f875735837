//! The inbox: the MPSC queue through which other threads reach a loop.
//!
//! Two parts, one FIFO per producer:
//!
//! - a fixed ring ([`RING_CAPACITY`] slots, `concurrent-queue`'s bounded queue), where
//!   a push is a compare-and-swap and a store and allocates nothing;
//! - an overflow list (a `VecDeque` under a mutex) for whatever arrives while the ring
//!   is full, so the inbox as a whole never refuses a task for lack of room.
//!
//! An unbounded `concurrent-queue` alone allocated a 2 KiB block every 31 pushes on
//! the producing thread and freed it on the loop's. Blocks that size bypass glibc's
//! per-thread cache, so every one took the allocator's arena lock from two threads at
//! once: about 650 futex calls per 10,000 spawns from outside the loops, and about a
//! fifth of `spawn_many_remote_idle`'s time.
//!
//! Order: once anything is in the overflow, every push goes there too until the loop
//! has drained it, and the loop empties the ring before it looks at the overflow. So a
//! producer's tasks come out in the order it pushed them (there is no order between
//! producers to keep).
//!
//! `max_pending_tasks` is an admission limit checked when a *new* task is submitted
//! (`execute`, `schedule`, `spawn`): wakes of tasks the loop already owns are never
//! refused, because refusing one would leave that task asleep forever. With several
//! producers racing the check, the inbox may overshoot the limit by at most one task
//! per producer.
//!
//! Emptiness and length come from two counters, not from the queues: `pushed`, which a
//! producer bumps just before its push, and `popped`, which only the loop writes. The
//! loop looks at the inbox four times per iteration, and a look is then two loads and
//! a compare, where asking the ring went through `concurrent-queue`'s dispatch on its
//! three flavours, read three of its words, and for the length looped until two
//! readings of the tail agreed. Bumping before the push keeps `popped <= pushed`: a push in
//! flight makes the inbox look non-empty a moment early (the loop finds nothing and
//! looks again), never empty late, so the wakeup protocol's re-check (a producer's
//! fence comes after its bump) still sees every task.
//!
//! Shutdown closes both parts. A push either lands before the close (and the loop's
//! final drain runs it) or fails with the task handed back: never lost. The ring's
//! `close` and `push` act on one atomic word; the overflow's closed flag lives under
//! its mutex. The loom model below checks it.

use std::collections::VecDeque;

use concurrent_queue::{ConcurrentQueue, PushError};

use crate::error::RejectReason;
use crate::sync::{AtomicUsize, Mutex, lock};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

/// Smallest bound `max_pending_tasks` may set (Netty uses the same floor).
pub(crate) const MIN_MAX_PENDING: usize = 16;

/// Slots in the ring. A loop that keeps up never needs more; one that falls behind
/// spills into the overflow list.
pub(crate) const RING_CAPACITY: usize = 4096;

#[derive(Debug)]
pub(crate) struct Inbox<T> {
    ring: ConcurrentQueue<T>,
    overflow: Mutex<Overflow<T>>,
    /// How many tasks the overflow holds; non-zero sends every push there.
    overflowed: AtomicUsize,
    /// Pushes begun, less those that failed (see the module docs).
    pushed: AtomicUsize,
    /// Tasks popped. Written by the consumer only, so a load and a store, no RMW; on a
    /// cache line of its own, so that a pop does not take the line producers bump
    /// `pushed` on.
    popped: ConsumerLine,
    limit: usize,
}

#[derive(Debug)]
#[repr(align(128))]
struct ConsumerLine(AtomicUsize);

#[derive(Debug)]
struct Overflow<T> {
    queue: VecDeque<T>,
    closed: bool,
}

impl<T> Inbox<T> {
    /// `limit`: `None` for unbounded, else at least [`MIN_MAX_PENDING`].
    pub(crate) fn new(limit: Option<usize>) -> Self {
        Self::with_ring(limit, RING_CAPACITY)
    }

    /// With a ring of `ring_capacity` slots (tests use tiny rings to reach the
    /// overflow).
    pub(crate) fn with_ring(limit: Option<usize>, ring_capacity: usize) -> Self {
        Inbox {
            ring: ConcurrentQueue::bounded(ring_capacity),
            overflow: Mutex::new(Overflow {
                queue: VecDeque::new(),
                closed: false,
            }),
            overflowed: AtomicUsize::new(0),
            pushed: AtomicUsize::new(0),
            popped: ConsumerLine(AtomicUsize::new(0)),
            limit: limit.map_or(usize::MAX, |l| l.max(MIN_MAX_PENDING)),
        }
    }

    /// Push a wake or internal message: refused (handed back) only after shutdown.
    pub(crate) fn push(&self, task: T) -> Result<(), T> {
        // Counted before it lands (see the module docs), taken back if it fails.
        self.pushed.fetch_add(1, AcqRel);
        self.push_counted(task).inspect_err(|_| {
            self.pushed.fetch_sub(1, AcqRel);
        })
    }

    fn push_counted(&self, task: T) -> Result<(), T> {
        let task = if self.overflowed.load(Acquire) == 0 {
            match self.ring.push(task) {
                Ok(()) => return Ok(()),
                Err(PushError::Closed(task)) => return Err(task),
                Err(PushError::Full(task)) => task,
            }
        } else {
            task
        };
        let mut overflow = self.lock_overflow();
        if overflow.closed {
            return Err(task);
        }
        overflow.queue.push_back(task);
        // Under the lock, so the count never runs ahead of the queue's contents.
        self.overflowed.fetch_add(1, AcqRel);
        Ok(())
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
        if self.ring.is_closed() {
            Err(RejectReason::Shutdown)
        } else if self.limit != usize::MAX && self.len() >= self.limit {
            Err(RejectReason::Full)
        } else {
            Ok(())
        }
    }

    /// Takes the oldest task: the ring first, then the overflow.
    pub(crate) fn pop(&self) -> Option<T> {
        let task = self.pop_uncounted()?;
        // Only the consumer writes `popped`.
        self.popped
            .0
            .store(self.popped.0.load(Relaxed).wrapping_add(1), Release);
        Some(task)
    }

    fn pop_uncounted(&self) -> Option<T> {
        if let Ok(task) = self.ring.pop() {
            return Some(task);
        }
        if self.overflowed.load(Acquire) == 0 {
            return None;
        }
        let mut overflow = self.lock_overflow();
        // A producer that saw the count at zero may have filled the ring meanwhile:
        // those tasks were pushed before the ones now in the overflow (by anyone who
        // could tell), so they still go first.
        if let Ok(task) = self.ring.pop() {
            return Some(task);
        }
        let task = overflow.queue.pop_front();
        if task.is_some() {
            self.overflowed.fetch_sub(1, AcqRel);
        }
        task
    }

    /// True when no task is queued. A push in flight counts already (see the module
    /// docs): the consumer may find nothing to pop a moment after this said otherwise.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pushed.load(Acquire) == self.popped.0.load(Relaxed)
    }

    /// Tasks queued, pushes in flight included.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        // `popped` first: every task it counts was counted in `pushed` before, so
        // `pushed` read after it is at least as large, from any thread.
        let popped = self.popped.0.load(Acquire);
        self.pushed.load(Acquire).saturating_sub(popped)
    }

    /// Refuse every later push. Items pushed before stay poppable.
    pub(crate) fn close(&self) {
        self.ring.close();
        self.lock_overflow().closed = true;
    }

    fn lock_overflow(&self) -> crate::sync::MutexGuard<'_, Overflow<T>> {
        lock(&self.overflow)
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
    fn past_a_full_ring_tasks_overflow_and_keep_their_order() {
        let inbox = Inbox::with_ring(None, 4);
        (0..10).for_each(|i| inbox.push(i).unwrap());
        assert_eq!(inbox.len(), 10);
        // Drain some: the ring has room again, but while the overflow holds tasks new
        // pushes queue behind them.
        assert_eq!((0..3).map(|_| inbox.pop().unwrap()).collect::<Vec<_>>(), [0, 1, 2]);
        (10..13).for_each(|i| inbox.push(i).unwrap());
        let rest: Vec<_> = std::iter::from_fn(|| inbox.pop()).collect();
        assert_eq!(rest, (3..13).collect::<Vec<_>>());
        assert!(inbox.is_empty());
        // Once drained, pushes use the ring again.
        inbox.push(13).unwrap();
        assert_eq!(inbox.pop(), Some(13));
    }

    #[test]
    fn close_rejects_in_both_parts_and_keeps_both_for_the_drain() {
        let inbox = Inbox::with_ring(None, 2);
        (0..5).for_each(|i| inbox.push(i).unwrap());
        inbox.close();
        assert_eq!(inbox.push(5).unwrap_err(), 5, "overflow path, after close");
        assert_eq!(inbox.push_new(6).unwrap_err(), (6, RejectReason::Shutdown));
        let drained: Vec<_> = std::iter::from_fn(|| inbox.pop()).collect();
        assert_eq!(drained, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_bound_counts_the_overflow_too() {
        let inbox = Inbox::with_ring(Some(MIN_MAX_PENDING), 4);
        for i in 0..MIN_MAX_PENDING {
            inbox.push_new(i).unwrap();
        }
        assert_eq!(inbox.push_new(99).unwrap_err(), (99, RejectReason::Full));
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

    #[test]
    fn counts_follow_pushes_and_pops_and_failed_pushes_are_taken_back() {
        let inbox = Inbox::with_ring(None, 2);
        assert!(inbox.is_empty());
        assert_eq!(inbox.len(), 0);
        // Two in the ring, two in the overflow.
        (0..4).for_each(|i| inbox.push(i).unwrap());
        assert!(!inbox.is_empty());
        assert_eq!(inbox.len(), 4);
        assert_eq!(inbox.pop(), Some(0));
        assert_eq!(inbox.len(), 3);
        inbox.close();
        assert_eq!(inbox.push(9), Err(9));
        assert_eq!(inbox.push_new(9).unwrap_err().0, 9);
        assert_eq!(inbox.len(), 3, "a refused push is not counted");
        assert_eq!(
            [inbox.pop(), inbox.pop(), inbox.pop(), inbox.pop()],
            [Some(1), Some(2), Some(3), None]
        );
        assert!(inbox.is_empty());
        assert_eq!(inbox.len(), 0);
    }

    #[test]
    fn each_producer_keeps_its_order_through_ring_and_overflow() {
        // A tiny ring, so pushes keep spilling into the overflow and back.
        const EACH: usize = 5_000;
        let inbox = std::sync::Arc::new(Inbox::with_ring(None, 8));
        let producers: Vec<_> = (0..3)
            .map(|p| {
                let inbox = inbox.clone();
                std::thread::spawn(move || (0..EACH).for_each(|i| inbox.push((p, i)).unwrap()))
            })
            .collect();
        let mut next = [0usize; 3];
        let mut seen = 0;
        while seen < 3 * EACH {
            if let Some((p, i)) = inbox.pop() {
                assert_eq!(i, next[p], "producer {p} out of order");
                next[p] += 1;
                seen += 1;
            } else {
                std::thread::yield_now();
            }
        }
        producers.into_iter().for_each(|p| p.join().unwrap());
        assert!(inbox.is_empty());
    }
}

/// The shutdown model: a submission racing shutdown is either run or rejected,
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
            // A one-slot ring: one of the two submissions goes through the overflow.
            let inbox = Arc::new(Inbox::with_ring(None, 1));
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
            // A rejected push took its count back.
            assert!(inbox.is_empty());
            assert_eq!(inbox.len(), 0);
        });
    }

    #[test]
    fn a_producer_keeps_its_order_across_ring_and_overflow() {
        loom::model(|| {
            let inbox = Arc::new(Inbox::with_ring(None, 1));
            let producer = {
                let inbox = inbox.clone();
                thread::spawn(move || {
                    for i in 0..3 {
                        inbox.push(i).unwrap();
                    }
                })
            };
            let mut got = Vec::new();
            while got.len() < 3 {
                match inbox.pop() {
                    Some(v) => got.push(v),
                    None => thread::yield_now(),
                }
            }
            producer.join().unwrap();
            assert_eq!(got, [0, 1, 2]);
            assert!(inbox.is_empty());
        });
    }
}
