//! hyper 1.x on netloop: an [`Executor`] and a [`Timer`] (feature `hyper`), and with
//! feature `hyper-client` a connector for hyper-util's pooled client
//! (`NetloopConnector`).
//!
//! Give them to hyper's builders; for I/O wrap a [`TcpStream`](crate::net::TcpStream)
//! in `hyper_util::rt::TokioIo`, since netloop's sockets also implement tokio's own
//! `AsyncRead` / `AsyncWrite` (feature `tokio-io`, on by default).
//!
//! ```ignore
//! hyper::server::conn::http1::Builder::new()
//!     .timer(netloop::hyper_rt::NetloopTimer)
//!     .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::rt::{Executor, Sleep, Timer};

#[cfg(feature = "hyper-client")]
#[path = "hyper_rt_client.rs"]
mod client;
#[cfg(feature = "hyper-client")]
pub use client::{NetloopConnector, NetloopStream};

/// Spawns hyper's background futures (HTTP/2 streams, client connections) with
/// [`crate::spawn`]: on the current loop when called from one, so a connection's
/// futures stay together.
///
/// hyper calls [`execute`](Executor::execute) itself once given the executor (for
/// instance `hyper::client::conn::http2::Builder::new(NetloopExecutor)`); called by
/// hand it is a `spawn` whose handle is dropped:
///
/// ```
/// use hyper::rt::Executor;
/// use netloop::hyper_rt::NetloopExecutor;
///
/// # #[netloop::main(flavor = "current_thread")]
/// # async fn main() {
/// let (tx, rx) = netloop::sync::oneshot::channel();
/// NetloopExecutor.execute(async move {
///     let _ = tx.send("ran in the background");
/// });
/// assert_eq!(rx.await.unwrap(), "ran in the background");
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NetloopExecutor;

impl<Fut> Executor<Fut> for NetloopExecutor
where
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    fn execute(&self, fut: Fut) {
        drop(crate::spawn(fut));
    }
}

/// hyper's timers (header read timeouts, keep-alive) on netloop's loop timers.
///
/// Give it to a hyper builder's `timer(..)`; hyper then sleeps through it:
///
/// ```
/// use std::time::Duration;
/// use hyper::rt::Timer;
/// use netloop::hyper_rt::NetloopTimer;
///
/// # #[netloop::main(flavor = "current_thread")]
/// # async fn main() {
/// let start = std::time::Instant::now();
/// NetloopTimer.sleep(Duration::from_millis(5)).await;
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NetloopTimer;

/// A netloop [`Sleep`](crate::time::Sleep) as a hyper [`Sleep`].
///
/// What [`NetloopTimer`] hands out. When hyper moves a deadline (a keep-alive timer
/// restarting, say), the timer resets the same sleep in place rather than making a
/// new one:
///
/// ```
/// use std::time::{Duration, Instant};
/// use hyper::rt::Timer;
/// use netloop::hyper_rt::{NetloopSleep, NetloopTimer};
///
/// # #[netloop::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut sleep = NetloopTimer.sleep(Duration::from_secs(60));
/// assert!(sleep.as_mut().downcast_mut_pin::<NetloopSleep>().is_some());
/// NetloopTimer.reset(&mut sleep, Instant::now() + Duration::from_millis(1));
/// sleep.await; // 1 ms, not 60 s
/// # }
/// ```
#[derive(Debug)]
pub struct NetloopSleep(crate::time::Sleep);

impl NetloopSleep {
    /// The pinned sleep inside (a `Sleep` is `!Unpin`, as tokio's).
    fn sleep(self: Pin<&mut Self>) -> Pin<&mut crate::time::Sleep> {
        // SAFETY: the field is pinned structurally: `NetloopSleep` has no `Drop`, is
        // `Unpin` only if the sleep is, and nothing moves the sleep out of a pin.
        unsafe { self.map_unchecked_mut(|s| &mut s.0) }
    }
}

impl Future for NetloopSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.sleep().poll(cx)
    }
}

impl Sleep for NetloopSleep {}

impl Timer for NetloopTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        Box::pin(NetloopSleep(crate::time::sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(NetloopSleep(crate::time::sleep_until(deadline.into())))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<NetloopSleep>() {
            Some(ours) => ours.sleep().reset(new_deadline.into()),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}
