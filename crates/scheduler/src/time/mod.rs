//! Time, with tokio's `time` API, on each loop's timing wheel.
//!
//! A timer is an entry in the wheel of the event loop that created it; the loop wakes
//! it straight from the wheel when it is due (no closure, no extra task). Polled on its
//! own loop, as a task's timer is, the entry holds the task's waker and nothing else is
//! allocated or shared. Timers never fire early: the loop rounds its poll timeout up and
//! re-checks the clock.

mod instant;
mod interval;
pub(crate) mod parked;
mod sleep;
mod timeout;

pub use instant::Instant;
pub use interval::{Interval, MissedTickBehavior, interval, interval_at};
pub use sleep::{Sleep, sleep, sleep_until};
pub use std::time::Duration;
pub use timeout::{Timeout, timeout, timeout_at};

#[cfg(feature = "test-util")]
mod pause;
#[cfg(feature = "test-util")]
pub use pause::{advance, pause, resume};

/// Time errors.
pub mod error {
    pub use super::timeout::Elapsed;
}
