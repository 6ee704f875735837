//! Deadlines as nanoseconds on one process-wide monotonic timeline.
//!
//! Every loop measures deadlines from the same origin, so a deadline computed on one
//! thread means the same instant on every other, and fits in one `AtomicU64`
//! (`next_wakeup` stores it). `0` and `u64::MAX` are reserved by the wakeup protocol
//! (AWAKE and NONE), so real deadlines live in `1..=MAX_DEADLINE`.

use std::sync::OnceLock;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::time::{Duration, Instant};

/// The latest deadline a task can have: about 584 years after the process started.
/// Larger delays clamp to it, never overflow (design §9, scenario 12).
pub(crate) const MAX_DEADLINE: u64 = u64::MAX - 1;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Nanoseconds since the origin, plus one so that "now" is never the reserved 0.
pub(crate) fn now() -> u64 {
    from_instant(Instant::now())
}

/// Converts an `Instant` into a deadline; instants before the origin map to 1 (the past).
pub(crate) fn from_instant(at: Instant) -> u64 {
    // u64 arithmetic rather than `as_nanos` (u128): this runs a few times per loop
    // iteration.
    let since = at.saturating_duration_since(origin());
    since
        .as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(since.subsec_nanos()))
        .saturating_add(1)
        .min(MAX_DEADLINE)
}

/// Converts a deadline back into an `Instant`, saturating at the far future.
pub(crate) fn to_instant(deadline: u64) -> Instant {
    let nanos = deadline.saturating_sub(1);
    origin()
        .checked_add(Duration::from_nanos(nanos))
        .unwrap_or_else(|| origin() + Duration::from_secs(u32::MAX as u64))
}

/// `now + delay`, clamped to `MAX_DEADLINE` instead of overflowing.
pub(crate) fn after(now: u64, delay: Duration) -> u64 {
    now.saturating_add(nanos(delay)).min(MAX_DEADLINE)
}

/// A duration in nanoseconds, saturating at `u64::MAX`.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// How long from `now` until `deadline` (zero if it has passed).
pub(crate) fn until(now: u64, deadline: u64) -> Duration {
    Duration::from_nanos(deadline.saturating_sub(now))
}

/// The clock a loop's timers run on: the monotonic clock, or a paused one for tests
/// (tokio's `time::pause`).
///
/// While paused, time stands still except when advanced, and a loop with nothing to
/// do jumps straight to its next timer instead of waiting for it. After `resume`, time
/// runs again from where it stood. Only timers (and `Instant::now` of the scheduler's
/// `time` module with `test-util`) see this clock; busy time and shutdown periods are
/// measured on the real one.
#[derive(Debug, Default)]
pub struct Clock {
    /// The frozen time (deadline nanos) while paused; 0 while running.
    frozen: AtomicU64,
    /// Nanos added to the monotonic clock while running (after a pause).
    offset: std::sync::atomic::AtomicI64,
    /// Work in flight off the loop (blocking tasks) while paused: the loop does not
    /// auto-advance while it is non-zero, since that work may still wake a timer's task.
    inhibitors: std::sync::atomic::AtomicUsize,
}

/// Misuse of a [`Clock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClockError {
    /// `pause` on a paused clock.
    AlreadyPaused,
    /// `resume` or `advance` on a running clock.
    NotPaused,
}

impl std::fmt::Display for ClockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClockError::AlreadyPaused => "time is already frozen",
            ClockError::NotPaused => "time is not frozen; call pause() first",
        })
    }
}

impl std::error::Error for ClockError {}

impl Clock {
    /// Now, on this clock (deadline nanos).
    pub(crate) fn now(&self) -> u64 {
        match self.frozen.load(Acquire) {
            0 => (now() as i64).saturating_add(self.offset.load(Relaxed)).max(1) as u64,
            frozen => frozen,
        }
    }

    /// Now, on this clock, given `real_now` (a fresh `now()` reading) to reuse when the
    /// clock is the plain monotonic one, which saves the loop a read.
    pub(crate) fn now_from(&self, real_now: u64) -> u64 {
        if self.is_real() { real_now } else { self.now() }
    }

    /// Now, on this clock, as an `Instant`.
    pub fn now_instant(&self) -> Instant {
        to_instant(self.now())
    }

    /// True if this clock is the plain monotonic clock (never paused).
    pub fn is_real(&self) -> bool {
        self.frozen.load(Acquire) == 0 && self.offset.load(Relaxed) == 0
    }

    /// True while paused.
    pub fn is_paused(&self) -> bool {
        self.frozen.load(Acquire) != 0
    }

    /// Freezes time at the current instant.
    pub fn pause(&self) -> Result<(), ClockError> {
        let now = self.now();
        self.frozen
            .compare_exchange(0, now, AcqRel, Acquire)
            .map(drop)
            .map_err(|_| ClockError::AlreadyPaused)
    }

    /// Lets time run again from where it stood.
    pub fn resume(&self) -> Result<(), ClockError> {
        let frozen = self.frozen.load(Acquire);
        if frozen == 0 {
            return Err(ClockError::NotPaused);
        }
        self.offset.store(frozen as i64 - now() as i64, Relaxed);
        self.frozen.store(0, Release);
        Ok(())
    }

    /// Moves frozen time forward by `by`.
    pub fn advance(&self, by: Duration) -> Result<(), ClockError> {
        self.frozen
            .fetch_update(AcqRel, Acquire, |f| (f != 0).then(|| after(f, by)))
            .map(drop)
            .map_err(|_| ClockError::NotPaused)
    }

    /// Keeps the loop from auto-advancing paused time until the matching
    /// [`allow_auto_advance`](Self::allow_auto_advance): work outside the loop (a
    /// blocking task) is under way, and time must not jump past the timers waiting for
    /// it. Real time still passes for that work; paused time does not.
    pub fn inhibit_auto_advance(&self) {
        self.inhibitors.fetch_add(1, AcqRel);
    }

    /// Ends one [`inhibit_auto_advance`](Self::inhibit_auto_advance). Wake the loop
    /// afterwards: it may be waiting to advance.
    pub fn allow_auto_advance(&self) {
        self.inhibitors.fetch_sub(1, AcqRel);
    }

    /// True unless some work has inhibited auto-advance.
    pub(crate) fn may_auto_advance(&self) -> bool {
        self.inhibitors.load(Acquire) == 0
    }

    /// Moves frozen time forward to `deadline` (never back). The loop calls this when
    /// it is idle with a timer pending.
    pub(crate) fn advance_to(&self, deadline: u64) {
        let _ = self
            .frozen
            .fetch_update(AcqRel, Acquire, |f| (f != 0 && deadline > f).then_some(deadline));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_delays_clamp() {
        let n = now();
        assert_eq!(after(n, Duration::from_millis(u64::MAX)), MAX_DEADLINE);
        assert_eq!(after(n, Duration::MAX), MAX_DEADLINE);
        assert!(to_instant(MAX_DEADLINE) > Instant::now());
    }

    #[test]
    fn paused_clock_stands_still_advances_and_resumes_continuously() {
        let c = Clock::default();
        assert_eq!(c.resume(), Err(ClockError::NotPaused));
        assert_eq!(c.advance(Duration::from_secs(1)), Err(ClockError::NotPaused));
        c.pause().unwrap();
        assert_eq!(c.pause(), Err(ClockError::AlreadyPaused));
        let t0 = c.now();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(c.now(), t0, "frozen");
        c.advance(Duration::from_secs(3600)).unwrap();
        assert_eq!(c.now(), t0 + 3_600_000_000_000);
        c.advance_to(t0);
        assert_eq!(c.now(), t0 + 3_600_000_000_000, "never goes back");
        c.resume().unwrap();
        let t1 = c.now();
        assert!(t1 >= t0 + 3_600_000_000_000, "continues from where it stood");
    }

    #[test]
    fn round_trip_is_monotonic() {
        let _ = now(); // fix the origin first
        let a = Instant::now();
        let d = from_instant(a);
        assert!((1..MAX_DEADLINE).contains(&d));
        let back = to_instant(d);
        assert!(back <= a + Duration::from_nanos(1) && back + Duration::from_micros(1) >= a);
        assert!(now() >= d);
    }
}
