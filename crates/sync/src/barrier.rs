//! [`Barrier`]: tasks wait until a set number of them have arrived, then all go on.

use std::fmt;
use std::future::Future;
use std::task::{Context, Poll, Waker, ready};

use crate::loom::lock;
use crate::loom::sync::Mutex;
use crate::waiters::{WaitList, WaiterKey};
use netloop_reactor::coop;

/// Makes `n` tasks meet: each [`wait`](Barrier::wait) returns once `n` waits have
/// arrived in the current round, and the barrier then starts a new round.
///
/// ```
/// use netloop_sync::Barrier;
/// use std::sync::Arc;
///
/// let barrier = Arc::new(Barrier::new(3));
/// let threads: Vec<_> = (0..3)
///     .map(|_| {
///         let b = barrier.clone();
///         std::thread::spawn(move || futures::executor::block_on(b.wait()).is_leader())
///     })
///     .collect();
/// let leaders = threads.into_iter().map(|t| t.join().unwrap()).filter(|&l| l).count();
/// assert_eq!(leaders, 1);
/// ```
pub struct Barrier {
    n: usize,
    state: Mutex<Round>,
    /// tokio's `runtime.resource` span of the barrier.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    resource_span: tracing::Span,
}

/// The current round.
struct Round {
    /// Waits arrived in this round.
    arrived: usize,
    /// Counts the rounds completed; a waiter's round is over once this moved on.
    generation: u64,
    /// The wakers of this round's waiting tasks (all drained when the round ends).
    waiters: WaitList<Option<Waker>>,
}

impl Barrier {
    /// Creates a barrier for `n` tasks. `n == 0` acts as `n == 1`: every wait returns
    /// at once (and is the leader), as with `std::sync::Barrier`.
    #[cfg_attr(all(tokio_unstable, feature = "tracing"), track_caller)]
    pub fn new(n: usize) -> Barrier {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        let resource_span = {
            let span = crate::trace::resource_span!("tokio::sync::barrier", "Barrier", std::panic::Location::caller());
            span.in_scope(|| {
                tracing::trace!(target: "runtime::resource::state_update", size = n);
                tracing::trace!(target: "runtime::resource::state_update", arrived = 0);
            });
            span
        };
        Barrier {
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span,
            n: n.max(1),
            state: Mutex::new(Round {
                arrived: 0,
                generation: 0,
                waiters: WaitList::new(),
            }),
        }
    }

    /// Arrives at the barrier and waits until `n` tasks have arrived in this round.
    ///
    /// The task whose arrival completes the round gets a result whose
    /// [`is_leader`](BarrierWaitResult::is_leader) is `true`; all others get `false`.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: the arrival counts from the first poll, and dropping the
    /// future afterwards does not take it back.
    pub fn wait(&self) -> impl Future<Output = BarrierWaitResult> + '_ {
        // Without tokio's `tracing`, the wait's own future: no layer around it.
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        return crate::trace::async_op(&self.resource_span, "Barrier::wait", false, || self.wait_traced());
        #[cfg(not(all(tokio_unstable, feature = "tracing")))]
        self.wait_untraced()
    }

    /// [`wait`](Self::wait), in its async op: tokio's events of an arrival.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    async fn wait_traced(&self) -> BarrierWaitResult {
        self.resource_span.in_scope(|| {
            tracing::trace!(target: "runtime::resource::state_update", arrived = 1, arrived.op = "add");
        });
        tracing::trace!(target: "runtime::resource::async_op::state_update", arrived = true);
        let result = self.wait_untraced().await;
        if result.is_leader() {
            tracing::trace!(target: "runtime::resource::async_op::state_update", is_leader = true);
        }
        result
    }

    async fn wait_untraced(&self) -> BarrierWaitResult {
        // In a block, so that the guard is not part of the future's state.
        let generation = {
            let mut round = lock(&self.state);
            round.arrived += 1;
            if round.arrived == self.n {
                round.arrived = 0;
                round.generation = round.generation.wrapping_add(1);
                let wakers: Vec<Waker> = round.waiters.drain().flatten().collect();
                drop(round);
                for waker in wakers {
                    waker.wake();
                }
                return BarrierWaitResult(true);
            }
            round.generation
        };
        let mut waiting = Waiting {
            barrier: self,
            generation,
            key: None,
        };
        std::future::poll_fn(|cx| waiting.poll(cx)).await;
        BarrierWaitResult(false)
    }
}

/// A follower's wait for the end of its round; leaves the waker list when dropped.
struct Waiting<'a> {
    barrier: &'a Barrier,
    generation: u64,
    key: Option<WaiterKey>,
}

impl Waiting<'_> {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let budget = ready!(coop::poll_proceed(cx));
        let mut round = lock(&self.barrier.state);
        if round.generation != self.generation {
            // The leader drained the list (our node with it).
            self.key = None;
            drop(round);
            budget.made_progress();
            return Poll::Ready(());
        }
        let old = match self.key {
            None => {
                self.key = Some(round.waiters.push_back(Some(cx.waker().clone())));
                None
            }
            Some(key) => match round.waiters.get_mut(key) {
                Some(w) if w.will_wake(cx.waker()) => None,
                slot => slot.replace(cx.waker().clone()),
            },
        };
        drop(round);
        drop(old);
        Poll::Pending
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(key) = self.key else { return };
        let mut round = lock(&self.barrier.state);
        // While the round is the same, the node is still in the list.
        let waker = (round.generation == self.generation).then(|| round.waiters.remove(key));
        drop(round);
        drop(waker);
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let round = lock(&self.state);
        f.debug_struct("Barrier")
            .field("n", &self.n)
            .field("arrived", &round.arrived)
            .field("generation", &round.generation)
            .finish()
    }
}

/// What [`Barrier::wait`] returns: says whether this task was the round's leader.
#[derive(Debug, Clone)]
pub struct BarrierWaitResult(bool);

impl BarrierWaitResult {
    /// True for exactly one task of each round: the one whose arrival completed it.
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn a_dropped_wait_still_counts() {
        let b = Barrier::new(2);
        let mut first = Box::pin(b.wait());
        assert!((&mut first).now_or_never().is_none());
        drop(first);
        let r = b.wait().now_or_never().expect("the dropped arrival counted");
        assert!(r.is_leader());
    }
}
