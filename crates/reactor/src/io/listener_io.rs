//! `ListenerIo`: a listener's accepts (TCP, Unix), by readiness or by a multishot
//! accept on its loop's ring.
//!
//! On a loop that runs on io_uring, a listener first accepted from on its own loop's
//! thread arms one multishot accept: the kernel accepts each connection as it comes
//! (non-blocking, close-on-exec) and posts its descriptor, with no system call per
//! connection. Descriptors wait here for `accept`, [`ACCEPT_AHEAD`] at most: past that
//! the accept is cancelled and the next connections wait in the kernel's backlog until
//! an `accept` finds none here and arms it again. A failed accept (`EMFILE`, ...) is
//! returned by the next one, and the accept is armed again by the one after. A
//! listener first accepted from elsewhere stays on readiness, as does every listener of
//! an epoll loop.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use mio::event::Source;

use super::poll_evented::PollEvented;
use super::ready::Direction;
use crate::completion::{CompleteCx, Completion, CompletionTarget, OpKind, OpMemory};
use crate::context;
use crate::handle::EventLoopHandle;
use crate::shared::Shared;
use crate::sync::lock;
use crate::sys::op;
use crate::sys::socket::{self, ECANCELED};

/// A listener's I/O on its loop: readiness, or a multishot accept on the ring.
pub struct ListenerIo<S: Source + AsRawFd> {
    evented: PollEvented<S>,
    ring: OnceLock<Option<Arc<RingAcceptor>>>,
}

impl<S: Source + AsRawFd + std::fmt::Debug> std::fmt::Debug for ListenerIo<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.evented.fmt(f)
    }
}

impl<S: Source + AsRawFd> From<PollEvented<S>> for ListenerIo<S> {
    fn from(evented: PollEvented<S>) -> Self {
        ListenerIo {
            evented,
            ring: OnceLock::new(),
        }
    }
}

impl<S: Source + AsRawFd> ListenerIo<S> {
    /// The readiness registration (`readable`, `ready`, `try_io`, a readiness accept).
    pub fn evented(&self) -> &PollEvented<S> {
        &self.evented
    }

    /// The listening socket.
    pub fn get_ref(&self) -> &S {
        self.evented.get_ref()
    }

    /// The loop the listener is registered with.
    pub fn registered_loop(&self) -> Option<EventLoopHandle> {
        self.evented.registered_loop()
    }

    /// True once the listener accepts through its loop's ring.
    pub fn is_on_ring(&self) -> bool {
        self.ring.get().is_some_and(Option::is_some)
    }

    fn acceptor(&self) -> Option<&Arc<RingAcceptor>> {
        self.ring
            .get_or_init(|| {
                let shared = &self.evented.registration().ok()?.handle().shared;
                if !shared.on_ring.load(std::sync::atomic::Ordering::Relaxed) {
                    return None;
                }
                let shared = context::with_own_core(shared, |core| core.shared.clone())?;
                // The acceptor's own descriptor: the accept names it, not the
                // listener's, whose number may be reused once the listener closes.
                // SAFETY: the listener holds its descriptor open for this call.
                let listener = unsafe { BorrowedFd::borrow_raw(self.evented.get_ref().as_raw_fd()) };
                Some(Arc::new(RingAcceptor {
                    keeper: socket::duplicate(listener).ok()?,
                    shared,
                    state: Mutex::new(AcceptState::default()),
                }))
            })
            .as_ref()
    }

    /// Polls the ring's accept: `None` if this accept goes by readiness (a listener
    /// on readiness, or polled off its loop's thread with no accept armed).
    pub fn poll_accept_ring(&self, cx: &mut Context<'_>) -> Option<Poll<io::Result<OwnedFd>>> {
        self.acceptor()?.poll_accept(cx)
    }

    /// Polls for one accepted connection, whichever way the listener accepts: the
    /// ring's multishot accept (its descriptor made a `T` by `from_ring`, whose error is
    /// the accept's), else `accept` run on the socket when it is readable. `shared`:
    /// several tasks may await the accept at once (each connection goes to one of
    /// them); otherwise only the last task to poll is woken.
    pub fn poll_accept<T>(
        &self,
        cx: &mut Context<'_>,
        shared: bool,
        from_ring: impl FnOnce(OwnedFd) -> io::Result<T>,
        accept: impl FnMut(&S) -> io::Result<T>,
    ) -> Poll<io::Result<T>> {
        if let Some(polled) = self.poll_accept_ring(cx) {
            return polled.map(|accepted| accepted.and_then(from_ring));
        }
        if shared {
            self.evented.poll_io_shared(cx, Direction::Read, accept)
        } else {
            self.evented.poll_read_io(cx, accept)
        }
    }

    /// Leaves the loop and returns the socket (`into_std`); a ring accept is cancelled
    /// and connections it accepted meanwhile are closed.
    pub fn into_inner(self) -> io::Result<S> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; each field is read once.
        let (evented, ring) = unsafe { (std::ptr::read(&this.evented), std::ptr::read(&this.ring)) };
        if let Some(Some(acceptor)) = ring.into_inner() {
            acceptor.close();
        }
        evented.into_inner()
    }
}

impl<S: Source + AsRawFd> Drop for ListenerIo<S> {
    fn drop(&mut self) {
        if let Some(Some(acceptor)) = self.ring.take() {
            acceptor.close();
        }
    }
}

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
    keeper: OwnedFd,
    shared: Arc<Shared>,
    state: Mutex<AcceptState>,
}

impl RingAcceptor {
    /// An accept that does not wait spends a unit of the task's budget (`Pending`, the
    /// task woken later, once it is spent), as tokio's does.
    fn poll_accept(self: &Arc<Self>, cx: &mut Context<'_>) -> Option<Poll<io::Result<OwnedFd>>> {
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
                let entry = op::accept_multi(self.keeper.as_raw_fd());
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
        let displaced = super::shared_waiters::join(&mut state.waiters, cx.waker());
        drop(state);
        displaced.into_iter().for_each(Waker::wake);
        Some(Poll::Pending)
    }

    /// The listener is gone: cancel the accept; descriptors not taken are closed.
    fn close(self: &Arc<Self>) {
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
