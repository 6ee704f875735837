//! The seam every ring socket shares: how it reaches its loop's ring driver from any
//! thread, submits an operation (or learns that the loop is gone), cancels what it
//! has in flight, and takes in completions at once on the loop's thread.
//!
//! ```text
//!   any thread                         loop thread (driver free)
//!   with_driver(f) ── on the loop? ──▶ f(socket, Some(driver)) now
//!        │ no                              │
//!        └─▶ a closure on the loop's ──────┘ (f(socket, None) if its ring is gone;
//!            queue, the loop woken             on_loop_gone if the queue refuses)
//!
//!   submit(entry) ─▶ driver.submit ─▶ Some(key): in the op table until its last
//!                    │                  completion, holding the socket
//!                    └─ no driver, or it refuses (draining): `loop_gone` set, None;
//!                       the caller wakes that direction's waiters
//! ```

use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

use super::waiters::{Waiters, wake_all};
use crate::completion::{CompletionTarget, OpKind, OpMemory, RingDriver};
use crate::context;
use crate::queue_item::QueueItem;
use crate::shared::{Shared, Wake};
use crate::sync::lock;
use crate::sys::op::Entry;

/// A ring socket's state, as the seam sees it.
pub(crate) trait RingState {
    /// The loop is gone: from now on every operation fails. Returns every waiter, to
    /// wake once the lock is released.
    fn lose_loop(&mut self) -> [Waiters; 2];
}

/// A socket of one loop's ring (a stream's or a datagram socket's): how it reaches the
/// loop's driver, from any thread.
pub(crate) trait OnRing: CompletionTarget + Sized + 'static {
    /// What the socket knows, under its lock.
    type State: RingState;

    /// The loop's shared state.
    fn loop_shared(&self) -> &Arc<Shared>;

    /// The socket's state.
    fn state(&self) -> &Mutex<Self::State>;

    /// The loop is gone: every waiter hears it.
    fn on_loop_gone(&self) {
        let wakers = lock(self.state()).lose_loop();
        wake_all(wakers);
    }

    /// Runs `f` with the loop's ring driver: at once on the loop's thread (unless the
    /// driver is in use there), else on the loop, woken for it. `f` gets `None` only if
    /// the loop or its ring is gone.
    fn with_driver(self: &Arc<Self>, f: impl FnOnce(&Arc<Self>, Option<&mut RingDriver>) + Send + 'static) {
        let Err(f) = self.on_loop(f) else { return };
        let this = self.clone();
        let run = move || {
            if let Err(f) = this.on_loop(f) {
                f(&this, None);
            }
        };
        if let Err(rejected) = self.loop_shared().submit(QueueItem::Closure(Box::new(run)), Wake::Now) {
            drop(rejected);
            self.on_loop_gone();
        }
    }

    /// [`with_driver`](Self::with_driver) with the socket's state locked: `f` returns
    /// the waiters to wake, which are woken once the lock is released.
    fn with_driver_locked(
        self: &Arc<Self>,
        f: impl FnOnce(&Arc<Self>, &mut Self::State, Option<&mut RingDriver>) -> Waiters + Send + 'static,
    ) {
        self.with_driver(|this, driver| {
            let mut state = lock(this.state());
            let woken = f(this, &mut state, driver);
            drop(state);
            wake_all([woken]);
        });
    }

    /// Runs `f` with the driver if this thread drives the socket's loop and the driver
    /// is free; gives `f` back otherwise.
    fn on_loop<F>(self: &Arc<Self>, f: F) -> Result<(), F>
    where
        F: FnOnce(&Arc<Self>, Option<&mut RingDriver>),
    {
        match context::on_own_core(self.loop_shared(), f, |core, f| match core.ring.try_borrow_mut() {
            Ok(mut ring) => {
                f(self, ring.as_mut());
                Ok(())
            }
            Err(_) => Err(f),
        }) {
            Ok(done) => done,
            Err(f) => Err(f),
        }
    }

    /// Submits `entry` (of `kind`, owning `mem`) with this socket as its target and
    /// returns its key; with no driver, or one that refuses (the loop draining), sets
    /// `loop_gone` and returns `None`: the caller then wakes the waiters of the
    /// operation's direction, which hear that the loop is gone.
    ///
    /// # Safety
    ///
    /// `entry` names only this socket's own descriptor ([`RingFd`](super::fd::RingFd),
    /// which the socket keeps open while any operation holds it), the loop's buffer
    /// group, and `mem`'s heap memory.
    unsafe fn submit(
        self: &Arc<Self>,
        driver: Option<&mut RingDriver>,
        loop_gone: &mut bool,
        kind: OpKind,
        entry: Entry,
        mem: Option<OpMemory>,
    ) -> Option<usize> {
        let submitted = match driver {
            // SAFETY: the operation holds this socket, which keeps its descriptor open
            // until the operation's last completion; the buffer group is the driver's
            // pool, which outlives it; `mem` goes with the operation (the caller
            // promises the entry names nothing else).
            Some(driver) => unsafe { driver.submit(self.clone(), kind, entry, mem) }.ok(),
            None => None,
        };
        if submitted.is_none() {
            *loop_gone = true;
        }
        submitted
    }

    /// Cancels the operations `in_flight` lists: on the loop's thread at once
    /// (`IORING_REGISTER_SYNC_CANCEL`), with the completions already posted taken in,
    /// so that nothing the ring received is still on its way; elsewhere the cancels are
    /// only queued, and their completions come on a later turn.
    fn cancel_in_flight(self: &Arc<Self>, in_flight: impl Fn(&Self) -> Vec<usize> + Send + 'static) {
        let done = reap_now(self.loop_shared(), |driver| {
            for key in in_flight(self) {
                let _ = driver.ring.cancel_now(key as u64);
            }
        });
        if !done {
            self.with_driver(move |this, driver| {
                let Some(driver) = driver else { return };
                for key in in_flight(this) {
                    driver.cancel(key);
                }
            });
        }
    }

    /// From `block_on`'s own future, which may block its thread before the loop's next
    /// turn, the queued operations go to the kernel now.
    fn submit_now_from_main(&self) {
        context::with_own_core(self.loop_shared(), |core| {
            if core.polling_main.get() {
                core.submit_now();
            }
        });
    }
}

/// On the thread of `shared`'s loop, with its driver and selector free: the queued
/// operations go to the kernel, `then` runs with the driver, and the completions
/// already posted are taken in (their wakers woken). False, with nothing done,
/// anywhere else.
pub(crate) fn reap_now(shared: &Arc<Shared>, then: impl FnOnce(&mut RingDriver)) -> bool {
    context::with_own_core(shared, |core| {
        let Ok(mut ring) = core.ring.try_borrow_mut() else {
            return false;
        };
        // The loop's poll of its epoll instance may complete among the others: the
        // selector notes it (dispatch would drop it, and epoll's events with it), so
        // nothing is taken in while the selector is busy.
        let Ok(mut selector) = core.selector.try_borrow_mut() else {
            return false;
        };
        let Some(driver) = ring.as_mut() else { return false };
        let _ = driver.ring.enter(Some(Duration::ZERO));
        then(driver);
        let mut out = std::mem::take(&mut driver.completions);
        let first = out.len();
        driver.ring.take_completions(&mut out);
        selector.note_epoll_completions(&mut out, first);
        drop(selector);
        driver.completions = out;
        let mut wakers = Vec::new();
        let in_place = |w: &Waker| crate::task::wake_in_place::<Arc<Shared>>(core, w);
        driver.dispatch(&in_place, &mut wakers);
        drop(ring);
        wakers.into_iter().for_each(Waker::wake);
        true
    }) == Some(true)
}
