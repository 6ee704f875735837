//! Support for the macros; not a public API.

#[cfg(not(tokio_unstable))]
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pub use netloop_macros::{join_internal, select_internal, try_join_internal};
pub use pin_project_lite::pin_project;

/// `Pending` (after waking the task) when the task's cooperative budget is spent:
/// `select!` yields there, as tokio's does, so that a loop over always-ready branches
/// cannot starve the loop.
pub fn poll_budget_available(cx: &mut Context<'_>) -> Poll<()> {
    if netloop_reactor::coop::has_budget_remaining() {
        Poll::Ready(())
    } else {
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A uniform random number in `0..n` from this thread's generator (branch order of
/// `select!` and `join!`); a runtime built with `Builder::rng_seed` (under
/// `tokio_unstable`) seeds it.
pub use netloop_scheduler::runtime::thread_rng_n;

pin_project_lite::pin_project! {
    /// A future and then its output, for `join!`.
    ///
    /// `repr(C)`, as tokio's: the tag is not folded into the future's spare bit
    /// patterns, so a `join!` future has tokio's size (tokio's tests assert it).
    #[project = MaybeDoneProj]
    #[project_replace = MaybeDoneReplace]
    #[repr(C)]
    pub enum MaybeDone<F: Future> {
        /// Still running.
        Future { #[pin] future: F },
        /// Finished; the output waits to be taken.
        Done { output: F::Output },
        /// The output was taken.
        Gone,
    }
}

impl<F: Future> MaybeDone<F> {
    /// Wraps a future.
    pub fn new(future: F) -> Self {
        MaybeDone::Future { future }
    }

    /// Polls the future if it is still running; `Ready` once it has finished.
    pub fn poll_done(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let output = match self.as_mut().project() {
            MaybeDoneProj::Future { future } => match future.poll(cx) {
                Poll::Ready(output) => output,
                Poll::Pending => return Poll::Pending,
            },
            _ => return Poll::Ready(()),
        };
        self.set(MaybeDone::Done { output });
        Poll::Ready(())
    }

    /// The output, if finished and not taken.
    pub fn output_ref(self: Pin<&mut Self>) -> Option<&F::Output> {
        match self.project() {
            MaybeDoneProj::Done { output } => Some(output),
            _ => None,
        }
    }

    /// The output, mutably, if finished and not taken.
    pub fn output_mut(self: Pin<&mut Self>) -> Option<&mut F::Output> {
        match self.project() {
            MaybeDoneProj::Done { output } => Some(output),
            _ => None,
        }
    }

    /// Takes the output, if finished and not taken.
    pub fn take_output(mut self: Pin<&mut Self>) -> Option<F::Output> {
        if !matches!(&*self, MaybeDone::Done { .. }) {
            return None;
        }
        match self.as_mut().project_replace(MaybeDone::Gone) {
            MaybeDoneReplace::Done { output } => Some(output),
            _ => None,
        }
    }
}

/// Polls the future until it finishes, keeping its output (tokio's `MaybeDone` is a
/// future of `()`, for `tokio::macros::support::maybe_done`).
impl<F: Future> Future for MaybeDone<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_done(cx)
    }
}
