//! `timeout`: a future with a deadline.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{Instant, Sleep, sleep_until};

/// The deadline passed before the future completed (tokio's `time::error::Elapsed`).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(_: Elapsed) -> std::io::Error {
        std::io::ErrorKind::TimedOut.into()
    }
}

pin_project_lite::pin_project! {
    /// A future with a deadline (tokio's `time::Timeout`).
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    #[derive(Debug)]
    pub struct Timeout<T> {
        #[pin]
        value: T,
        delay: Sleep,
    }
}

/// Requires `future` to complete within `duration`, else `Err(Elapsed)`.
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::time::{sleep, timeout};
/// # let rt = netloop_scheduler::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// let slow = sleep(Duration::from_secs(60));
/// assert!(timeout(Duration::from_millis(10), slow).await.is_err());
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    timeout_at(Instant::now().far_add(duration), future)
}

/// Requires `future` to complete before `deadline`, else `Err(Elapsed)`.
#[track_caller]
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    Timeout {
        value: future.into_future(),
        delay: sleep_until(deadline),
    }
}

impl<T> Timeout<T> {
    /// The inner future.
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The inner future, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The inner future, dropping the timer.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T: Future> Future for Timeout<T> {
    type Output = Result<T::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let had_budget = netloop_reactor::coop::has_budget_remaining();
        if let Poll::Ready(v) = this.value.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        let mut poll_delay = || match Pin::new(&mut *this.delay).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        };
        // A future that spent the whole budget must not also keep its deadline from
        // being looked at: the delay is then polled without a budget.
        if had_budget && !netloop_reactor::coop::has_budget_remaining() {
            netloop_reactor::coop::with_unconstrained(poll_delay)
        } else {
            poll_delay()
        }
    }
}
