//! A listener's multishot accept on its loop's ring.
//!
//! ```text
//!   accept task                                     loop (completions)
//!   poll_accept: a descriptor waits? take it     ◀─ accepted: its descriptor queued
//!     : an error waits? report it                   (closed at once if the listener
//!     : no accept armed? arm it (on the loop's      is gone), the waiters woken;
//!       thread only; elsewhere: readiness)          ACCEPT_AHEAD waiting: the accept
//!     : wait                                        cancelled until they are taken
//!   close (listener gone): the accept cancelled, the descriptors waiting closed
//! ```
//!
//! The kernel accepts each connection as it comes (non-blocking, close-on-exec) and
//! posts its descriptor, with no system call per connection. A failed accept
//! (`EMFILE`, ...) is returned by the next `accept`, and the accept is armed again by
//! the one after.
//!
//! Invariant: the accept names the acceptor's own descriptor ([`RingFd`]), which the
//! acceptor keeps open while the accept holds it; the listener cancels it on its own
//! loop's thread, where the cancel goes to the kernel before any later submission can
//! reuse a number.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use super::fd::RingFd;
use crate::completion::{CompleteCx, CompletionTarget, OpKind, OpMemory};
use crate::context;
use crate::io::shared_waiters;
use crate::shared::Shared;
use crate::sync::lock;
use crate::sys::op;
use crate::sys::ring::Completion;
use crate::sys::socket::ECANCELED;

/// Connections a multishot accept may take ahead of the application's `accept` calls:
/// past this many waiting, the accept is cancelled, and armed again once an `accept`
/// finds none waiting. The rest wait in the kernel's backlog, as on readiness, holding
/// no descriptor of the process (a server that bounds its connections by not calling
/// `accept` keeps its descriptors, and a flood cannot exhaust them).
const ACCEPT_AHEAD: usize = 16;

#[derive(Default)]
struct AcceptState {
    accepted: VecDeque<OwnedFd>,
    error: Option<i32>,
    /// The multishot accept in flight (its op key).
    armed: Option<usize>,
    /// Its cancel is asked for ([`ACCEPT_AHEAD`] connections wait).
    pausing: bool,
    waiters: Vec<Waker>,
    /// The listener is gone: later descriptors are closed as they come.
    closed: bool,
    loop_gone: bool,
}

/// A listener's multishot accept. Owned by its listener and by the accept in flight,
/// which keeps the listening descriptor's number meaningful: the listener closes it
/// only after cancelling (on its own loop's thread, where the cancel is queued before
/// any later submission can reuse the number).
pub(crate) struct RingAcceptor {
    /// A duplicate of the listener's descriptor, closed with the last holder.
    keeper: RingFd,
    shared: Arc<Shared>,
    state: Mutex<AcceptState>,
}

impl RingAcceptor {
    /// The acceptor of a listener registered with the loop of `shared`, if that loop
    /// runs on io_uring and this is its thread; `None` (the listener accepts by
    /// readiness) otherwise, or if no descriptor is left for the duplicate.
    pub(crate) fn new(shared: &Arc<Shared>, listener: &impl AsRawFd) -> Option<Arc<RingAcceptor>> {
        if !shared.on_ring.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        let shared = context::with_own_core(shared, |core| core.shared.clone())?;
        // The acceptor's own descriptor: the accept names it, not the listener's,
        // whose number may be reused once the listener closes.
        Some(Arc::new(RingAcceptor {
            keeper: RingFd::duplicate(listener)?,
            shared,
            state: Mutex::new(AcceptState::default()),
        }))
    }

    /// An accept that does not wait spends a unit of the task's budget (`Pending`, the
    /// task woken later, once it is spent), as tokio's does.
    pub(crate) fn poll_accept(self: &Arc<Self>, cx: &mut Context<'_>) -> Option<Poll<io::Result<OwnedFd>>> {
        let mut state = lock(&self.state);
        if !state.accepted.is_empty() || state.error.is_some() || state.loop_gone {
            match crate::coop::poll_proceed(cx) {
                Poll::Ready(budget) => budget.made_progress(),
                Poll::Pending => return Some(Poll::Pending),
            }
        }
        if let Some(fd) = state.accepted.pop_front() {
            return Some(Poll::Ready(Ok(fd)));
        }
        if let Some(errno) = state.error.take() {
            return Some(Poll::Ready(Err(io::Error::from_raw_os_error(errno))));
        }
        if state.loop_gone {
            return Some(Poll::Ready(Err(crate::error::LoopShutDown::io_error())));
        }
        if state.armed.is_none() {
            let armed = context::with_own_core(&self.shared, |core| {
                let mut ring = core.ring.try_borrow_mut().ok()?;
                let driver = ring.as_mut()?;
                let entry = op::accept_multi(self.keeper.raw());
                // SAFETY: the operation holds this acceptor; the listener cancels it
                // before closing the descriptor (see the type's docs).
                unsafe { driver.submit(self.clone(), OpKind::Accept, entry, None) }.ok()
            })
            .flatten();
            match armed {
                Some(key) => state.armed = Some(key),
                // Off the loop's thread (a moved listener) or its ring is busy or gone:
                // this accept goes by readiness.
                None => return None,
            }
        }
        let displaced = shared_waiters::join(&mut state.waiters, cx.waker());
        drop(state);
        displaced.into_iter().for_each(Waker::wake);
        Some(Poll::Pending)
    }

    /// The listener is gone: cancel the accept; descriptors not taken are closed.
    pub(crate) fn close(self: &Arc<Self>) {
        let mut state = lock(&self.state);
        state.closed = true;
        state.accepted.clear();
        let Some(key) = state.armed else { return };
        drop(state);
        let this = self.clone();
        let cancel = move |core: &crate::core::Core| {
            if let Ok(mut ring) = core.ring.try_borrow_mut()
                && let Some(driver) = ring.as_mut()
            {
                driver.cancel(key);
                // The cancel goes to the kernel before the descriptor closes.
                let _ = driver.ring.enter(Some(std::time::Duration::ZERO));
            }
            drop(this);
        };
        if let Err(cancel) = context::on_own_core(&self.shared, cancel, |core, cancel| cancel(core)) {
            let shared = self.shared.clone();
            let item = crate::queue_item::QueueItem::Closure(Box::new(move || {
                let _ = context::on_own_core(&shared.clone(), cancel, |core, cancel| cancel(core));
            }));
            let _ = self.shared.submit(item, crate::shared::Wake::Now);
        }
    }
}

impl CompletionTarget for RingAcceptor {
    fn complete(self: Arc<Self>, _kind: OpKind, c: Completion, _mem: Option<OpMemory>, cx: &mut CompleteCx<'_>) {
        let mut state = lock(&self.state);
        if c.result >= 0 {
            // SAFETY: the kernel made this descriptor for us; nobody else owns it.
            let fd = unsafe { OwnedFd::from_raw_fd(c.result) };
            if !state.closed {
                state.accepted.push_back(fd);
            }
        } else if -c.result != ECANCELED {
            state.error = Some(-c.result);
        }
        if !c.more() {
            state.armed = None;
            state.pausing = false;
        } else if state.accepted.len() >= ACCEPT_AHEAD
            && !state.pausing
            && let Some(key) = state.armed
        {
            // Enough are taken ahead: the rest wait in the backlog until these are.
            state.pausing = true;
            cx.driver.cancel(key);
        }
        let waiters = std::mem::take(&mut state.waiters);
        drop(state);
        for w in waiters {
            cx.wake(w);
        }
    }
}
