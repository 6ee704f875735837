//! The OS boundary: mio's `Poll`, its `Events` buffer, the eventfd `Waker`, and the
//! coarse clock. Nothing else in the crate calls into mio's polling or libc directly.

use std::io;
use std::time::Duration;

use mio::{Events, Poll, Registry, Waker};

use crate::shared::WAKER_TOKEN;

pub(crate) struct Selector {
    poll: Poll,
    pub(crate) events: Events,
}

impl Selector {
    /// The selector, the waker other threads use to interrupt it, and a registry
    /// handle through which any thread may register sources.
    pub(crate) fn new(events_capacity: usize) -> io::Result<(Selector, Waker, Registry)> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER_TOKEN)?;
        let registry = poll.registry().try_clone()?;
        Ok((
            Selector {
                poll,
                events: Events::with_capacity(events_capacity),
            },
            waker,
            registry,
        ))
    }

    /// Netty's `select` / `selectNow`: block up to `timeout` (`None` = until woken,
    /// zero = do not block) and fill `events`.
    pub(crate) fn select(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.poll.poll(&mut self.events, timeout)
    }

    /// Forget the previous events when an iteration skips the poll.
    pub(crate) fn clear(&mut self) {
        self.events.clear();
    }

    /// How many events the last `select` returned.
    pub(crate) fn event_count(&self) -> usize {
        self.events.iter().count()
    }
}

/// The kernel's coarse monotonic clock, in nanoseconds from an arbitrary origin.
///
/// `CLOCK_MONOTONIC_COARSE` is the time of the last scheduler tick (1 to 4 ms apart):
/// the vDSO returns it without reading the TSC, which makes it several times cheaper
/// than `Instant::now` (about 7 ns against 38 ns here, more with cold caches). The
/// loop reads it twice per blocking select to account its busy time.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn coarse_monotonic_nanos() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a live, writable `timespec` for the call's duration, and
    // CLOCK_MONOTONIC_COARSE is a valid clock id on every Linux since 2.6.32.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    if rc != 0 {
        // Cannot happen on a supported kernel; CLOCK_MONOTONIC shares the timeline.
        // SAFETY: as above.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    }
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Elsewhere there is no cheaper clock to read: the precise one.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn coarse_monotonic_nanos() -> u64 {
    crate::clock::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coarse clock never goes back and keeps pace with the precise one to
    /// within a few ticks (it is the same timeline, sampled at ticks).
    #[test]
    fn coarse_clock_is_monotonic_and_keeps_pace() {
        let (c0, p0) = (coarse_monotonic_nanos(), std::time::Instant::now());
        let mut last = c0;
        // Spin (no sleep) until 30 ms have passed on the precise clock.
        while p0.elapsed() < Duration::from_millis(30) {
            let c = coarse_monotonic_nanos();
            assert!(c >= last, "the coarse clock went back: {c} < {last}");
            last = c;
        }
        let advanced = Duration::from_nanos(last - c0);
        assert!(
            advanced >= Duration::from_millis(10) && advanced <= p0.elapsed() + Duration::from_millis(10),
            "30 ms on the precise clock, {advanced:?} on the coarse one"
        );
    }
}
