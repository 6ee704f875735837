//! Deadlines as nanoseconds on one process-wide monotonic timeline.
//!
//! Every loop measures deadlines from the same origin, so a deadline computed on one
//! thread means the same instant on every other, and fits in one `AtomicU64`
//! (`next_wakeup` stores it). `0` and `u64::MAX` are reserved by the wakeup protocol
//! (AWAKE and NONE), so real deadlines live in `1..=MAX_DEADLINE`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The latest deadline a task can have: about 584 years after the process started.
/// Larger delays clamp to it instead of overflowing (spec scenario 12).
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
    let nanos = at.saturating_duration_since(origin()).as_nanos();
    u64::try_from(nanos)
        .unwrap_or(MAX_DEADLINE)
        .saturating_add(1)
        .min(MAX_DEADLINE)
}

/// Converts a deadline back into an `Instant`, saturating at the far future.
#[cfg(test)]
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
