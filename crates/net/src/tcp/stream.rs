//! `TcpStream`: a connection registered with one event loop.

use std::fmt;
use std::future::poll_fn;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::BufMut;
use netloop_reactor::EventLoopHandle;
use netloop_reactor::io::{Direction, PollEvented, Ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::split::{ReadHalf, WriteHalf};
use super::split_owned::{OwnedReadHalf, OwnedWriteHalf};
use crate::addr::ToSocketAddrs;
use crate::io::Interest;
use crate::registration::register;

/// A TCP connection (tokio's `net::TcpStream`).
///
/// A connected stream is registered with the event loop current where it was
/// created; an accepted one with the loop where it is first used (for a stream handed
/// out by [`serve`](crate::serve), the loop that runs its handler). It may be moved
/// to a task on another loop after that: readiness still comes from its own loop and
/// wakes cross threads correctly. Every operation spends the cooperative budget; reads and
/// writes run until the OS says `WouldBlock` (or is short), as edge-triggered epoll
/// requires.
pub struct TcpStream {
    pub(crate) io: PollEvented<mio::net::TcpStream>,
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.io.get_ref().fmt(f)
    }
}

impl TcpStream {
    /// Connects to `addr`, trying each resolved address in turn; returns the first
    /// success or the last error.
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let addrs = addr.to_addrs().resolve().await?;
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect_addr(addr).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "could not resolve to any address")))
    }

    async fn connect_addr(addr: SocketAddr) -> io::Result<TcpStream> {
        TcpStream::finish_connect(TcpStream::new(mio::net::TcpStream::connect(addr)?)?).await
    }

    /// Waits for the handshake of a stream whose non-blocking `connect` has started.
    pub(crate) async fn finish_connect(stream: TcpStream) -> io::Result<TcpStream> {
        // Writable means the handshake ended, one way or the other.
        poll_fn(|cx| stream.io.poll_write_ready(cx)).await?;
        if let Some(e) = stream.io.get_ref().take_error()? {
            return Err(e);
        }
        match stream.io.get_ref().peer_addr() {
            Ok(_) => Ok(stream),
            // Not connected yet or refused: the socket error says which.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Err(stream.io.get_ref().take_error()?.unwrap_or(e)),
            Err(e) => Err(e),
        }
    }

    #[track_caller]
    pub(crate) fn new(stream: mio::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: register(stream, mio::Interest::READABLE | mio::Interest::WRITABLE)?,
        })
    }

    /// An accepted stream, registered at its first use by the loop that uses it
    /// (`fallback`, the listener's loop, if that use is off every loop), and taken as
    /// readable and writable until an operation finds otherwise: a new connection's
    /// first request is usually there already, so the first read tries the socket
    /// instead of waiting for the loop's first event (as tokio's accepted streams do).
    pub(crate) fn new_deferred(stream: mio::net::TcpStream, fallback: EventLoopHandle) -> TcpStream {
        TcpStream {
            io: PollEvented::new_deferred(stream, mio::Interest::READABLE | mio::Interest::WRITABLE, fallback)
                .assuming_ready(Ready::READABLE | Ready::WRITABLE),
        }
    }

    /// Wraps a std stream (setting it non-blocking), registered with the current loop.
    ///
    /// # Panics
    ///
    /// Outside a runtime (as tokio's does).
    #[track_caller]
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        TcpStream::new(mio::net::TcpStream::from_std(stream))
    }

    /// Deregisters and returns the std stream (still non-blocking).
    pub fn into_std(self) -> io::Result<std::net::TcpStream> {
        Ok(self.io.into_inner()?.into())
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().peer_addr()
    }

    /// Sets `TCP_NODELAY`.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.io.get_ref().set_nodelay(nodelay)
    }

    /// Reads `TCP_NODELAY`.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.io.get_ref().nodelay()
    }

    /// Sets `SO_LINGER`.
    pub fn set_linger(&self, dur: Option<Duration>) -> io::Result<()> {
        socket2::SockRef::from(self.io.get_ref()).set_linger(dur)
    }

    /// Reads `SO_LINGER`.
    pub fn linger(&self) -> io::Result<Option<Duration>> {
        socket2::SockRef::from(self.io.get_ref()).linger()
    }

    /// Sets `IP_TTL`.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.io.get_ref().set_ttl(ttl)
    }

    /// Reads `IP_TTL`.
    pub fn ttl(&self) -> io::Result<u32> {
        self.io.get_ref().ttl()
    }

    /// Waits for any of `interest` and returns everything of it that is ready. Several
    /// tasks may wait at once; each is woken by the next event.
    pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
        crate::registration::ready(&self.io, interest).await
    }

    /// Waits until the stream is readable (may be spurious: `try_read` may still say
    /// `WouldBlock`).
    pub async fn readable(&self) -> io::Result<()> {
        crate::registration::ready_for(&self.io, Direction::Read).await
    }

    /// Waits until the stream is writable.
    pub async fn writable(&self) -> io::Result<()> {
        crate::registration::ready_for(&self.io, Direction::Write).await
    }

    /// Polls for read readiness.
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_read_ready(cx).map_ok(drop)
    }

    /// Polls for write readiness.
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_write_ready(cx).map_ok(drop)
    }

    /// Reads without waiting; `WouldBlock` if nothing is there.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Read, |s| (&*s).read(buf))
    }

    /// Vectored `try_read`.
    pub fn try_read_vectored(&self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        self.io.try_io(Direction::Read, |s| (&*s).read_vectored(bufs))
    }

    /// Writes without waiting; `WouldBlock` if the send buffer is full.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |s| (&*s).write(buf))
    }

    /// Vectored `try_write` (one `writev`).
    pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |s| (&*s).write_vectored(bufs))
    }

    /// Runs `f` once if `interest` is ready, clearing readiness on `WouldBlock`.
    pub fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        self.io.try_io(interest.direction(), |_| f())
    }

    /// Receives data without removing it from the queue.
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.io.poll_io_shared(cx, Direction::Read, |s| s.peek(buf))).await
    }

    /// Polls to receive data without removing it from the queue: on `Ready(Ok(n))`,
    /// `n` bytes were appended to `buf`'s filled part (0 at EOF or with no room).
    pub fn poll_peek(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<usize>> {
        let n = ready!(self.io.poll_read_io(cx, |s| s.peek(buf.initialize_unfilled())))?;
        buf.advance(n);
        Poll::Ready(Ok(n))
    }

    /// Reads without waiting into `buf`'s spare capacity, advancing it; `WouldBlock` if
    /// nothing is there. One `read` of at most 16 KiB, through a buffer on the stack
    /// (so no uninitialised memory is handed to the OS).
    pub fn try_read_buf<B: BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        let mut chunk = [0u8; TRY_READ_BUF_CHUNK];
        let want = buf.remaining_mut().min(TRY_READ_BUF_CHUNK);
        let n = self.try_read(&mut chunk[..want])?;
        buf.put_slice(&chunk[..n]);
        Ok(n)
    }

    /// Runs `f` whenever `interest` is ready, until it does not fail with
    /// `WouldBlock` (which clears the readiness and waits again): tokio's way to run a
    /// custom operation (a `recvmsg`, a `sendfile`) on the stream's socket.
    pub async fn async_io<R>(&self, interest: Interest, mut f: impl FnMut() -> io::Result<R>) -> io::Result<R> {
        let direction = interest.direction();
        poll_fn(|cx| self.io.poll_io_shared(cx, direction, |_| f())).await
    }

    /// Takes the socket's pending error (`SO_ERROR`), if any.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.get_ref().take_error()
    }

    /// Sets `SO_LINGER` to zero: closing the stream then resets the connection (the
    /// peer sees `ConnectionReset`) instead of sending what is left and a FIN.
    pub fn set_zero_linger(&self) -> io::Result<()> {
        self.set_linger(Some(Duration::ZERO))
    }

    /// Splits into borrowed halves, for use in one task.
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        (ReadHalf(self), WriteHalf(self))
    }

    /// Splits into owned halves that may go to different tasks; `reunite` puts them
    /// back together. Dropping the write half shuts down the write direction.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        super::split_owned::split_owned(self)
    }

    pub(crate) fn poll_read_priv(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let ev = ready!(self.io.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let len = unfilled.len();
            match self.io.get_ref().read(unfilled) {
                Ok(n) => {
                    // A short read means the socket is drained: forget the readiness
                    // now rather than pay for a WouldBlock read.
                    if n > 0 && n < len {
                        self.io.clear_readiness(ev);
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.io.clear_readiness(ev),
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    pub(crate) fn poll_write_priv(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, Some(buf.len()), |s| (&*s).write(buf))
    }

    pub(crate) fn poll_write_vectored_priv(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // No short-write shortcut here: `writev` takes at most IOV_MAX slices, so a
        // short vectored write does not mean the send buffer is full.
        self.poll_write_with(cx, None, |s| (&*s).write_vectored(bufs))
    }

    fn poll_write_with(
        &self,
        cx: &mut Context<'_>,
        short_write_means_full: Option<usize>,
        mut op: impl FnMut(&mio::net::TcpStream) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        loop {
            let ev = ready!(self.io.poll_write_ready(cx))?;
            match op(self.io.get_ref()) {
                Ok(n) => {
                    // A short plain write means the send buffer is full.
                    if let Some(len) = short_write_means_full
                        && n > 0
                        && n < len
                    {
                        self.io.clear_readiness(ev);
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.io.clear_readiness(ev),
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    pub(crate) fn shutdown_write(&self) -> io::Result<()> {
        match self.io.get_ref().shutdown(Shutdown::Write) {
            // Already closed by the peer: nothing left to shut.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            r => r,
        }
    }
}

/// The most one [`TcpStream::try_read_buf`] reads.
const TRY_READ_BUF_CHUNK: usize = 16 * 1024;

impl TryFrom<std::net::TcpStream> for TcpStream {
    type Error = io::Error;

    /// [`TcpStream::from_std`]: the std stream is set non-blocking and registered.
    #[track_caller]
    fn try_from(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        TcpStream::from_std(stream)
    }
}

impl AsRef<TcpStream> for TcpStream {
    fn as_ref(&self) -> &TcpStream {
        self
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get_ref().as_raw_fd()
    }
}

impl AsFd for TcpStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}

impl AsyncRead for TcpStream {
    // The tokio trait shims inline into the caller's future (tokio's `Read`,
    // `WriteAll`, codecs), which then calls the operation directly.
    #[inline]
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.poll_read_priv(cx, buf)
    }
}

impl AsyncWrite for TcpStream {
    #[inline]
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_priv(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored_priv(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Shuts down the write direction: the peer reads EOF; reading still works.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.shutdown_write())
    }
}

impl futures_io::AsyncRead for TcpStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let mut rb = ReadBuf::new(buf);
        ready!(self.poll_read_priv(cx, &mut rb))?;
        Poll::Ready(Ok(rb.filled().len()))
    }
}

impl futures_io::AsyncWrite for TcpStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_priv(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored_priv(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.shutdown_write())
    }
}
