//! `DatagramIo`: the one seam between a UDP socket and its loop's driver.
//!
//! ```text
//!  recv_from ─▶ DatagramIo ─┬─ readiness (epoll): PollEvented: wait for the readable
//!                           │    edge, then recvfrom(2) until it would block
//!                           └─ completion (io_uring): RingDatagram: take the datagram
//!                                its one-shot recvmsg brought (one armed ahead)
//!  send_to   ─▶ DatagramIo ─── sendto(2) now in either mode; on WouldBlock, wait for
//!                                writability (epoll's edge, or a ring poll)
//! ```
//!
//! The choice is made once, at the socket's first use, as for streams (`StreamIo`): a
//! socket bound or taken `from_std` on a loop that runs on io_uring leaves that loop's
//! epoll at once and is placed at its first use: on the ring if that use is on an
//! io_uring loop's thread, else registered for readiness. A socket on the ring asked
//! for readiness itself ([`evented`](DatagramIo::evented): `ready`, `try_io`,
//! `async_io`) leaves the ring for good; a datagram the ring had received is still the
//! next receive's. `UnixDatagram` stays on readiness (`PollEvented`).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll, ready};

use mio::net::UdpSocket;

use super::poll_evented::PollEvented;
use super::ready::{Direction, Ready};
use super::ring::datagram::RingDatagram;
use super::ring::first_use::{self, FirstUse};
use crate::coop;

/// A UDP socket's I/O on its loop: readiness or completion, chosen at first use.
pub struct DatagramIo {
    evented: PollEvented<UdpSocket>,
    /// On the loop's ring or on readiness, chosen at first use; left for good.
    ring: FirstUse<RingDatagram>,
}

impl std::fmt::Debug for DatagramIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatagramIo")
            .field("evented", &self.evented)
            .field("on_ring", &self.ring.chosen().is_some())
            .finish()
    }
}

impl From<PollEvented<UdpSocket>> for DatagramIo {
    /// A registered socket, on readiness until [`bound`](DatagramIo::bound) says
    /// otherwise.
    fn from(evented: PollEvented<UdpSocket>) -> Self {
        DatagramIo {
            evented,
            ring: FirstUse::readiness(),
        }
    }
}

impl DatagramIo {
    /// A socket just bound (or taken `from_std`), registered with its loop: on a loop
    /// that runs on io_uring it leaves epoll now and is placed at its first use (see
    /// the module); on an epoll loop it stays as it is.
    pub fn bound(self) -> io::Result<Self> {
        let Some(handle) = self.evented.registered_loop() else {
            return Ok(self);
        };
        if !handle.shared.on_ring.load(Relaxed) {
            return Ok(self);
        }
        // Nobody else holds the socket yet, so no waiter is lost with the registration.
        let source = self.into_inner()?;
        Ok(DatagramIo {
            evented: PollEvented::new_deferred(source, mio::Interest::READABLE | mio::Interest::WRITABLE, handle)
                .assuming_ready(Ready::WRITABLE),
            ring: FirstUse::undecided(),
        })
    }

    /// The ring socket while the socket is on the ring; decides at the first call.
    #[inline]
    fn ring(&self) -> Option<&Arc<RingDatagram>> {
        self.ring
            .on_ring(|| first_use::choose(&self.evented, |core| RingDatagram::new(core, self.evented.get_ref())))
    }

    /// True while the socket's receives go through its loop's ring.
    pub fn is_on_ring(&self) -> bool {
        self.ring().is_some()
    }

    /// The socket.
    pub fn get_ref(&self) -> &UdpSocket {
        self.evented.get_ref()
    }

    /// The readiness registration, for operations that need readiness itself (`ready`,
    /// `try_io`, `async_io`): a socket on the ring leaves it.
    pub fn evented(&self) -> &PollEvented<UdpSocket> {
        if let Some(ring) = self.ring() {
            self.evented.set_deferred_assumed(ring.readiness());
            self.ring.leave();
            ring.stop(false);
        }
        &self.evented
    }

    /// The ring socket of a socket that left the ring.
    fn left(&self) -> Option<&Arc<RingDatagram>> {
        self.ring.left()
    }

    /// Polls for readiness in `direction`; `shared`: every task waiting so is woken
    /// (`readable`, `writable`), else only the last to poll (`poll_recv_ready`,
    /// `poll_send_ready`).
    pub fn poll_ready(&self, cx: &mut Context<'_>, direction: Direction, shared: bool) -> Poll<io::Result<()>> {
        match (self.ring(), direction) {
            (Some(ring), Direction::Read) => ring.poll_read_ready(cx, shared),
            (Some(ring), Direction::Write) => ring.poll_write_ready(Some((&*cx, shared))),
            (None, Direction::Read) if self.left().is_some_and(|r| r.has_leftover()) => Poll::Ready(Ok(())),
            (None, _) if shared => self.evented.poll_ready_shared(cx, direction).map_ok(drop),
            (None, Direction::Read) => self.evented.poll_read_ready(cx).map_ok(drop),
            (None, Direction::Write) => self.evented.poll_write_ready(cx).map_ok(drop),
        }
    }

    /// [`poll_ready`](Self::poll_ready) with every waiting task woken (`readable`,
    /// `writable`).
    pub fn poll_ready_shared(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<io::Result<()>> {
        self.poll_ready(cx, direction, true)
    }

    /// Receives one datagram into `buf` (cut to fit, the rest discarded; `peek` leaves
    /// it for the next receive) and its sender, waiting until one is there. `shared`:
    /// several tasks may await at once (each datagram goes to one of them), else only
    /// the last task to poll is woken.
    ///
    /// `errors`: the socket's pending error alone ends the wait and is returned, as it
    /// does for tokio's async receives (`recv`, `recv_from`, `peek`, ...: they wait for
    /// `READABLE | ERROR`); the `poll_*` receives wait for a datagram (`READABLE`).
    pub fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        peek: bool,
        shared: bool,
        errors: bool,
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        if let Some(ring) = self.ring() {
            let coop = ready!(coop::poll_proceed(cx));
            let result = ready!(ring.poll_recv(Some((&*cx, shared)), buf, peek, errors, |b| recv_direct(
                self.get_ref(),
                b,
                peek
            )));
            coop.made_progress();
            return Poll::Ready(result);
        }
        if let Some(leftover) = self
            .left()
            .and_then(|r| r.take_leftover(Some((&*cx, shared)), buf, peek))
        {
            return leftover;
        }
        let op = |s: &UdpSocket| recv_direct(s, buf, peek);
        if errors {
            self.evented.poll_io_shared_or_error(cx, Direction::Read, op)
        } else if shared {
            self.evented.poll_io_shared(cx, Direction::Read, op)
        } else {
            self.evented.poll_read_io(cx, op)
        }
    }

    /// [`poll_recv_from`](Self::poll_recv_from) without waiting: `WouldBlock` if no
    /// datagram is there (on the ring, the receive is then armed, so that `readable`
    /// says when one is).
    pub fn try_recv_from(&self, buf: &mut [u8], peek: bool) -> io::Result<(usize, SocketAddr)> {
        if let Some(ring) = self.ring() {
            return match ring.poll_recv(None, buf, peek, false, |b| recv_direct(self.get_ref(), b, peek)) {
                Poll::Ready(result) => result,
                Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
            };
        }
        match self.left().and_then(|r| r.take_leftover(None, buf, peek)) {
            Some(Poll::Ready(result)) => return result,
            Some(Poll::Pending) => return Err(io::ErrorKind::WouldBlock.into()),
            None => {}
        }
        self.evented.try_io(Direction::Read, |s| recv_direct(s, buf, peek))
    }

    /// Runs the send `op` on the socket (its error is the caller's at once), waiting
    /// for writability while it would block. `shared` as for
    /// [`poll_recv_from`](Self::poll_recv_from).
    pub fn poll_send<R>(
        &self,
        cx: &mut Context<'_>,
        shared: bool,
        mut op: impl FnMut(&UdpSocket) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        let Some(ring) = self.ring() else {
            return if shared {
                self.evented.poll_io_shared(cx, Direction::Write, op)
            } else {
                self.evented.poll_write_io(cx, op)
            };
        };
        let coop = ready!(coop::poll_proceed(cx));
        loop {
            ready!(ring.poll_write_ready(Some((&*cx, shared))))?;
            match op(self.get_ref()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ring.send_would_block(),
                result => {
                    coop.made_progress();
                    return Poll::Ready(result);
                }
            }
        }
    }

    /// Runs the send `op` once if the socket is writable; `WouldBlock` otherwise.
    pub fn try_send<R>(&self, op: impl FnOnce(&UdpSocket) -> io::Result<R>) -> io::Result<R> {
        let Some(ring) = self.ring() else {
            return self.evented.try_io(Direction::Write, op);
        };
        match ring.poll_write_ready(None) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => return Err(io::ErrorKind::WouldBlock.into()),
        }
        let result = op(self.get_ref());
        if matches!(&result, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
            ring.send_would_block();
        }
        result
    }

    /// Takes the socket's pending error (`SO_ERROR`), first the one the ring's receive
    /// took from the kernel and keeps for the socket's next operation.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        if let Some(e) = self.ring().or_else(|| self.left()).and_then(|r| r.take_pending_error()) {
            return Ok(Some(e));
        }
        self.get_ref().take_error()
    }

    /// Leaves the loop and returns the socket (`into_std`). A socket on the ring stops
    /// its operations first; a datagram it received and nobody took is lost with it.
    pub fn into_inner(self) -> io::Result<UdpSocket> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; each field is read once.
        let (evented, ring) = unsafe { (std::ptr::read(&this.evented), std::ptr::read(&this.ring)) };
        if let Some(ring) = ring.into_inner() {
            ring.stop(true);
        }
        evented.into_inner()
    }
}

/// One `recvfrom(2)` (`peek`: `MSG_PEEK`) that does not wait.
fn recv_direct(socket: &UdpSocket, buf: &mut [u8], peek: bool) -> io::Result<(usize, SocketAddr)> {
    if peek {
        socket.peek_from(buf)
    } else {
        socket.recv_from(buf)
    }
}

impl Drop for DatagramIo {
    fn drop(&mut self) {
        // The ring socket has a descriptor of its own: the socket's closes as usual.
        if let Some(ring) = self.ring.take() {
            ring.stop(true);
        }
    }
}
