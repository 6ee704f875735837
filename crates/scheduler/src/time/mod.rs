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
    use std::fmt;

    pub use super::timeout::Elapsed;

    /// A timer operation that failed, as tokio's `time::error::Error`.
    ///
    /// netloop's timers do not return it (a timer outside a runtime panics, a wheel
    /// has no capacity limit, a far deadline is clamped); it is here so that code
    /// naming tokio's type compiles.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Error(Kind);

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Kind {
        Shutdown,
        AtCapacity,
        Invalid,
    }

    impl Error {
        /// The timer's runtime has shut down (or there is none).
        pub fn shutdown() -> Error {
            Error(Kind::Shutdown)
        }

        /// True for [`shutdown`](Self::shutdown)'s error.
        pub fn is_shutdown(&self) -> bool {
            self.0 == Kind::Shutdown
        }

        /// The timer cannot take another entry for now.
        pub fn at_capacity() -> Error {
            Error(Kind::AtCapacity)
        }

        /// True for [`at_capacity`](Self::at_capacity)'s error.
        pub fn is_at_capacity(&self) -> bool {
            self.0 == Kind::AtCapacity
        }

        /// The duration is beyond what the timer can represent.
        pub fn invalid() -> Error {
            Error(Kind::Invalid)
        }

        /// True for [`invalid`](Self::invalid)'s error.
        pub fn is_invalid(&self) -> bool {
            self.0 == Kind::Invalid
        }
    }

    impl fmt::Display for Error {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self.0 {
                Kind::Shutdown => "timer unavailable: no runtime, or its runtime has shut down",
                Kind::AtCapacity => "timer full: no room for another entry",
                Kind::Invalid => "timer duration out of range",
            })
        }
    }

    impl std::error::Error for Error {}
}
