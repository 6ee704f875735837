//! Termination: the future and the blocking wait that report a loop has ended.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::sync::lock;

#[derive(Default)]
struct State {
    terminated: bool,
    wakers: Vec<Waker>,
}

#[derive(Default)]
pub(crate) struct Termination {
    state: Mutex<State>,
    cv: Condvar,
}

impl Termination {
    pub(crate) fn complete(&self) {
        let wakers = {
            let mut s = lock(&self.state);
            s.terminated = true;
            std::mem::take(&mut s.wakers)
        };
        self.cv.notify_all();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Blocks up to `timeout`; true if terminated.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut s = lock(&self.state);
        while !s.terminated {
            let wait = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(w) if !w.is_zero() => w,
                    _ => return false,
                },
                None => Duration::from_secs(3600),
            };
            s = self
                .cv
                .wait_timeout(s, wait)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        true
    }

    fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = lock(&self.state);
        if s.terminated {
            return Poll::Ready(());
        }
        if !s.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            s.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// Resolves when the loop has terminated (Netty's `terminationFuture`).
///
/// It may be awaited anywhere, even on a task of another loop. A task of the very loop
/// it watches never sees it resolve (the loop drops its tasks as it terminates); to
/// wait from a plain thread use
/// [`EventLoopHandle::await_termination`](crate::EventLoopHandle::await_termination).
#[derive(Clone)]
#[must_use = "futures do nothing unless polled"]
pub struct TerminationFuture {
    pub(crate) termination: Arc<Termination>,
    pub(crate) loop_id: u64,
}

impl Future for TerminationFuture {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.termination.poll(cx)
    }
}

impl std::fmt::Debug for TerminationFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminationFuture")
            .field("loop", &self.loop_id)
            .finish()
    }
}
