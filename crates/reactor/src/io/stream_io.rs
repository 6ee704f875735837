//! `StreamIo`: the one seam between a byte stream (TCP, Unix) and its loop's driver.
//!
//! A stream's reads and writes go through here whichever driver its loop runs:
//!
//! ```text
//!  poll_read ─▶ StreamIo ─┬─ readiness (epoll): PollEvented: wait for the readable
//!                         │    edge, then read(2) until it would block
//!                         └─ completion (io_uring): RingSocket: take received chunks;
//!                              the loop's multishot receive fills them
//! ```
//!
//! The choice is made once, at the stream's first use: an accepted stream, a connected
//! one once its connect completed, or one connected from the start (`from_std`, a
//! pair), first used on a loop that runs on io_uring goes on the ring; every other
//! stream (of an epoll loop, or first used off an io_uring loop) stays on readiness. A stream
//! on the ring that is asked for readiness itself ([`evented`](StreamIo::evented):
//! `ready`, `try_io`, `async_io`) leaves the ring for good: its receive is cancelled,
//! and its own reads and peeks take the bytes the ring received first, waiting while
//! the cancelled receive may still bring some (a leave off the loop's thread only
//! queues the cancel); only then does readiness take over. A closure run by `try_io`
//! or `async_io` reads the socket itself and cannot see those bytes.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, IntoRawFd};
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use mio::event::Source;

use super::poll_evented::PollEvented;
use super::ready::{Direction, Ready};
use super::ring::first_use::{self, FirstUse};
use super::ring::stream::socket::RingSocket;
use crate::handle::EventLoopHandle;

/// A byte stream's I/O on its loop: readiness or completion, chosen at first use.
pub struct StreamIo<S: Source + AsRawFd + IntoRawFd> {
    evented: PollEvented<S>,
    /// On the loop's ring or on readiness, chosen at first use; left for good.
    ring: FirstUse<RingSocket>,
}

impl<S: Source + AsRawFd + IntoRawFd + std::fmt::Debug> std::fmt::Debug for StreamIo<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamIo")
            .field("evented", &self.evented)
            .field("on_ring", &self.ring.chosen().is_some())
            .finish()
    }
}

impl<S> StreamIo<S>
where
    S: Source + AsRawFd + IntoRawFd,
    for<'a> &'a S: Read + Write,
{
    /// A stream on readiness for good (registered already, or to be registered at its
    /// first use).
    pub fn readiness(evented: PollEvented<S>) -> Self {
        StreamIo {
            evented,
            ring: FirstUse::readiness(),
        }
    }

    /// An accepted stream: on the ring of the loop that first uses it if that loop runs
    /// on io_uring, else registered there for readiness, assumed readable and writable
    /// until an operation finds otherwise (`fallback`: the loop used if the first use is
    /// off every loop).
    pub fn accepted(source: S, fallback: EventLoopHandle) -> Self {
        Self::deferred(source, fallback, Ready::READABLE | Ready::WRITABLE)
    }

    /// A stream whose connect has just completed (it waited for the handshake by
    /// readiness, registered with its loop's epoll), or one connected from the start
    /// (`from_std`, a pair). On a loop that runs on io_uring it leaves epoll now and is
    /// placed at its next use, as an accepted stream is: on the ring of that use's loop
    /// if it runs on io_uring, else by readiness; assumed writable only (what there is
    /// to read, a read finds or the receive brings). On an epoll loop, or once placed,
    /// it stays as it is.
    pub fn connected(self) -> io::Result<Self> {
        let Some(handle) = self.evented.registered_loop() else {
            return Ok(self);
        };
        if self.ring.chosen().is_some() || !handle.shared.on_ring.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(self);
        }
        // Nobody else holds the stream yet (its connect owned it), so no waiter is
        // lost with the registration.
        let source = self.into_inner()?;
        Ok(Self::deferred(source, handle, Ready::WRITABLE))
    }

    /// A stream placed at its first use (see [`accepted`](Self::accepted)), taken as
    /// ready in `assumed`'s directions until an operation finds otherwise.
    fn deferred(source: S, fallback: EventLoopHandle, assumed: Ready) -> Self {
        StreamIo {
            evented: PollEvented::new_deferred(source, mio::Interest::READABLE | mio::Interest::WRITABLE, fallback)
                .assuming_ready(assumed),
            ring: FirstUse::undecided(),
        }
    }

    /// The ring socket while the stream is on the ring; decides at the first call.
    #[inline]
    fn ring(&self) -> Option<&Arc<RingSocket>> {
        self.ring.on_ring(|| {
            let readable = self.evented.deferred_assumed().is_readable();
            first_use::choose(&self.evented, |core| {
                RingSocket::new(core, self.evented.get_ref(), readable)
            })
        })
    }

    /// True while the stream's I/O goes through its loop's ring.
    pub fn is_on_ring(&self) -> bool {
        self.ring().is_some()
    }

    /// The socket.
    pub fn get_ref(&self) -> &S {
        self.evented.get_ref()
    }

    /// The readiness registration, for operations that need readiness itself (`ready`,
    /// `try_io`, `async_io`, a listener's `accept`): a stream on the ring leaves it.
    pub fn evented(&self) -> &PollEvented<S> {
        if let Some(ring) = self.ring() {
            // Readiness starts from what the stream's user has seen on the ring (not
            // from an accepted stream's first guess), taken before the detach takes in
            // completions the user has not seen.
            self.evented.set_deferred_assumed(ring.readiness());
            self.ring.leave();
            ring.detach();
        }
        &self.evented
    }

    /// The ring socket of a stream that left the ring.
    fn left(&self) -> Option<&Arc<RingSocket>> {
        self.ring.left()
    }

    /// A read (or `peek`) of a stream that left the ring, while the ring's leftovers
    /// come first: the bytes it received, or `Pending` (`waiter`'s waker kept) while
    /// its cancelled receive may still bring some; `None` once the socket is read
    /// directly (see [`RingSocket::read_leftover`]).
    fn read_leftover(
        &self,
        waiter: Option<(&Context<'_>, bool)>,
        buf: &mut [u8],
        peek: bool,
    ) -> Option<Poll<io::Result<usize>>> {
        self.left()?.read_leftover(waiter, buf, peek)
    }

    /// The read readiness of a stream that left the ring while the ring's leftovers
    /// come first; `None` once the socket's readiness counts.
    fn leftover_ready(&self, cx: &Context<'_>, shared: bool) -> Option<Poll<io::Result<()>>> {
        self.left()?.poll_leftover_ready(cx, shared)
    }

    /// Polls for read readiness: on the ring, ready when a read would not wait. Only
    /// the last task to poll is woken. Once ready it spends a unit of the task's
    /// budget, as on readiness (tokio's `poll_read_ready`).
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.ring() {
            Some(ring) => spend_once_ready(cx, |cx| ring.poll_read_ready(cx, false)),
            None => match self.leftover_ready(cx, false) {
                Some(ready) => ready,
                None => self.evented.poll_read_ready(cx).map_ok(drop),
            },
        }
    }

    /// Polls for write readiness: on the ring, ready when the send window has room.
    /// Only the last task to poll is woken. Spends budget as `poll_read_ready` does.
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.ring() {
            Some(ring) => spend_once_ready(cx, |cx| ring.poll_write_ready(cx, false)),
            None => {
                ready!(self.left_sent(Some(cx), false))?;
                self.evented.poll_write_ready(cx).map_ok(drop)
            }
        }
    }

    /// A stream that left the ring writes by readiness only once the ring
    /// has sent what it accepted.
    fn left_sent(&self, cx: Option<&Context<'_>>, shared: bool) -> Poll<io::Result<()>> {
        match self.left() {
            Some(ring) => ring.poll_sent(cx, shared),
            None => Poll::Ready(Ok(())),
        }
    }

    fn left_sent_now(&self) -> io::Result<()> {
        match self.left_sent(None, false) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Readiness in `direction` for a wait several tasks may await at once
    /// (`readable`, `writable`): every waiting task is woken. A stream on readiness
    /// waits on its registration; one on the ring stays there.
    pub fn poll_ready_shared(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<io::Result<()>> {
        match (self.ring(), direction) {
            (Some(ring), Direction::Read) => ring.poll_read_ready(cx, true),
            (Some(ring), Direction::Write) => ring.poll_write_ready(cx, true),
            (None, Direction::Read) => match self.leftover_ready(cx, true) {
                Some(ready) => ready,
                None => self.evented.poll_ready_shared(cx, direction).map_ok(drop),
            },
            (None, Direction::Write) => {
                ready!(self.left_sent(Some(cx), true))?;
                self.evented.poll_ready_shared(cx, direction).map_ok(drop)
            }
        }
    }

    /// Reads into `buf` (tokio's `poll_read`): `Ready(0)` at end of stream.
    #[inline]
    pub fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if let Some(ring) = self.ring() {
            return ring.poll_read(cx, buf);
        }
        if let Some(read) = self.read_leftover(Some((cx, false)), buf, false) {
            return read;
        }
        let len = buf.len();
        // A short read means the socket is drained: its readiness is forgotten now
        // rather than after a read that would block.
        self.evented
            .poll_io_draining(cx, Direction::Read, |mut s| s.read(buf).map(|n| (n, n > 0 && n < len)))
    }

    /// Reads what is there without waiting.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(ring) = self.ring() {
            return ring.try_read(buf);
        }
        match self.read_leftover(None, buf, false) {
            Some(Poll::Ready(read)) => return read,
            Some(Poll::Pending) => return Err(io::ErrorKind::WouldBlock.into()),
            None => {}
        }
        self.evented.try_io(Direction::Read, |mut s| s.read(buf))
    }

    /// The socket's pending error (`SO_ERROR`, through `op`), or first the one the
    /// ring's receive took from the socket and no read has reported yet (the kernel
    /// hands a socket's error to one call only).
    pub fn take_error(&self, op: impl FnOnce(&S) -> io::Result<Option<io::Error>>) -> io::Result<Option<io::Error>> {
        if let Some(ring) = self.ring.chosen()
            && let Some(e) = ring.take_read_error()
        {
            return Ok(Some(e));
        }
        op(self.evented.get_ref())
    }

    /// Vectored [`try_read`](Self::try_read): on the ring, fills the buffers in turn
    /// until one is left short (no more bytes now) or the stream ends, as `readv` does.
    pub fn try_read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        if let Some(ring) = self.ring() {
            let mut total = 0;
            for buf in bufs.iter_mut().filter(|b| !b.is_empty()) {
                match ring.try_read(buf) {
                    Ok(n) => {
                        total += n;
                        if n < buf.len() {
                            break;
                        }
                    }
                    Err(e) if total > 0 && e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if total > 0 => {
                        // Reported by the next read, as `readv` would after its bytes.
                        ring.keep_read_error(e);
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            return Ok(total);
        }
        if self.left().is_some_and(|r| r.has_leftover()) {
            let Some(first) = bufs.iter_mut().find(|b| !b.is_empty()) else {
                return Ok(0);
            };
            return self.try_read(first);
        }
        self.evented.try_io(Direction::Read, |mut s| s.read_vectored(bufs))
    }

    /// Copies received bytes without taking them (`peek`): on the ring, or from what
    /// the ring left (waiting while its cancelled receive is in flight); on readiness,
    /// `peek` runs `op` on the socket.
    pub fn poll_peek(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        op: impl FnMut(&S, &mut [u8]) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        if let Some(ring) = self.ring() {
            return ring.poll_peek(cx, buf);
        }
        if let Some(peeked) = self.read_leftover(Some((cx, false)), buf, true) {
            return peeked;
        }
        let mut op = op;
        self.evented.poll_read_io(cx, |s| op(s, buf))
    }

    /// `peek` of a stream that left the ring, while what the ring received comes
    /// first: `Some` with the bytes peeked, or `Pending` (`cx`'s task woken with every
    /// other task waiting so) while the ring's cancelled receive is in flight; `None`
    /// on the ring, on readiness from the start, or once the socket is peeked directly.
    pub fn poll_peek_leftover(&self, cx: &Context<'_>, buf: &mut [u8]) -> Option<Poll<io::Result<usize>>> {
        self.read_leftover(Some((cx, true)), buf, true)
    }

    /// Writes `buf` (tokio's `poll_write`). On the ring the bytes are accepted into the
    /// send window and go out with the turn's other sends; a failed send is reported by
    /// the next write, flush or shutdown.
    #[inline]
    pub fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if let Some(ring) = self.ring() {
            if buf.is_empty() {
                return ring.poll_write(Some(cx), &[buf]);
            }
            // A write that waits for room gives its unit back (tokio's).
            let budget = ready!(crate::coop::poll_proceed(cx));
            let written = ring.poll_write(Some(cx), &[buf]);
            if written.is_ready() {
                budget.made_progress();
            }
            return written;
        }
        ready!(self.left_sent(Some(cx), false))?;
        let len = buf.len();
        // A short plain write means the send buffer is full.
        self.evented.poll_io_draining(cx, Direction::Write, |mut s| {
            s.write(buf).map(|n| (n, n > 0 && n < len))
        })
    }

    /// Vectored [`poll_write`](Self::poll_write).
    pub fn poll_write_vectored(&self, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        if let Some(ring) = self.ring() {
            let budget = ready!(crate::coop::poll_proceed(cx));
            let written = ring.poll_write(Some(cx), bufs);
            if written.is_ready() {
                budget.made_progress();
            }
            return written;
        }
        ready!(self.left_sent(Some(cx), false))?;
        // No short-write shortcut here: `writev` takes at most IOV_MAX slices, so a
        // short vectored write does not mean the send buffer is full.
        self.evented
            .poll_io_draining(cx, Direction::Write, |mut s| s.write_vectored(bufs).map(|n| (n, false)))
    }

    /// Writes without waiting.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        if let Some(ring) = self.ring() {
            return match ring.poll_write(None, &[buf]) {
                Poll::Ready(r) => r,
                Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
            };
        }
        self.left_sent_now()?;
        self.evented.try_io(Direction::Write, |mut s| s.write(buf))
    }

    /// Vectored [`try_write`](Self::try_write).
    pub fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        if let Some(ring) = self.ring() {
            return match ring.poll_write(None, bufs) {
                Poll::Ready(r) => r,
                Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
            };
        }
        self.left_sent_now()?;
        self.evented.try_io(Direction::Write, |mut s| s.write_vectored(bufs))
    }

    /// `poll_flush`: on readiness nothing is buffered; on the ring, ready once the
    /// accepted bytes are the kernel's (a failed send is reported here).
    pub fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.ring() {
            Some(ring) => ring.poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    /// `poll_shutdown`, which never waits: on the ring, a failed send is reported and
    /// the write direction is shut once the accepted bytes have been sent (the FIN
    /// follows them), without waiting for that, as the kernel's buffered bytes go
    /// before its FIN.
    pub fn shutdown(&self, shutdown: impl FnOnce(&S) -> io::Result<()>) -> io::Result<()> {
        match self.ring().or(self.left()) {
            Some(ring) => ring.shutdown(),
            None => shutdown(self.evented.get_ref()),
        }
    }

    /// Shuts the write direction without waiting (a dropped write half): on the ring,
    /// once the accepted bytes have been sent.
    pub fn shutdown_write(&self, shutdown: impl FnOnce(&S) -> io::Result<()>) -> io::Result<()> {
        match self.ring().or(self.left()) {
            Some(ring) => ring.shutdown_write(),
            None => shutdown(self.evented.get_ref()),
        }
    }

    /// The loop the stream's I/O runs on, if it has been chosen.
    pub fn registered_loop(&self) -> Option<EventLoopHandle> {
        match self.ring.chosen() {
            Some(ring) => Some(EventLoopHandle {
                shared: ring.shared().clone(),
            }),
            None => self.evented.registered_loop(),
        }
    }

    /// Leaves the loop and returns the socket (`into_std`). A stream on the ring stops
    /// its receive first and hands its queued sends to the kernel; bytes it received
    /// and nobody read are lost with it.
    pub fn into_inner(self) -> io::Result<S> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; each field is read once.
        let (evented, ring) = unsafe { (std::ptr::read(&this.evented), std::ptr::read(&this.ring)) };
        if let Some(ring) = ring.into_inner() {
            ring.detach();
            ring.release();
        }
        evented.into_inner()
    }
}

impl<S> From<PollEvented<S>> for StreamIo<S>
where
    S: Source + AsRawFd + IntoRawFd,
    for<'a> &'a S: Read + Write,
{
    /// A registered source stays on readiness.
    fn from(evented: PollEvented<S>) -> Self {
        StreamIo::readiness(evented)
    }
}

impl<S: Source + AsRawFd + IntoRawFd> Drop for StreamIo<S> {
    fn drop(&mut self) {
        // The ring socket has a descriptor of its own: the stream's closes as usual.
        if let Some(ring) = self.ring.take() {
            ring.release();
        }
    }
}

/// Polls `ready` and, once it is ready, spends a unit of the task's budget (`Pending`,
/// with the task woken later, if none is left), as a readiness registration's
/// `poll_ready` does.
fn spend_once_ready(
    cx: &mut Context<'_>,
    ready: impl FnOnce(&mut Context<'_>) -> Poll<io::Result<()>>,
) -> Poll<io::Result<()>> {
    let readiness = ready!(ready(cx));
    ready!(crate::coop::poll_proceed(cx)).made_progress();
    Poll::Ready(readiness)
}
