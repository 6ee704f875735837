//! hyper 1.x on netloop: an [`Executor`] and a [`Timer`] (feature `hyper`).
//!
//! Give them to hyper's builders; for I/O wrap a [`TcpStream`](crate::net::TcpStream)
//! in `hyper_util::rt::TokioIo`, since netloop's sockets implement tokio's own
//! `AsyncRead` / `AsyncWrite`.
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

/// Spawns hyper's background futures (HTTP/2 streams, client connections) with
/// [`crate::spawn`]: on the current loop when called from one, so a connection's
/// futures stay together.
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
#[derive(Debug, Clone, Copy, Default)]
pub struct NetloopTimer;

/// A netloop [`Sleep`](crate::time::Sleep) as a hyper [`Sleep`].
#[derive(Debug)]
pub struct NetloopSleep(crate::time::Sleep);

impl Future for NetloopSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
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
            Some(mut ours) => Pin::new(&mut ours.0).reset(new_deadline.into()),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}
