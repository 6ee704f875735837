//! `TcpStream`: a connection registered with one event loop.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::BufMut;
use netloop_reactor::EventLoopHandle;
use netloop_reactor::io::{Direction, PollEvented, Ready};
use tokio::io::ReadBuf;

use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use crate::addr::ToSocketAddrs;
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
///
/// Read and write it with the extension traits of [`io`](crate::io)
/// ([`AsyncReadExt`](crate::io::AsyncReadExt),
/// [`AsyncWriteExt`](crate::io::AsyncWriteExt)):
///
/// ```
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
/// use netloop_net::{TcpListener, TcpStream};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let listener = TcpListener::bind("127.0.0.1:0").await?;
/// let mut stream = TcpStream::connect(listener.local_addr()?).await?;
/// stream.set_nodelay(true)?; // small messages go out at once
/// stream.write_all(b"ping").await?;
///
/// let (mut peer, _) = listener.accept().await?;
/// let mut buf = [0u8; 4];
/// peer.read_exact(&mut buf).await?;
/// assert_eq!(&buf, b"ping");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
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
        super::split::split_owned(self)
    }

    byte_stream_methods!(mio::net::TcpStream);
}

impl TryFrom<std::net::TcpStream> for TcpStream {
    type Error = io::Error;

    /// [`TcpStream::from_std`]: the std stream is set non-blocking and registered.
    #[track_caller]
    fn try_from(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        TcpStream::from_std(stream)
    }
}

byte_stream_traits!(TcpStream);
