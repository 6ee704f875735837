//! `timeout`: a future with a deadline.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::instant::Instant;
use super::sleep::{Due, Sleep, sleep_until};

/// The deadline passed before the future completed (tokio's `time::error::Elapsed`).
///
/// It converts to an `io::Error` of kind `TimedOut`, so `?` passes it on from a function
/// returning `io::Result`.
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::time::timeout;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let never = std::future::pending::<()>();
/// let elapsed = timeout(Duration::from_millis(1), never).await.unwrap_err();
/// assert_eq!(elapsed.to_string(), "deadline has elapsed");
///
/// let err = std::io::Error::from(elapsed);
/// assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
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
    ///
    /// On expiry it drops the inner future, which cancels whatever that future was
    /// doing. Awaiting a task's [`JoinHandle`](crate::task::JoinHandle) with a timeout
    /// drops only the handle, though: the task runs on, detached, until aborted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use netloop_scheduler::{task, time};
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let slow = task::spawn(time::sleep(Duration::from_secs(60)));
    /// let abort = slow.abort_handle();
    /// assert!(time::timeout(Duration::from_millis(10), slow).await.is_err());
    /// assert!(!abort.is_finished()); // still running
    /// abort.abort();
    /// # });
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    #[derive(Debug)]
    pub struct Timeout<T> {
        #[pin]
        value: T,
        #[pin]
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
    Timeout {
        value: future.into_future(),
        delay: Sleep::new(Instant::now().far_add(duration), Due::after(duration)),
    }
}

/// Requires `future` to complete before `deadline`, else `Err(Elapsed)`.
///
/// One deadline for several steps, where `timeout` would give each step its own:
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::time::{Instant, sleep, timeout_at};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let deadline = Instant::now() + Duration::from_millis(50);
/// assert!(timeout_at(deadline, sleep(Duration::from_millis(1))).await.is_ok());
/// assert!(timeout_at(deadline, sleep(Duration::from_secs(60))).await.is_err());
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
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
        let mut this = self.project();
        let had_budget = netloop_reactor::coop::has_budget_remaining();
        if let Poll::Ready(v) = this.value.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        let mut poll_delay = || match this.delay.as_mut().poll(cx) {
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
