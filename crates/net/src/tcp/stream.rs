//! `TcpStream`: a connection registered with one event loop.

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BufMut;
use netloop_io::ReadBuf;
use netloop_reactor::io::Direction;

use crate::addr::{ToSocketAddrs, try_each_addr};
use crate::registration::io_shared;

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
    pub(crate) io: netloop_reactor::io::StreamIo<mio::net::TcpStream>,
}

impl TcpStream {
    /// Connects to `addr`, trying each resolved address in turn; returns the first
    /// success or the last error.
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        try_each_addr(addr, TcpStream::connect_addr).await
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
            Ok(_) => stream.connected(),
            // Not connected yet or refused: the socket error says which.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Err(stream.io.get_ref().take_error()?.unwrap_or(e)),
            Err(e) => Err(e),
        }
    }

    /// A socket accepted for the loop driving this thread: on its ring if the loop runs
    /// on io_uring, else registered with its `Poll` now.
    pub(crate) fn on_this_loop(socket: mio::net::TcpStream) -> io::Result<TcpStream> {
        match netloop_reactor::EventLoopHandle::current() {
            Some(here) if here.io_driver() == netloop_reactor::IoDriver::IoUring => {
                Ok(TcpStream::new_deferred(socket, here))
            }
            _ => TcpStream::new(socket),
        }
    }

    forward_to_socket! {
        /// The local address.
        pub fn local_addr(&self) -> io::Result<SocketAddr>;
        /// The peer's address.
        pub fn peer_addr(&self) -> io::Result<SocketAddr>;
        /// Sets `TCP_NODELAY`.
        pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()>;
        /// Reads `TCP_NODELAY`.
        pub fn nodelay(&self) -> io::Result<bool>;
        /// Sets `IP_TTL`.
        pub fn set_ttl(&self, ttl: u32) -> io::Result<()>;
        /// Reads `IP_TTL`.
        pub fn ttl(&self) -> io::Result<u32>;
    }

    forward_to_socket! {
        via socket2:
        /// Sets `SO_LINGER`.
        pub fn set_linger(&self, dur: Option<Duration>) -> io::Result<()>;
        /// Reads `SO_LINGER`.
        pub fn linger(&self) -> io::Result<Option<Duration>>;
    }

    /// Reads `TCP_QUICKACK`: `true` while the kernel acknowledges this connection's
    /// segments at once, `false` while it may delay the ACKs.
    #[cfg(any(
        target_os = "linux",
        target_os = "android",
        target_os = "fuchsia",
        target_os = "cygwin"
    ))]
    pub fn quickack(&self) -> io::Result<bool> {
        socket2::SockRef::from(self.io.get_ref()).tcp_quickack()
    }

    /// Sets `TCP_QUICKACK`: `true` makes the kernel send ACKs at once rather than
    /// delaying them (a request-response protocol can save a delayed-ACK wait).
    /// The flag is not sticky: Linux may leave quick-ACK mode again by itself after
    /// later traffic, so a program that wants it throughout sets it after each read.
    #[cfg(any(
        target_os = "linux",
        target_os = "android",
        target_os = "fuchsia",
        target_os = "cygwin"
    ))]
    pub fn set_quickack(&self, quickack: bool) -> io::Result<()> {
        socket2::SockRef::from(self.io.get_ref()).set_tcp_quickack(quickack)
    }

    /// Receives data without removing it from the queue.
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        if self.io.is_on_ring() {
            return poll_fn(|cx| self.io.poll_peek(cx, buf, |s, b| s.peek(b))).await;
        }
        // A stream that left the ring peeks at the bytes the ring received first.
        let leftover = poll_fn(|cx| match self.io.poll_peek_leftover(cx, buf) {
            Some(peeked) => peeked.map(Some),
            None => Poll::Ready(None),
        })
        .await;
        if let Some(peeked) = leftover {
            return peeked;
        }
        io_shared(self.io.evented(), Direction::Read, |s| s.peek(buf)).await
    }

    /// Polls to receive data without removing it from the queue: on `Ready(Ok(n))`,
    /// `n` bytes were appended to `buf`'s filled part (0 at EOF or with no room).
    pub fn poll_peek(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<usize>> {
        // On the ring, after leaving it (what the ring received first) and on
        // readiness alike: `StreamIo` peeks where the next read would read.
        let n = std::task::ready!(self.io.poll_peek(cx, buf.initialize_unfilled(), |s, b| s.peek(b)))?;
        buf.advance(n);
        Poll::Ready(Ok(n))
    }

    /// Sets `SO_LINGER` to zero: closing the stream then resets the connection (the
    /// peer sees `ConnectionReset`) instead of sending what is left and a FIN.
    pub fn set_zero_linger(&self) -> io::Result<()> {
        self.set_linger(Some(Duration::ZERO))
    }

    byte_stream_methods!(mio::net::TcpStream);
}

evented_socket!(
    TcpStream,
    std::net::TcpStream,
    mio::net::TcpStream,
    mio::Interest::READABLE | mio::Interest::WRITABLE,
    placed by connected
);

byte_stream_traits!(TcpStream);
