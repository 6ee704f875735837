//! The cooperative budget: one busy task cannot starve the loop.
//!
//! Before the loop polls a task it gives the task [`BUDGET`] units. Every I/O
//! operation on a netloop resource that finds its socket ready spends one through
//! [`poll_proceed`]. When the budget is spent, the operation returns `Pending` even
//! though the socket is ready and wakes the task at once, which puts it at the back of
//! the run queue: the other tasks, the timers and the next `select` get their turn
//! first. An operation that has to wait for readiness spends nothing (tokio gives the
//! unit back in that case; netloop looks at readiness first). (tokio gives 128 units
//! per poll; Netty reads at most 16 messages per readiness event. Outside a loop the
//! budget is unlimited.)
//!
//! ```
//! use std::task::{Context, Poll};
//! use netloop_reactor::coop;
//!
//! // A resource that is always ready still yields once the budget is spent.
//! fn poll_next(cx: &mut Context<'_>) -> Poll<u32> {
//!     let coop = std::task::ready!(coop::poll_proceed(cx));
//!     coop.made_progress();
//!     Poll::Ready(42)
//! }
//! # let _ = poll_next;
//! ```

use std::cell::Cell;
use std::marker::PhantomData;
use std::task::{Context, Poll};

/// Units of work a task may do per poll.
pub const BUDGET: u8 = 128;

thread_local! {
    static CURRENT: Cell<Option<u8>> = const { Cell::new(None) };
}

/// Runs `f` with a fresh budget, restoring the previous one afterwards: what the loop
/// does around each poll of a task, and what `block_on` does around each poll of its
/// future (tokio's `coop::budget`).
#[inline]
pub fn with_budget<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(Option<u8>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let _ = CURRENT.try_with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(CURRENT.with(|c| c.replace(Some(BUDGET))));
    f()
}

/// Runs `f` with no budget at all, restoring the previous one afterwards: the
/// operations inside never yield for budget (tokio's `task::unconstrained`).
#[inline]
pub fn with_unconstrained<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(Option<u8>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let _ = CURRENT.try_with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(CURRENT.with(|c| c.replace(None)));
    f()
}

/// Spends one unit, or returns `Pending` (after waking the task) when none is left.
///
/// The returned guard gives the unit back when dropped unless
/// [`RestoreOnPending::made_progress`] was called, so an operation that ends up
/// `Pending` anyway costs nothing.
#[inline]
pub fn poll_proceed(cx: &mut Context<'_>) -> Poll<RestoreOnPending> {
    // Every operation that spends budget is a leaf of a task trace (tokio_unstable).
    #[cfg(tokio_unstable)]
    std::task::ready!(crate::trace::trace_leaf(cx));
    CURRENT.with(|c| match c.get() {
        None => Poll::Ready(RestoreOnPending(Cell::new(None), PhantomData)),
        Some(0) => {
            crate::defer(cx.waker());
            Poll::Pending
        }
        Some(n) => {
            c.set(Some(n - 1));
            #[cfg(tokio_unstable)]
            if n == 1 {
                crate::schedule::counts::forced_yield();
            }
            Poll::Ready(RestoreOnPending(Cell::new(Some(n)), PhantomData))
        }
    })
}

/// True if the current task may still do work (always true outside a loop).
pub fn has_budget_remaining() -> bool {
    CURRENT.with(|c| c.get() != Some(0))
}

/// Gives a budget unit back on drop unless the operation made progress.
///
/// Neither `Send` nor `Sync`, as tokio's: it gives the unit back to the budget of the
/// thread it was created on.
#[derive(Debug)]
#[must_use = "call made_progress() when the operation did work"]
pub struct RestoreOnPending(Cell<Option<u8>>, PhantomData<*const ()>);

impl RestoreOnPending {
    /// The operation did work: keep the unit spent. Takes `&self`, as tokio's does, so
    /// an operation that loops may report progress more than once.
    #[inline]
    pub fn made_progress(&self) {
        self.0.set(None);
    }
}

impl Drop for RestoreOnPending {
    #[inline]
    fn drop(&mut self) {
        if let Some(n) = self.0.get() {
            let _ = CURRENT.try_with(|c| c.set(Some(n)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    #[test]
    fn budget_runs_out_and_wakes() {
        let mut cx = Context::from_waker(Waker::noop());
        with_budget(|| {
            for _ in 0..BUDGET {
                match poll_proceed(&mut cx) {
                    Poll::Ready(r) => r.made_progress(),
                    Poll::Pending => panic!("budget ran out early"),
                }
            }
            assert!(!has_budget_remaining());
            assert!(poll_proceed(&mut cx).is_pending());
        });
        assert!(has_budget_remaining(), "outside a loop the budget is unlimited");
    }

    #[test]
    fn unconstrained_never_runs_out_and_restores_the_budget() {
        let mut cx = Context::from_waker(Waker::noop());
        with_budget(|| {
            let Poll::Ready(r) = poll_proceed(&mut cx) else {
                panic!()
            };
            r.made_progress();
            with_unconstrained(|| {
                for _ in 0..10 * BUDGET as usize {
                    let Poll::Ready(r) = poll_proceed(&mut cx) else {
                        panic!("an unconstrained operation yielded")
                    };
                    r.made_progress();
                }
            });
            assert_eq!(CURRENT.with(Cell::get), Some(BUDGET - 1), "the task's budget is back");
        });
    }

    #[test]
    fn no_progress_gives_the_unit_back() {
        let mut cx = Context::from_waker(Waker::noop());
        with_budget(|| {
            for _ in 0..1000 {
                let Poll::Ready(r) = poll_proceed(&mut cx) else {
                    panic!()
                };
                drop(r);
            }
            assert!(has_budget_remaining());
        });
    }
}
