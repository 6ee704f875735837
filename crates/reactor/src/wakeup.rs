//! `next_wakeup`: the one word that lets producers skip waking a busy loop.
//!
//! Netty's `nextWakeupNanos`, design §4. The loop stores the deadline it is about
//! to block until (or [`NONE`]) right before it blocks in `Poll::poll`, and [`AWAKE`]
//! as soon as it returns. A producer on another thread publishes its task first and
//! only then looks at the word: if the loop is awake, the task will be seen before the
//! loop next blocks, so no wake is needed; otherwise the producer swaps in `AWAKE`, and
//! only the producer that wins that swap writes to the eventfd.
//!
//! Why no wakeup is lost: both sides follow "write, SeqCst fence, read".
//! The loop swaps in its deadline, fences, then re-checks its queues; a producer pushes,
//! fences, then reads the word. Whichever fence comes second in the total order sees
//! the other side's write, so either the loop sees the task (and does not block) or the
//! producer sees the deadline (and wakes the loop). The loop publishes with a swap
//! rather than a store so that its write is ordered after any late producer's `AWAKE`
//! (an RMW always follows the value it read); loom's model of a plain store racing a
//! foreign RMW is weaker than C11's, and with a store it reports a false lost wakeup
//! in the two-producer model. The loom models at the bottom check all of this; deleting
//! the producer's fence makes all three fail.

use crate::sync::{AtomicU64, fence};
use std::sync::atomic::Ordering::{AcqRel, Relaxed, SeqCst};

/// The loop is running and will look at its queues before it blocks again.
pub(crate) const AWAKE: u64 = 0;
/// The loop is blocked with no deadline: only a wake brings it back.
pub(crate) const NONE: u64 = u64::MAX;

/// AWAKE, NONE, or the deadline (clock nanos) the loop is blocked until.
#[derive(Debug)]
pub(crate) struct NextWakeup(AtomicU64);

impl NextWakeup {
    pub(crate) fn new() -> Self {
        NextWakeup(AtomicU64::new(AWAKE))
    }

    /// Loop side, before blocking: publish the deadline it will block until.
    ///
    /// The caller must re-check every queue after this returns and block only if they
    /// are all still empty.
    pub(crate) fn publish(&self, deadline: u64) {
        // A swap, not a store: as a read-modify-write it is ordered after every
        // producer's swap it follows, so a late producer's AWAKE can never be read as
        // newer than this deadline. Once per blocking episode, so the cost is nil.
        self.0.swap(deadline, AcqRel);
        fence(SeqCst);
    }

    /// Loop side, after `Poll::poll` returned.
    pub(crate) fn set_awake(&self) {
        self.0.store(AWAKE, Relaxed);
    }

    /// Producer side, after publishing a task due at `deadline` (use 0 for "now"):
    /// does this producer have to write to the eventfd?
    ///
    /// True for exactly one producer per blocking episode of the loop, and only when
    /// the loop would otherwise sleep past `deadline`.
    pub(crate) fn should_wake(&self, deadline: u64) -> bool {
        fence(SeqCst);
        let current = self.0.load(Relaxed);
        if current == AWAKE || deadline >= current {
            return false;
        }
        self.0.swap(AWAKE, AcqRel) != AWAKE
    }

    /// The current value, for metrics and tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_one_producer_wins_the_swap() {
        let w = NextWakeup::new();
        assert!(!w.should_wake(0), "an awake loop needs no wake");
        w.publish(NONE);
        assert!(w.should_wake(0));
        assert!(!w.should_wake(0), "the second producer is suppressed");
        assert_eq!(w.get(), AWAKE);
    }

    #[test]
    fn later_deadlines_do_not_wake() {
        let w = NextWakeup::new();
        w.publish(1_000);
        assert!(!w.should_wake(2_000));
        assert!(!w.should_wake(1_000));
        assert!(w.should_wake(999));
        w.publish(NONE);
        assert!(w.should_wake(crate::clock::MAX_DEADLINE));
    }
}

/// The lost-wakeup model: a producer on another thread submitting while the loop goes
/// to sleep is never left unwoken. The eventfd is a `loom::sync::Notify` (it keeps a
/// permit like an eventfd's counter); a lost wakeup leaves the loop waiting forever,
/// which loom reports as a deadlock.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use concurrent_queue::ConcurrentQueue;
    use loom::sync::{Arc, Notify};
    use loom::thread;

    /// The loop's wakeup word, its inbox, and its eventfd.
    struct Harness {
        wakeup: Arc<NextWakeup>,
        queue: Arc<ConcurrentQueue<u32>>,
        eventfd: Arc<Notify>,
    }

    impl Harness {
        fn new() -> Self {
            Harness {
                wakeup: Arc::new(NextWakeup::new()),
                queue: Arc::new(ConcurrentQueue::unbounded()),
                eventfd: Arc::new(Notify::new()),
            }
        }

        /// A producer thread: push `value`, then wake the loop if it sleeps past `deadline`.
        fn producer(&self, value: u32, deadline: u64) -> thread::JoinHandle<()> {
            let (w, q, e) = (self.wakeup.clone(), self.queue.clone(), self.eventfd.clone());
            thread::spawn(move || {
                q.push(value).unwrap();
                if w.should_wake(deadline) {
                    e.notify();
                }
            })
        }

        /// The loop: pop, or publish `deadline`, re-check, and block only if still empty.
        fn sleep_until_task(&self, deadline: u64) -> u32 {
            loop {
                if let Ok(v) = self.queue.pop() {
                    return v;
                }
                self.wakeup.publish(deadline);
                if self.queue.is_empty() {
                    self.eventfd.wait();
                }
                self.wakeup.set_awake();
            }
        }
    }

    #[test]
    fn submission_racing_sleep_is_never_lost() {
        loom::model(|| {
            let h = Harness::new();
            let producer = h.producer(7, 0);
            assert_eq!(h.sleep_until_task(NONE), 7);
            producer.join().unwrap();
        });
    }

    #[test]
    fn two_producers_one_wake_is_enough() {
        loom::model(|| {
            let h = Harness::new();
            let producers = [h.producer(0, 0), h.producer(1, 0)];
            h.sleep_until_task(NONE);
            h.sleep_until_task(NONE);
            for p in producers {
                p.join().unwrap();
            }
        });
    }

    #[test]
    fn earlier_deadline_wakes_a_loop_blocked_until_a_later_one() {
        loom::model(|| {
            let h = Harness::new();
            // A scheduled task due at 5 is pushed lazily, then wakes the loop only if
            // the loop sleeps past 5 (Netty's afterScheduledTaskSubmitted).
            let producer = h.producer(5, 5);
            // The loop's own next deadline is 10: it must not sleep through 5.
            assert_eq!(h.sleep_until_task(10), 5);
            producer.join().unwrap();
        });
    }
}
