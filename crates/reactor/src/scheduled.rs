//! Scheduled tasks: an indexed min-heap ordered by (deadline, sequence id).
//!
//! Netty keeps scheduled tasks in a `DefaultPriorityQueue` whose elements remember
//! their own heap index, so `cancel` removes in O(log n) instead of leaving a corpse in
//! the queue until its deadline. This is the same structure: entries live in a slab,
//! the heap holds slab keys, and every entry knows its heap position; the task's shared
//! state remembers its slab key, so a cancel finds it directly.
//!
//! Only the loop's thread touches the queue. Another thread's `schedule` reaches it
//! through the inbox; another thread's `cancel` marks the task cancelled at once and
//! sends a removal through the inbox without waking the loop.

use std::sync::Arc;
use std::sync::atomic::AtomicU8;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::task::Waker;

use slab::Slab;

/// What runs when a scheduled task is due.
pub(crate) enum Job {
    /// Runs once.
    Once(Box<dyn FnOnce() + Send + 'static>),
    /// Runs every `period` nanos measured from the previous *deadline*, so a late run
    /// is followed by catch-up runs (Netty `scheduleAtFixedRate`).
    FixedRate {
        period: u64,
        f: Box<dyn FnMut() + Send + 'static>,
    },
    /// Runs `delay` nanos after the previous run *finished* (Netty `scheduleWithFixedDelay`).
    FixedDelay {
        delay: u64,
        f: Box<dyn FnMut() + Send + 'static>,
    },
    /// Wakes a future's timer (used by the scheduler's `sleep`).
    Wake(Waker),
}

const PENDING: u8 = 0;
const DONE: u8 = 1;
const CANCELLED: u8 = 2;
/// A one-shot task that has started: too late to cancel (Netty `setUncancellable`).
const RUNNING: u8 = 3;
const NOT_QUEUED: usize = usize::MAX;

/// The part of a scheduled task that its handle shares with the loop.
#[derive(Debug)]
pub(crate) struct ScheduledState {
    status: AtomicU8,
    /// Slab key while the task sits in the heap; written by the loop thread only.
    key: AtomicUsize,
}

impl ScheduledState {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(ScheduledState {
            status: AtomicU8::new(PENDING),
            key: AtomicUsize::new(NOT_QUEUED),
        })
    }

    /// PENDING -> CANCELLED. False if it already ran to completion or was cancelled.
    pub(crate) fn try_cancel(&self) -> bool {
        self.status
            .compare_exchange(PENDING, CANCELLED, AcqRel, Acquire)
            .is_ok()
    }

    /// PENDING -> RUNNING. False if it was cancelled first.
    pub(crate) fn try_start(&self) -> bool {
        self.status.compare_exchange(PENDING, RUNNING, AcqRel, Acquire).is_ok()
    }

    /// PENDING or RUNNING -> DONE.
    pub(crate) fn set_done(&self) {
        let _ = self
            .status
            .fetch_update(AcqRel, Acquire, |s| matches!(s, PENDING | RUNNING).then_some(DONE));
    }

    pub(crate) fn is_pending(&self) -> bool {
        self.status.load(Acquire) == PENDING
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.status.load(Acquire) == CANCELLED
    }

    /// Ran to completion, or was cancelled.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.status.load(Acquire), DONE | CANCELLED)
    }
}

/// A task waiting in (or on its way to) the heap.
pub(crate) struct ScheduledTask {
    pub(crate) deadline: u64,
    pub(crate) seq: u64,
    pub(crate) job: Job,
    pub(crate) state: Arc<ScheduledState>,
}

impl ScheduledTask {
    pub(crate) fn new(deadline: u64, job: Job, state: Arc<ScheduledState>) -> Self {
        ScheduledTask {
            deadline,
            seq: 0,
            job,
            state,
        }
    }
}

struct Entry {
    task: ScheduledTask,
    /// Position of this entry in `heap`.
    pos: usize,
}

/// A heap slot: the ordering key inline, so sifting compares without touching the
/// (much larger, scattered) entries.
#[derive(Clone, Copy)]
struct Slot {
    deadline: u64,
    seq: u64,
    key: usize,
}

impl Slot {
    fn order(&self) -> (u64, u64) {
        (self.deadline, self.seq)
    }
}

/// The loop's scheduled-task queue.
#[derive(Default)]
pub(crate) struct ScheduledQueue {
    entries: Slab<Entry>,
    heap: Vec<Slot>,
    next_seq: u64,
}

impl ScheduledQueue {
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Inserts a task. A task cancelled before it reached the heap is dropped here.
    pub(crate) fn push(&mut self, mut task: ScheduledTask) {
        if !task.state.is_pending() {
            return;
        }
        if task.seq == 0 {
            self.next_seq += 1;
            task.seq = self.next_seq;
        }
        let pos = self.heap.len();
        let (deadline, seq) = (task.deadline, task.seq);
        let key = self.entries.insert(Entry { task, pos });
        self.entries[key].task.state.key.store(key, Relaxed);
        self.heap.push(Slot { deadline, seq, key });
        self.sift_up(pos);
    }

    /// The earliest deadline, if any.
    pub(crate) fn peek_deadline(&self) -> Option<u64> {
        self.heap.first().map(|s| s.deadline)
    }

    /// Removes and returns the earliest task if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<ScheduledTask> {
        if self.heap.first()?.deadline > now {
            return None;
        }
        Some(self.remove_at(0))
    }

    /// Removes the task owning `state`, in O(log n). `None` if it is not in the heap.
    pub(crate) fn remove(&mut self, state: &Arc<ScheduledState>) -> Option<ScheduledTask> {
        let key = state.key.load(Relaxed);
        let entry = self.entries.get(key)?;
        if !Arc::ptr_eq(&entry.task.state, state) {
            return None;
        }
        let pos = entry.pos;
        Some(self.remove_at(pos))
    }

    /// Removes everything (shutdown cancels all scheduled tasks).
    pub(crate) fn drain(&mut self) -> Vec<ScheduledTask> {
        self.heap.clear();
        let out: Vec<_> = self.entries.drain().map(|e| e.task).collect();
        for t in &out {
            t.state.key.store(NOT_QUEUED, Relaxed);
        }
        out
    }

    fn remove_at(&mut self, pos: usize) -> ScheduledTask {
        let last = self.heap.len() - 1;
        self.swap(pos, last);
        let slot = self.heap.pop().expect("heap is not empty");
        let entry = self.entries.remove(slot.key);
        entry.task.state.key.store(NOT_QUEUED, Relaxed);
        if pos < self.heap.len() {
            // The slot moved into `pos` may belong above or below it.
            if pos > 0 && self.heap[pos].order() < self.heap[(pos - 1) / 2].order() {
                self.sift_up(pos);
            } else {
                self.sift_down(pos);
            }
        }
        entry.task
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.entries[self.heap[a].key].pos = a;
        self.entries[self.heap[b].key].pos = b;
    }

    /// Moves the slot at `pos` up to its place, writing each moved slot once.
    fn sift_up(&mut self, mut pos: usize) {
        let item = self.heap[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if item.order() >= self.heap[parent].order() {
                break;
            }
            self.heap[pos] = self.heap[parent];
            self.entries[self.heap[pos].key].pos = pos;
            pos = parent;
        }
        self.heap[pos] = item;
        self.entries[item.key].pos = pos;
    }

    /// Moves the slot at `pos` down to its place, writing each moved slot once.
    fn sift_down(&mut self, mut pos: usize) {
        let item = self.heap[pos];
        let len = self.heap.len();
        loop {
            let left = 2 * pos + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].order() < self.heap[left].order() {
                right
            } else {
                left
            };
            if item.order() <= self.heap[child].order() {
                break;
            }
            self.heap[pos] = self.heap[child];
            self.entries[self.heap[pos].key].pos = pos;
            pos = child;
        }
        self.heap[pos] = item;
        self.entries[item.key].pos = pos;
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        assert_eq!(self.heap.len(), self.entries.len());
        for (pos, slot) in self.heap.iter().enumerate() {
            let entry = &self.entries[slot.key];
            assert_eq!(entry.pos, pos);
            assert_eq!((entry.task.deadline, entry.task.seq), slot.order());
            if pos > 0 {
                assert!(
                    slot.order() >= self.heap[(pos - 1) / 2].order(),
                    "heap order broken at {pos}"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(deadline: u64) -> ScheduledTask {
        ScheduledTask::new(deadline, Job::Once(Box::new(|| {})), ScheduledState::new())
    }

    #[test]
    fn pops_in_deadline_then_submission_order() {
        let mut q = ScheduledQueue::default();
        let deadlines = [50, 10, 30, 10, 70, 20, 30];
        let states: Vec<_> = deadlines
            .iter()
            .map(|&d| {
                let t = task(d);
                let s = t.state.clone();
                q.push(t);
                s
            })
            .collect();
        q.check_invariants();
        let mut order = vec![];
        while let Some(t) = q.pop_due(u64::MAX - 1) {
            order.push(states.iter().position(|s| Arc::ptr_eq(s, &t.state)).unwrap());
        }
        assert_eq!(order, vec![1, 3, 5, 2, 6, 0, 4]);
    }

    #[test]
    fn pop_due_respects_now() {
        let mut q = ScheduledQueue::default();
        q.push(task(100));
        assert!(q.pop_due(99).is_none());
        assert_eq!(q.peek_deadline(), Some(100));
        assert!(q.pop_due(100).is_some());
        assert!(q.is_empty());
    }

    #[test]
    fn remove_any_element_keeps_the_heap_valid() {
        // Deterministic pseudo-random deadlines and removal order.
        let mut x: u64 = 0x2545F4914F6CDD1D;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut q = ScheduledQueue::default();
        let mut states = vec![];
        for _ in 0..2_000 {
            let t = task(rnd() % 500);
            states.push(t.state.clone());
            q.push(t);
        }
        for i in (0..states.len()).step_by(3) {
            assert!(q.remove(&states[i]).is_some());
            assert!(q.remove(&states[i]).is_none(), "removing twice finds nothing");
        }
        q.check_invariants();
        let mut last = 0;
        let mut n = 0;
        while let Some(t) = q.pop_due(u64::MAX - 1) {
            assert!(t.deadline >= last);
            last = t.deadline;
            n += 1;
        }
        assert_eq!(n, 2_000 - (0..2_000).step_by(3).count());
    }

    #[test]
    fn cancelled_before_insert_is_dropped() {
        let mut q = ScheduledQueue::default();
        let t = task(1);
        assert!(t.state.try_cancel());
        q.push(t);
        assert!(q.is_empty());
    }

    #[test]
    fn stale_key_does_not_remove_a_stranger() {
        let mut q = ScheduledQueue::default();
        let a = task(1);
        let sa = a.state.clone();
        q.push(a);
        q.pop_due(1).unwrap();
        let b = task(2);
        q.push(b); // likely reuses a's slab slot
        assert!(q.remove(&sa).is_none());
        assert_eq!(q.len(), 1);
    }
}
