//! Spinning before parking: when to look for work a little longer before blocking.
//!
//! Waking a loop that blocked in `select` costs both sides: the producer's eventfd
//! write wakes a sleeping thread (the kernel's `try_to_wake_up`, a few microseconds),
//! and the loop pays a context switch back in. When another thread submits a burst of
//! tasks, a loop that is faster than its producer drains its inbox, blocks, and is
//! woken again for the next task, over and over: in a burst of 10,000 remote spawns
//! onto two loops, about 1,400 times, a third of all the CPU time spent.
//!
//! So after a pass that took work from the inbox, the loop stays awake for a few
//! microseconds, in rounds: each yields the core (`sched_yield`, so a producer or
//! another loop sharing the core runs first) and looks at the queues, and every few
//! rounds at the selector without blocking. The spin is bounded by time, not rounds:
//! on a core shared with a busy thread one yield can last a whole time slice, and the
//! spin then ends after that round.
//! While it does, `next_wakeup` still says AWAKE, so producers skip the eventfd write
//! (the wakeup protocol of `wakeup.rs` is unchanged: the loop publishes its deadline
//! and re-checks the queues only when it really goes to block).
//!
//! Spinning that finds nothing is wasted CPU, so [`IdleSpin`] backs off: after a spin
//! that found nothing, the next 1, 2, 4, ... up to [`MAX_SKIP`] chances to spin are
//! skipped, and a spin that finds work resets that. A loop fed a steady trickle of
//! cross-thread work (one task now and then) spins about once per `MAX_SKIP` idle
//! turns; a loop fed a burst spins through it. Work that arrives only as I/O never
//! makes a loop spin.
//!
//! Netty's `NioEventLoop` always blocks when it has no task; its epoll transport
//! offers a busy-wait select strategy that never blocks. This sits between the two.

use std::time::Duration;

/// How long a spin lasts by default.
pub const DEFAULT_IDLE_SPIN: Duration = Duration::from_micros(20);
/// The longest spin that may be configured.
pub const MAX_IDLE_SPIN: Duration = Duration::from_millis(1);
/// The most chances to spin skipped after spins that found nothing.
pub(crate) const MAX_SKIP: u32 = 64;
/// During a spin, every this many rounds the selector is polled without blocking, so
/// I/O that arrives meanwhile waits at most this many rounds.
pub(crate) const IO_CHECK_ROUNDS: u32 = 8;

/// The loop thread's spin policy: whether to spin at the next chance, and for how
/// long.
#[derive(Debug)]
pub(crate) struct IdleSpin {
    /// Nanoseconds a spin lasts; 0 never spins.
    nanos: u64,
    /// Chances still to skip.
    skip: u32,
    /// Chances skipped after the last spin that found nothing (0 after one that
    /// found work).
    backoff: u32,
}

impl IdleSpin {
    /// A policy spinning for `length` at a time; zero never spins.
    pub(crate) fn new(length: Duration) -> IdleSpin {
        IdleSpin {
            nanos: u64::try_from(length.as_nanos()).unwrap_or(u64::MAX),
            skip: 0,
            backoff: 0,
        }
    }

    /// Called when the loop, having taken work from its inbox, finds nothing to do:
    /// how many nanoseconds to spin now, or `None` to block at once.
    pub(crate) fn chance(&mut self) -> Option<u64> {
        if self.nanos == 0 {
            return None;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return None;
        }
        Some(self.nanos)
    }

    /// The spin found work: spin at every chance again.
    pub(crate) fn found_work(&mut self) {
        self.backoff = 0;
        self.skip = 0;
    }

    /// The spin found nothing: skip twice as many chances as last time.
    pub(crate) fn found_nothing(&mut self) {
        self.backoff = (self.backoff * 2).clamp(1, MAX_SKIP);
        self.skip = self.backoff;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chances until the next spin, counting the one that spins.
    fn chances_to_next_spin(spin: &mut IdleSpin) -> u32 {
        (1..=MAX_SKIP + 1)
            .find(|_| spin.chance().is_some())
            .expect("a spin within MAX_SKIP + 1 chances")
    }

    #[test]
    fn spins_at_every_chance_while_spins_find_work() {
        let mut spin = IdleSpin::new(Duration::from_nanos(32));
        for _ in 0..10 {
            assert_eq!(spin.chance(), Some(32));
            spin.found_work();
        }
    }

    #[test]
    fn spins_that_find_nothing_back_off_exponentially_up_to_the_cap() {
        let mut spin = IdleSpin::new(Duration::from_nanos(32));
        assert_eq!(spin.chance(), Some(32));
        let mut gaps = Vec::new();
        for _ in 0..9 {
            spin.found_nothing();
            gaps.push(chances_to_next_spin(&mut spin));
        }
        assert_eq!(gaps, [2, 3, 5, 9, 17, 33, 65, 65, 65]);
    }

    #[test]
    fn a_spin_that_finds_work_ends_the_backoff() {
        let mut spin = IdleSpin::new(Duration::from_nanos(32));
        for _ in 0..5 {
            spin.chance();
            spin.found_nothing();
        }
        chances_to_next_spin(&mut spin);
        spin.found_work();
        assert_eq!(spin.chance(), Some(32));
        spin.found_nothing();
        assert_eq!(chances_to_next_spin(&mut spin), 2);
    }

    #[test]
    fn a_zero_length_never_spins() {
        let mut spin = IdleSpin::new(Duration::ZERO);
        assert!((0..100).all(|_| spin.chance().is_none()));
    }
}
