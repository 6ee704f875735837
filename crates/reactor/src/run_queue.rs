//! The local run queue: one FIFO of everything the loop will run, kept in two parts.
//!
//! Almost every entry is a task's turn (a runnable, one word). The rest are closures
//! and due scheduled tasks, several words each. So the order lives in `order`, one
//! word per entry: a runnable itself, or `None` meaning "the next entry of `others`".
//! Pushing a runnable is one 8-byte store, and the FIFO order between runnables and
//! other entries is exactly the order of pushes.

use std::collections::VecDeque;

use crate::queue_item::QueueItem;
use crate::scheduled::ScheduledTask;

/// What [`RunQueue::pop`] hands out.
pub(crate) enum Next<R> {
    /// A task's turn.
    Runnable(R),
    /// Any other entry.
    Other(QueueItem<R>),
    /// A scheduled task whose deadline has come (moved here from the wheel).
    Due(ScheduledTask),
}

/// An entry of the side queue.
enum Side<R> {
    Other(QueueItem<R>),
    Due(ScheduledTask),
}

/// The local run queue; see the module docs.
pub(crate) struct RunQueue<R> {
    /// Every entry in order; `None` stands for the front of `others`.
    order: VecDeque<Option<R>>,
    others: VecDeque<Side<R>>,
}

impl<R> RunQueue<R> {
    pub(crate) fn with_capacity(capacity: usize) -> RunQueue<R> {
        RunQueue {
            order: VecDeque::with_capacity(capacity),
            others: VecDeque::new(),
        }
    }

    /// Takes out the last `n` runnables (or fewer) that `pick` accepts, in queue
    /// order; every other entry keeps its place. Only the entries from the `n`th
    /// accepted one from the back onwards are looked at (twice), so giving a few new
    /// tasks away costs nothing for the older turns queued before them.
    pub(crate) fn take_last_runnables(&mut self, n: usize, mut pick: impl FnMut(&R) -> bool) -> Vec<R> {
        let mut taken = Vec::new();
        let mut found = 0;
        let mut start = self.order.len();
        for (i, entry) in self.order.iter().enumerate().rev() {
            if found == n {
                break;
            }
            if entry.as_ref().is_some_and(&mut pick) {
                found += 1;
                start = i;
            }
        }
        if found == 0 {
            return taken;
        }
        taken.reserve(found);
        // Stable compaction of the tail: the slots in `write..read` are always emptied
        // ones, so each kept entry moves forward over them, in order.
        let mut write = start;
        for read in start..self.order.len() {
            if self.order[read].as_ref().is_some_and(&mut pick) {
                taken.extend(self.order[read].take());
            } else {
                self.order.swap(write, read);
                write += 1;
            }
        }
        self.order.truncate(write);
        taken
    }

    /// Appends a task's turn.
    #[inline]
    pub(crate) fn push_runnable(&mut self, runnable: R) {
        self.order.push_back(Some(runnable));
    }

    /// Appends any task (a runnable takes the one-word path).
    pub(crate) fn push(&mut self, item: QueueItem<R>) {
        match item {
            QueueItem::Runnable(runnable) => self.push_runnable(runnable),
            other => self.push_side(Side::Other(other)),
        }
    }

    /// Appends a scheduled task whose deadline has come.
    pub(crate) fn push_due(&mut self, task: ScheduledTask) {
        self.push_side(Side::Due(task));
    }

    fn push_side(&mut self, entry: Side<R>) {
        self.others.push_back(entry);
        self.order.push_back(None);
    }

    /// Takes the oldest entry.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Next<R>> {
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

    /// The queued runnables, in order (other entries left out).
    pub(crate) fn runnables(&self) -> impl Iterator<Item = &R> {
        self.order.iter().flatten()
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

    fn closure<R>(log: &Arc<AtomicUsize>, tag: usize) -> QueueItem<R> {
        let log = log.clone();
        QueueItem::Closure(Box::new(move || {
            log.store(tag, Relaxed);
        }))
    }

    #[test]
    fn the_last_picked_runnables_leave_and_the_rest_keep_their_order() {
        let mut q = RunQueue::with_capacity(4);
        let log = Arc::new(AtomicUsize::new(0));
        // Runnables 0..10, even ones picked, with a closure after 3 and after 8.
        for r in 0..10u32 {
            q.push_runnable(r);
            if r == 3 || r == 8 {
                q.push(closure(&log, r as usize));
            }
        }
        assert_eq!(q.take_last_runnables(0, |r| r % 2 == 0), Vec::<u32>::new());
        assert_eq!(q.take_last_runnables(3, |r| r % 2 == 0), vec![4, 6, 8]);
        assert_eq!(q.take_last_runnables(9, |r| *r == 42), Vec::<u32>::new());
        let mut left = Vec::new();
        while let Some(next) = q.pop() {
            left.push(match next {
                Next::Runnable(r) => r.to_string(),
                Next::Other(QueueItem::Closure(f)) => {
                    f();
                    format!("c{}", log.load(Relaxed))
                }
                _ => unreachable!(),
            });
        }
        assert_eq!(left, ["0", "1", "2", "3", "c3", "5", "7", "c8", "9"]);
        for r in 0..4u32 {
            q.push_runnable(r);
        }
        assert_eq!(
            q.take_last_runnables(10, |_| true),
            vec![0, 1, 2, 3],
            "fewer than asked: all"
        );
        assert!(q.is_empty());
    }

    #[test]
    fn other_tasks_keep_their_place_in_the_fifo() {
        let mut q = RunQueue::<()>::with_capacity(4);
        assert!(q.is_empty() && q.pop().is_none());
        let log = Arc::new(AtomicUsize::new(0));
        for tag in 1..=3 {
            q.push(closure(&log, tag));
        }
        assert_eq!(q.len(), 3);
        for tag in 1..=3 {
            let Some(Next::Other(QueueItem::Closure(f))) = q.pop() else {
                panic!("expected closure {tag}");
            };
            f();
            assert_eq!(log.load(Relaxed), tag, "closures come out in push order");
        }
        assert!(q.is_empty());
    }

    /// The tail compaction agrees with a whole-queue retain, the plainest way to take
    /// the last n matching runnables, on random queues (runnables, closures' `None`
    /// markers, any n, wrapped VecDeques).
    #[test]
    fn take_last_runnables_matches_a_whole_queue_retain() {
        let log = Arc::new(AtomicUsize::new(0));
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        // Miri runs the run queue's tests too: a few hundred queues there.
        let rounds = if cfg!(miri) { 200 } else { 20_000 };
        for _ in 0..rounds {
            let mut q = RunQueue::<u32>::with_capacity(4);
            // Wrap the ring: pop some from the front first.
            let pre = rnd(6) as u32;
            for r in 0..pre {
                q.push_runnable(1000 + r);
            }
            for _ in 0..pre {
                q.pop();
            }
            let len = rnd(24) as u32;
            let mut model: Vec<Option<u32>> = Vec::new();
            for r in 0..len {
                if rnd(3) == 0 {
                    q.push(closure(&log, r as usize));
                    model.push(None);
                } else {
                    q.push_runnable(r);
                    model.push(Some(r));
                }
            }
            let modulus = 1 + rnd(3) as u32;
            let pick = |r: &u32| r.is_multiple_of(modulus);
            let n = rnd(10) as usize;
            // The reference: a whole-queue retain, on the model.
            let matching = model.iter().filter(|e| e.as_ref().is_some_and(pick)).count();
            let mut skip = matching.saturating_sub(n);
            let mut want_taken = Vec::new();
            if n > 0 {
                model.retain_mut(|e| {
                    if !e.as_ref().is_some_and(pick) {
                        return true;
                    }
                    if skip > 0 {
                        skip -= 1;
                        return true;
                    }
                    want_taken.extend(e.take());
                    false
                });
            }
            assert_eq!(q.take_last_runnables(n, pick), want_taken);
            let mut left = Vec::new();
            while let Some(next) = q.pop() {
                left.push(match next {
                    Next::Runnable(r) => Some(r),
                    Next::Other(QueueItem::Closure(f)) => {
                        f();
                        None
                    }
                    _ => unreachable!(),
                });
            }
            assert_eq!(left, model);
        }
    }
}
