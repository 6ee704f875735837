//! `ListenerIo`: a listener's accepts (TCP, Unix), by readiness or by a multishot
//! accept on its loop's ring.
//!
//! On a loop that runs on io_uring, a listener first accepted from on its own loop's
//! thread arms one multishot accept (`RingAcceptor`, in `ring/acceptor.rs`): the kernel
//! accepts each connection as it comes and posts its descriptor, which waits there for
//! `accept`; a few at most, the next connections waiting in the kernel's backlog. A
//! listener first accepted from elsewhere stays on readiness, as does every listener of
//! an epoll loop.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::task::{Context, Poll};

use mio::event::Source;

use super::poll_evented::PollEvented;
use super::ready::Direction;
use super::ring::acceptor::RingAcceptor;
use super::ring::first_use::FirstUse;
use crate::handle::EventLoopHandle;

/// A listener's I/O on its loop: readiness, or a multishot accept on the ring.
pub struct ListenerIo<S: Source + AsRawFd> {
    evented: PollEvented<S>,
    /// The ring's accept, once the first accept chose it.
    ring: FirstUse<RingAcceptor>,
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
            ring: FirstUse::undecided(),
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
        self.ring.chosen().is_some()
    }

    fn acceptor(&self) -> Option<&Arc<RingAcceptor>> {
        self.ring.on_ring(|| {
            let registration = self.evented.registration().ok()?;
            RingAcceptor::new(&registration.handle().shared, self.evented.get_ref())
        })
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
        if let Some(acceptor) = ring.into_inner() {
            acceptor.close();
        }
        evented.into_inner()
    }
}

impl<S: Source + AsRawFd> Drop for ListenerIo<S> {
    fn drop(&mut self) {
        if let Some(acceptor) = self.ring.take() {
            acceptor.close();
        }
    }
}
