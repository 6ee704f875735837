//! `Instant`, as tokio's `time::Instant`: a wrapper of `std::time::Instant`.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A measurement of a monotonically nondecreasing clock (tokio's `time::Instant`).
///
/// Prefer it to `std::time::Instant` in async code: with the `test-util` feature it
/// follows a paused clock, so that code measuring time can be tested without waiting.
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::time::{Instant, sleep};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let start = Instant::now();
/// sleep(Duration::from_millis(5)).await;
/// assert!(start.elapsed() >= Duration::from_millis(5)); // timers never fire early
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    std: std::time::Instant,
}

impl Instant {
    /// Now. With the `test-util` feature, on a loop whose clock is paused, or on a
    /// thread that entered a runtime whose clock is (`Runtime::enter`, as tokio's), the
    /// paused time.
    pub fn now() -> Instant {
        #[cfg(feature = "test-util")]
        if let Some(std) = netloop_reactor::EventLoopHandle::current_timer_now() {
            return Instant { std };
        }
        #[cfg(feature = "test-util")]
        if let Some(std) = entered_paused_now() {
            return Instant { std };
        }
        Instant {
            std: std::time::Instant::now(),
        }
    }

    /// Converts from `std::time::Instant`.
    pub fn from_std(std: std::time::Instant) -> Instant {
        Instant { std }
    }

    /// Converts to `std::time::Instant`.
    pub fn into_std(self) -> std::time::Instant {
        self.std
    }

    /// Time from `earlier` to `self`; zero if `earlier` is later.
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// Time from `earlier` to `self`, or `None` if `earlier` is later.
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.std.checked_duration_since(earlier.std)
    }

    /// Time from `earlier` to `self`; zero if `earlier` is later.
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// Time since `self`.
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// `self + duration`, or `None` on overflow.
    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_add(duration).map(Instant::from_std)
    }

    /// `self - duration`, or `None` on underflow.
    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_sub(duration).map(Instant::from_std)
    }

    /// `self + duration`, clamped to about 30 years ahead instead of overflowing
    /// (tokio's behaviour for "far future" deadlines).
    pub(crate) fn far_add(&self, duration: Duration) -> Instant {
        self.checked_add(duration)
            .unwrap_or_else(|| Instant::far_future_of(*self))
    }

    pub(crate) fn far_future_of(base: Instant) -> Instant {
        base + Duration::from_secs(86_400 * 365 * 30)
    }
}

impl From<std::time::Instant> for Instant {
    fn from(std: std::time::Instant) -> Instant {
        Instant::from_std(std)
    }
}

impl From<Instant> for std::time::Instant {
    fn from(i: Instant) -> std::time::Instant {
        i.into_std()
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant::from_std(self.std + rhs)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        self.std.saturating_duration_since(rhs.std)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        Instant::from_std(self.std - rhs)
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, rhs: Duration) {
        *self = *self - rhs;
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.std.fmt(f)
    }
}

/// The time of the entered runtime's clock, if the thread is in a runtime's context
/// without driving one of its loops and that clock is not the real one (only a
/// current-thread runtime's single loop can be paused).
#[cfg(feature = "test-util")]
fn entered_paused_now() -> Option<std::time::Instant> {
    crate::context::with_current(|rt| {
        let event_loop = rt?.group.iter().next()?;
        let clock = event_loop.clock();
        (!clock.is_real()).then(|| clock.now_instant())
    })
}
