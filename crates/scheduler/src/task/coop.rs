//! Cooperative scheduling (tokio's `task::coop`): how a task that always finds work
//! ready still lets the rest of its loop run.
//!
//! Each time the loop polls a task, the task gets a budget of
//! [`BUDGET`](netloop_reactor::coop::BUDGET) units. Every netloop I/O operation that
//! finds its resource ready spends one; once none is left, operations return `Pending`
//! and wake the task at once, which puts it at the back of its loop's run queue.
//! [`consume_budget`] and [`cooperative`] let code that does work outside netloop's
//! resources take part; [`unconstrained`] opts a future out.
//!
//! ```
//! use netloop_scheduler::task::coop;
//!
//! let rt = netloop_scheduler::runtime::Builder::new_current_thread().build()?;
//! rt.block_on(async {
//!     let other = netloop_scheduler::task::spawn(async {});
//!     // A loop that never waits: spending budget makes it yield now and then, and
//!     // the other task of this loop runs meanwhile.
//!     for _ in 0..1_000 {
//!         coop::consume_budget().await;
//!     }
//!     assert!(other.is_finished());
//! });
//! # Ok::<(), std::io::Error>(())
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

pub use netloop_reactor::coop::{RestoreOnPending, has_budget_remaining, poll_proceed};

/// Spends one unit of the task's budget, yielding to the loop first if none is left
/// (tokio's `task::consume_budget`). Call it in a loop that does work without
/// awaiting anything that could be pending.
pub async fn consume_budget() {
    let mut status = Poll::Pending;
    std::future::poll_fn(move |cx| {
        if status.is_ready() {
            return status;
        }
        status = poll_proceed(cx).map(|coop| coop.made_progress());
        status
    })
    .await
}

pin_project_lite::pin_project! {
    /// A future that runs with no budget: see [`unconstrained`].
    #[must_use = "Unconstrained does nothing unless polled"]
    #[derive(Debug)]
    pub struct Unconstrained<F> {
        #[pin]
        inner: F,
    }
}

impl<F: Future> Future for Unconstrained<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let inner = self.project().inner;
        netloop_reactor::coop::with_unconstrained(|| inner.poll(cx))
    }
}

/// Runs `inner` without a budget: its operations never yield because the task's
/// budget is spent (tokio's `task::unconstrained`). A future that never waits then
/// never gives its loop back, so use it only for work that is bounded.
pub fn unconstrained<F>(inner: F) -> Unconstrained<F> {
    Unconstrained { inner }
}

pin_project_lite::pin_project! {
    /// A future that spends budget as netloop's own resources do: see [`cooperative`].
    #[must_use = "futures do nothing unless polled"]
    #[derive(Debug)]
    pub struct Coop<F> {
        #[pin]
        fut: F,
    }
}

impl<F: Future> Future for Coop<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let coop = ready!(poll_proceed(cx));
        match self.project().fut.poll(cx) {
            Poll::Ready(out) => {
                coop.made_progress();
                Poll::Ready(out)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Makes `fut` take part in the budget (tokio's `task::coop::cooperative`): each poll
/// first spends a unit (yielding if none is left), given back unless `fut` completes.
/// For futures from crates that know nothing of netloop's budget, such as
/// `futures::channel::mpsc`.
pub fn cooperative<F: Future>(fut: F) -> Coop<F> {
    Coop { fut }
}
