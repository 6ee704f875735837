//! `Interval`: ticks at a fixed period, with tokio's missed-tick behaviours.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::instant::Instant;
use super::sleep::{Sleep, sleep_until};

/// What an [`Interval`] does when ticks were missed (tokio's `MissedTickBehavior`).
///
/// A tick is missed when the task was busy past it (by more than 5 ms). `Burst`, the
/// default, catches up by firing the missed ticks at once; `Skip` drops them and keeps
/// the original rhythm; `Delay` starts a new rhythm from the late tick.
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::time::{MissedTickBehavior, interval, sleep};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut ticks = interval(Duration::from_millis(10));
/// ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
/// let start = ticks.tick().await; // at once
///
/// sleep(Duration::from_millis(35)).await; // busy: the ticks at 10, 20 and 30 ms are missed
/// assert_eq!(ticks.tick().await - start, Duration::from_millis(10)); // late, at once
///
/// // `Burst` would now fire the 20 ms tick at once; `Skip` goes on at 40 ms (or later
/// // on the same grid).
/// assert!(ticks.tick().await - start >= Duration::from_millis(40));
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissedTickBehavior {
    /// Fire the missed ticks at once, then go back to the original schedule.
    #[default]
    Burst,
    /// Start a new schedule `period` after the late tick.
    Delay,
    /// Skip the missed ticks; stay on the original schedule's grid.
    Skip,
}

impl MissedTickBehavior {
    fn next_timeout(self, timeout: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => timeout + period,
            MissedTickBehavior::Delay => now + period,
            MissedTickBehavior::Skip => {
                let period_ns = period.as_nanos().max(1);
                let behind = (now - timeout).as_nanos() % period_ns;
                now + period - Duration::from_nanos(behind as u64)
            }
        }
    }
}

/// Ticks every `period` (tokio's `time::Interval`).
///
/// For periodic work. Unlike a `sleep(period)` after each round, an interval does not
/// drift: each tick is due one period after the previous tick was due, however long
/// the work in between took.
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::time;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut heartbeat = time::interval(Duration::from_millis(5));
/// let first = heartbeat.tick().await; // the first tick completes at once
/// for _ in 0..3 {
///     heartbeat.tick().await;
///     // ... send a heartbeat ...
/// }
/// assert!(first.elapsed() >= Duration::from_millis(15));
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Interval {
    delay: Pin<Box<Sleep>>,
    period: Duration,
    missed_tick_behavior: MissedTickBehavior,
}

/// An interval whose first tick completes at once. Panics if `period` is zero.
///
/// ```
/// use std::time::Duration;
/// # let rt = netloop_scheduler::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// let mut every = netloop_scheduler::time::interval(Duration::from_millis(5));
/// every.tick().await; // immediately
/// every.tick().await; // 5 ms later
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    interval_at(Instant::now(), period)
}

/// An interval whose first tick completes at `start`. Panics if `period` is zero.
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::time::{Instant, interval_at};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let start = Instant::now() + Duration::from_millis(5);
/// let mut ticks = interval_at(start, Duration::from_millis(5));
/// assert_eq!(ticks.tick().await, start); // the first tick waits for `start`
/// assert_eq!(ticks.tick().await, start + Duration::from_millis(5));
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    Interval {
        delay: Box::pin(sleep_until(start)),
        period,
        missed_tick_behavior: MissedTickBehavior::default(),
    }
}

impl Interval {
    /// Completes at the next tick, returning its scheduled instant.
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        ready!(self.delay.as_mut().poll(cx));
        let timeout = self.delay.deadline();
        let now = Instant::now();
        // A tick more than 5 ms late counts as missed (tokio's threshold).
        let next = if now > timeout + Duration::from_millis(5) {
            self.missed_tick_behavior.next_timeout(timeout, now, self.period)
        } else {
            timeout.far_add(self.period)
        };
        self.delay.as_mut().reset(next);
        Poll::Ready(timeout)
    }

    /// Restarts the schedule: the next tick is one period from now.
    pub fn reset(&mut self) {
        self.delay.as_mut().reset(Instant::now().far_add(self.period));
    }

    /// The next tick completes at once.
    pub fn reset_immediately(&mut self) {
        self.delay.as_mut().reset(Instant::now());
    }

    /// The next tick completes `after` from now.
    pub fn reset_after(&mut self, after: Duration) {
        self.delay.as_mut().reset(Instant::now().far_add(after));
    }

    /// The next tick completes at `deadline`.
    pub fn reset_at(&mut self, deadline: Instant) {
        self.delay.as_mut().reset(deadline);
    }

    /// The behaviour for missed ticks.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed_tick_behavior
    }

    /// Sets the behaviour for missed ticks.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed_tick_behavior = behavior;
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }
}
