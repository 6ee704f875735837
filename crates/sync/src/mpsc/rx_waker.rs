//! The cell where the receiver leaves its waker for the senders: one atomic state word
//! guards an `Option<Waker>`, so a send wakes the receiver without a lock.
//!
//! The state is `IDLE`, `REGISTERING` (the receiver is writing the cell) or has `WAKING`
//! set (a sender is taking the waker out). Whoever moves the state away from `IDLE`
//! owns the cell until it moves it back. A wake that arrives while the receiver
//! registers is not lost: the receiver sees `WAKING` when it finishes and wakes the
//! waker it just stored itself.

use std::fmt;
use std::task::Waker;

use super::cell::{UnsafeCell, spin_yield};
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Release};

const IDLE: usize = 0;
const REGISTERING: usize = 0b01;
const WAKING: usize = 0b10;

/// A waker slot shared by one registering task and any number of wakers.
pub(crate) struct RxWaker {
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the cell is only touched by the thread that moved `state` away from `IDLE`
// (see the module's doc), and `Waker` is `Send + Sync`.
unsafe impl Send for RxWaker {}
// SAFETY: see above.
unsafe impl Sync for RxWaker {}

impl RxWaker {
    pub(crate) fn new() -> Self {
        RxWaker {
            state: AtomicUsize::new(IDLE),
            waker: UnsafeCell::new(None),
        }
    }

    /// Stores `waker` to be woken by the next [`wake`](Self::wake).
    pub(crate) fn register(&self, waker: &Waker) {
        match self.state.compare_exchange(IDLE, REGISTERING, Acquire, Acquire) {
            Ok(_) => {
                // SAFETY: `REGISTERING` gives us the cell.
                self.waker.with_mut(|p| unsafe {
                    match &mut *p {
                        Some(old) if old.will_wake(waker) => {}
                        slot => *slot = Some(waker.clone()),
                    }
                });
                if self.state.compare_exchange(REGISTERING, IDLE, AcqRel, Acquire).is_err() {
                    // A wake came in meanwhile (state is REGISTERING | WAKING): the
                    // waker left nothing to wake, so wake ours now.
                    // SAFETY: the cell is still ours until the swap below.
                    let w = self.waker.with_mut(|p| unsafe { (*p).take() });
                    self.state.swap(IDLE, AcqRel);
                    if let Some(w) = w {
                        w.wake();
                    }
                }
            }
            // A wake is being delivered right now: have the task polled again, and
            // give the waking thread a moment to finish.
            Err(WAKING) => {
                waker.wake_by_ref();
                spin_yield();
            }
            // Only one task registers at a time (the receiver); nothing to do.
            Err(_) => {}
        }
    }

    /// Wakes the registered task, if any.
    pub(crate) fn wake(&self) {
        if let Some(w) = self.take() {
            w.wake();
        }
    }

    /// Takes the registered waker out, if any.
    pub(crate) fn take(&self) -> Option<Waker> {
        match self.state.fetch_or(WAKING, AcqRel) {
            IDLE => {
                // SAFETY: we moved the state from IDLE to WAKING: the cell is ours.
                let w = self.waker.with_mut(|p| unsafe { (*p).take() });
                self.state.fetch_and(!WAKING, Release);
                w
            }
            // Registering (the receiver will see WAKING) or another wake in progress.
            _ => None,
        }
    }
}

impl fmt::Debug for RxWaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AtomicWaker")
    }
}
