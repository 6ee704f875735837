//! The OS boundary: mio's `Poll`, its `Events` buffer, the eventfd `Waker`, the
//! io_uring ring ([`ring`]) and the entries it is given ([`op`]), the socket calls the
//! ring's sockets make themselves ([`socket`]), and the clock busy time is read on.
//! Nothing else in the crate calls into mio's polling, io_uring, libc or CPU
//! instructions directly.

pub(crate) mod op;
pub(crate) mod ring;
pub(crate) mod socket;

use std::io;
use std::time::Duration;

use mio::{Events, Poll, Registry, Waker};

/// The token of the loop's own mio `Waker`: no registration ever has it (their tokens
/// are addresses).
pub(crate) const WAKER_TOKEN: mio::Token = mio::Token(usize::MAX);

pub(crate) struct Selector {
    poll: Poll,
    /// Filled by a `select` that may block.
    events: Events,
    /// Filled by a `select` that does not block, when configured smaller: a loop with
    /// tasks waiting takes only this many events, the rest stay in the kernel.
    busy_events: Option<Events>,
    /// True when the last `select` filled `busy_events`.
    last_busy: bool,
    /// On io_uring: the epoll instance may hold events not taken yet (its poll on the
    /// ring fired, or the last take filled the buffer).
    epoll_pending: bool,
    /// On io_uring: the ring's multishot poll of the epoll instance is armed.
    epoll_polled: bool,
}

impl Selector {
    /// The selector, the waker other threads use to interrupt it, and a registry
    /// handle through which any thread may register sources.
    pub(crate) fn new(events_capacity: usize, busy_capacity: Option<usize>) -> io::Result<(Selector, Waker, Registry)> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER_TOKEN)?;
        let registry = poll.registry().try_clone()?;
        Ok((
            Selector {
                poll,
                events: Events::with_capacity(events_capacity),
                busy_events: busy_capacity
                    .filter(|&busy| busy < events_capacity)
                    .map(Events::with_capacity),
                last_busy: false,
                epoll_pending: false,
                epoll_polled: false,
            },
            waker,
            registry,
        ))
    }

    /// Netty's `select` / `selectNow`: block up to `timeout` (`None` = until woken,
    /// zero = do not block) and fill `events`.
    pub(crate) fn select(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match (&mut self.busy_events, timeout) {
            (Some(busy), Some(Duration::ZERO)) => {
                self.last_busy = true;
                self.poll.poll(busy, timeout)
            }
            _ => {
                self.last_busy = false;
                self.poll.poll(&mut self.events, timeout)
            }
        }
    }

    /// The select of a loop on io_uring: one `io_uring_enter` submits the turn's
    /// operations and waits up to `timeout` for a completion. The epoll instance (every
    /// readiness registration, and the loop's waker) is itself watched by a multishot
    /// poll on the ring: only when that fires, or the last take of its events filled the
    /// buffer, are its events taken (`epoll_wait` without blocking). Completions of
    /// operations go to `out`.
    pub(crate) fn select_ring(
        &mut self,
        ring: &mut ring::Ring,
        timeout: Option<Duration>,
        out: &mut Vec<ring::Completion>,
    ) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        if !self.epoll_polled {
            let entry = op::poll_readable_multi(self.poll.as_raw_fd()).user_data(op::EPOLL_POLL);
            // SAFETY: the epoll instance lives as long as this selector, and the
            // selector's owner drops the ring first (`Core`'s field order).
            unsafe { ring.push(&entry)? };
            self.epoll_polled = true;
        }
        let wait = if self.epoll_pending {
            Some(Duration::ZERO)
        } else {
            timeout
        };
        ring.enter(wait)?;
        let first = out.len();
        ring.take_completions(out);
        self.note_epoll_completions(out, first);
        if self.epoll_pending {
            let cap = self.events.capacity();
            self.last_busy = false;
            self.poll.poll(&mut self.events, Some(Duration::ZERO))?;
            self.epoll_pending = self.events.iter().count() >= cap;
        } else {
            self.events.clear();
            self.last_busy = false;
        }
        Ok(())
    }

    /// Takes the epoll poll's completions out of `out[first..]` (the others keep their
    /// order: a multishot receive's data comes in completion order), noting that epoll
    /// has events to take and whether its poll is still armed.
    pub(crate) fn note_epoll_completions(&mut self, out: &mut Vec<ring::Completion>, first: usize) {
        let mut polled = self.epoll_polled;
        let mut pending = self.epoll_pending;
        let mut i = 0;
        out.retain(|c| {
            i += 1;
            if i <= first || c.user_data != op::EPOLL_POLL {
                return true;
            }
            pending = true;
            polled = c.more();
            false
        });
        self.epoll_polled = polled;
        self.epoll_pending = pending;
    }

    /// The events the last `select` returned.
    pub(crate) fn events(&self) -> &Events {
        match &self.busy_events {
            Some(busy) if self.last_busy => busy,
            _ => &self.events,
        }
    }

    /// Forget the previous events when an iteration skips the poll.
    pub(crate) fn clear(&mut self) {
        self.events.clear();
        if let Some(busy) = &mut self.busy_events {
            busy.clear();
        }
    }

    /// How many events the last `select` returned.
    pub(crate) fn event_count(&self) -> usize {
        self.events().iter().count()
    }
}

/// A reading for busy time, taken as the loop goes idle and as it wakes: only the
/// difference of two readings means anything, and [`busy_ticks_to_nanos`] converts
/// a sum of differences to nanoseconds.
///
/// On x86_64 it is the CPU's time-stamp counter: one instruction, no memory access,
/// exact. (Every x86_64 CPU of the last fifteen years runs it at a constant rate and
/// in step across cores; Linux keeps its own clock on it.) A clock call after a sleep
/// misses the cache on the vDSO's code and data; this does not (the cost of both is in
/// `docs/BENCHMARKS.md`, "What the measurements decided").
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline]
pub(crate) fn busy_ticks() -> u64 {
    // SAFETY: RDTSC only reads the counter: it has no memory effects, and every
    // x86_64 CPU implements it.
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// Converts a sum of [`busy_ticks`] differences to nanoseconds, at the counter's rate
/// measured against the precise clock since the first loop started
/// ([`calibrate_busy_ticks`]). Each end of the span is a [`paired_reading`], so the
/// rate's error is a few microseconds over the whole span, even on a loaded machine.
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) fn busy_ticks_to_nanos(ticks: u64) -> u64 {
    let (tsc0, t0) = calibrate_busy_ticks();
    let (tsc1, t1) = paired_reading();
    let span_ticks = tsc1.saturating_sub(tsc0);
    if span_ticks == 0 {
        return 0;
    }
    let span_nanos = t1.saturating_duration_since(t0).as_nanos();
    u64::try_from(u128::from(ticks) * span_nanos / u128::from(span_ticks)).unwrap_or(u64::MAX)
}

/// The counter and the precise clock, read together once per process (when the first
/// loop starts): the origin of every rate measurement.
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) fn calibrate_busy_ticks() -> (u64, std::time::Instant) {
    static ORIGIN: std::sync::OnceLock<(u64, std::time::Instant)> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(paired_reading)
}

/// The counter and the precise clock at one moment: the clock read between two counter
/// readings, paired with their midpoint. A thread preempted between the readings would
/// pair values far apart, so of a few tries the one with the closest readings is kept.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn paired_reading() -> (u64, std::time::Instant) {
    let mut best: Option<(u64, u64, std::time::Instant)> = None;
    for _ in 0..4 {
        let before = busy_ticks();
        let now = std::time::Instant::now();
        let after = busy_ticks();
        let gap = after.saturating_sub(before);
        if best.is_none_or(|(best_gap, _, _)| gap < best_gap) {
            best = Some((gap, before + gap / 2, now));
        }
    }
    let (_, ticks, now) = best.expect("four tries were made");
    (ticks, now)
}

/// Elsewhere (and under miri, which cannot run RDTSC) busy time is read on the coarse
/// clock, in nanoseconds.
#[cfg(any(not(target_arch = "x86_64"), miri))]
pub(crate) fn busy_ticks() -> u64 {
    coarse_monotonic_nanos()
}

/// The coarse clock already counts nanoseconds.
#[cfg(any(not(target_arch = "x86_64"), miri))]
pub(crate) fn busy_ticks_to_nanos(ticks: u64) -> u64 {
    ticks
}

/// Nothing to calibrate on the coarse clock.
#[cfg(any(not(target_arch = "x86_64"), miri))]
pub(crate) fn calibrate_busy_ticks() {}

/// The kernel's coarse monotonic clock, in nanoseconds from an arbitrary origin.
///
/// `CLOCK_MONOTONIC_COARSE` is the time of the last scheduler tick (1 to 4 ms apart):
/// the vDSO returns it without reading a hardware counter, which makes it several
/// times cheaper than `Instant::now`. Busy time is read on it where there is no
/// time-stamp counter to read.
#[cfg(all(
    any(not(target_arch = "x86_64"), miri),
    any(target_os = "linux", target_os = "android")
))]
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
#[cfg(all(
    any(not(target_arch = "x86_64"), miri),
    not(any(target_os = "linux", target_os = "android"))
))]
pub(crate) fn coarse_monotonic_nanos() -> u64 {
    crate::clock::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A select that does not block takes at most the busy capacity; the other ready
    /// sources stay in the kernel and a blocking select returns them.
    #[test]
    #[cfg_attr(miri, ignore = "miri has no sockets")]
    fn a_select_that_does_not_block_takes_at_most_the_busy_capacity() {
        use std::io::Write;
        let (mut selector, _waker, registry) = Selector::new(16, Some(1)).unwrap();
        let mut pairs = Vec::new();
        for i in 0..3 {
            let (mut a, mut b) = mio::net::UnixStream::pair().unwrap();
            registry
                .register(&mut a, mio::Token(i + 1), mio::Interest::READABLE)
                .unwrap();
            b.write_all(b"x").unwrap();
            pairs.push((a, b));
        }
        selector.select(Some(Duration::ZERO)).unwrap();
        assert_eq!(selector.event_count(), 1, "a busy select takes one event");
        selector.select(Some(Duration::from_secs(1))).unwrap();
        assert_eq!(selector.event_count(), 2, "the other two were left in the kernel");
    }

    /// Busy ticks never go back, and a 30 ms stretch on the precise clock converts to
    /// about 30 ms (within the coarse clock's grain where that is what is read).
    #[test]
    fn busy_ticks_are_monotonic_and_convert_to_the_precise_clock() {
        calibrate_busy_ticks();
        // Each counter reading lies between the two clock readings around it: the
        // bounds below hold however long the thread was away in between.
        let p0_before = std::time::Instant::now();
        let b0 = busy_ticks();
        let p0_after = std::time::Instant::now();
        let mut last = b0;
        // Spin (no sleep) until 30 ms have passed on the precise clock.
        while p0_after.elapsed() < Duration::from_millis(30) {
            let b = busy_ticks();
            assert!(b >= last, "busy ticks went back: {b} < {last}");
            last = b;
        }
        let shortest = p0_after.elapsed();
        let end = busy_ticks();
        let longest = p0_before.elapsed();
        assert!(end >= last, "busy ticks went back: {end} < {last}");
        let converted = Duration::from_nanos(busy_ticks_to_nanos(end - b0));
        assert!(
            converted + Duration::from_millis(10) >= shortest && converted <= longest + Duration::from_millis(10),
            "{shortest:?} to {longest:?} on the precise clock, {converted:?} in busy ticks"
        );
    }
}
