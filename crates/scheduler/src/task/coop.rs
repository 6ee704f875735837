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
///
/// ```
/// use netloop_scheduler::task::coop;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// let items: Vec<u64> = (0..10_000).collect();
/// let mut total = 0;
/// for item in &items {
///     coop::consume_budget().await; // yields once the task's budget is spent
///     total += item;
/// }
/// assert_eq!(total, 49_995_000);
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
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
    ///
    /// For a short burst of work that should finish before anything else on the loop
    /// runs, even if it spends more than a budget:
    ///
    /// ```
    /// use netloop_scheduler::task::coop;
    ///
    /// let rt = netloop_scheduler::runtime::Builder::new_current_thread().build()?;
    /// let sum = rt.block_on(coop::unconstrained(async {
    ///     let mut sum = 0;
    ///     for i in 0..1_000u64 {
    ///         coop::consume_budget().await; // never yields in here
    ///         sum += i;
    ///     }
    ///     sum
    /// }));
    /// assert_eq!(sum, 499_500);
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
///
/// ```
/// use netloop_scheduler::task::coop;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// // A bounded batch, finished in one turn of the loop.
/// let batch = coop::unconstrained(async {
///     let mut squares = Vec::new();
///     for i in 0..1_000u64 {
///         coop::consume_budget().await;
///         squares.push(i * i);
///     }
///     squares
/// })
/// .await;
/// assert_eq!(batch.len(), 1_000);
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn unconstrained<F>(inner: F) -> Unconstrained<F> {
    Unconstrained { inner }
}

pin_project_lite::pin_project! {
    /// A future that spends budget as netloop's own resources do: see [`cooperative`].
    ///
    /// A receiver from a crate that knows nothing of netloop's budget, made to yield
    /// now and then when it always finds a message waiting:
    ///
    /// ```
    /// use futures::StreamExt;
    /// use netloop_scheduler::task::coop;
    ///
    /// let rt = netloop_scheduler::runtime::Builder::new_current_thread().build()?;
    /// rt.block_on(async {
    ///     let (tx, mut rx) = futures::channel::mpsc::unbounded();
    ///     for i in 0..1_000u32 {
    ///         tx.unbounded_send(i).unwrap();
    ///     }
    ///     drop(tx);
    ///     let mut received = 0;
    ///     while let Some(_message) = coop::cooperative(rx.next()).await {
    ///         received += 1;
    ///     }
    ///     assert_eq!(received, 1_000);
    /// });
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
///
/// ```
/// use futures::StreamExt;
/// use netloop_scheduler::task::coop;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// let (tx, rx) = futures::channel::mpsc::unbounded::<u32>();
/// (0..100).for_each(|i| tx.unbounded_send(i).unwrap());
/// drop(tx);
/// // Each item now spends a unit of budget, as a netloop socket read would.
/// let sum = coop::cooperative(rx.fold(0, |sum, i| async move { sum + i })).await;
/// assert_eq!(sum, 4_950);
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn cooperative<F: Future>(fut: F) -> Coop<F> {
    Coop { fut }
}
