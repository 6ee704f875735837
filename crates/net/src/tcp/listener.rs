//! `TcpListener`.

use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll, ready};

use netloop_reactor::io::ListenerIo;

use super::TcpStream;
use crate::addr::{ToSocketAddrs, try_each_addr};

/// A TCP socket server, listening for connections (tokio's `net::TcpListener`).
///
/// Accepted connections spread over the runtime's loops: the accepting task's next
/// `spawn` goes to the runtime's next loop, and the stream registers with the loop
/// that first uses it. [`serve`](crate::serve) does the same with a per-loop
/// connection cap and a `!Send` handler.
///
/// A server accepts in a loop and spawns a task per connection, so that a slow
/// client holds up no other:
///
/// ```
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
/// use netloop_net::{TcpListener, TcpStream};
/// use netloop_scheduler::task;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let listener = TcpListener::bind("127.0.0.1:0").await?; // port 0: any free port
/// let addr = listener.local_addr()?;
/// task::spawn(async move {
///     while let Ok((mut stream, peer)) = listener.accept().await {
///         task::spawn(async move {
///             let _ = stream.write_all(format!("hello, {peer}").as_bytes()).await;
///         });
///     }
/// });
///
/// let mut client = TcpStream::connect(addr).await?;
/// let mut greeting = String::new();
/// client.read_to_string(&mut greeting).await?;
/// assert_eq!(greeting, format!("hello, {}", client.local_addr()?));
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TcpListener {
    pub(crate) io: ListenerIo<mio::net::TcpListener>,
}

impl TcpListener {
    /// Binds to `addr` (every form tokio accepts: `"127.0.0.1:8080"`, `("localhost",
    /// 8080)`, a `SocketAddr`, a slice, ...), trying each resolved address in turn. A
    /// port in use gives `AddrInUse`.
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        try_each_addr(addr, |addr| {
            std::future::ready(mio::net::TcpListener::bind(addr).and_then(TcpListener::new))
        })
        .await
    }

    /// Accepts a connection. Several tasks may await `accept` on one listener at once
    /// (say, through an `Arc`): each connection goes to one of them, and none is left
    /// waiting while connections arrive.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (stream, addr) = std::future::poll_fn(|cx| self.poll_accept_shared(cx)).await?;
        Ok(self.accepted(stream, addr))
    }

    /// Polls to accept a connection.
    ///
    /// The new stream is registered with a loop at its first use, by the loop that
    /// uses it; and the accepting task's next `spawn` goes to the runtime's next loop
    /// (Netty's `childGroup.next()`). So the usual accept-and-spawn loop spreads its
    /// connections over every loop, each woken on its own loop's thread.
    ///
    /// Only the waker of the last call is woken, as with tokio's `poll_accept`; use
    /// [`accept`](Self::accept) from several tasks.
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let (stream, addr) = ready!(self.poll_accept_raw(cx))?;
        Poll::Ready(Ok(self.accepted(stream, addr)))
    }

    /// An accepted socket as a deferred stream, and the hand-off of the accepting
    /// task's next spawn.
    fn accepted(&self, stream: mio::net::TcpStream, addr: SocketAddr) -> (TcpStream, SocketAddr) {
        let fallback = self
            .io
            .registered_loop()
            .expect("a listener is registered when it is made");
        netloop_scheduler::placement::connection_accepted();
        (TcpStream::new_deferred(stream, fallback), addr)
    }

    /// Accepts without registering the new socket (the acceptor registers it on the
    /// loop that will own it).
    pub(crate) fn poll_accept_raw(&self, cx: &mut Context<'_>) -> Poll<io::Result<(mio::net::TcpStream, SocketAddr)>> {
        self.io
            .poll_accept(cx, false, |fd| self.ring_accepted(fd), |l| l.accept())
    }

    /// An accept that several tasks may await at once.
    fn poll_accept_shared(&self, cx: &mut Context<'_>) -> Poll<io::Result<(mio::net::TcpStream, SocketAddr)>> {
        self.io
            .poll_accept(cx, true, |fd| self.ring_accepted(fd), |l| l.accept())
    }

    /// A connection of the ring's multishot accept, on a loop that runs on io_uring.
    /// The kernel's multishot accept gives no address: it is asked of the socket. A
    /// connection the peer already reset has none any more; it is still returned (as
    /// `accept4` returns it, and its first read reports the reset), with the
    /// unspecified address of the listener's family and port 0.
    fn ring_accepted(&self, fd: std::os::fd::OwnedFd) -> io::Result<(mio::net::TcpStream, SocketAddr)> {
        let stream = std::net::TcpStream::from(fd);
        let addr = stream.peer_addr().unwrap_or_else(|_| {
            let ip: std::net::IpAddr = match self.io.get_ref().local_addr() {
                Ok(SocketAddr::V6(_)) => std::net::Ipv6Addr::UNSPECIFIED.into(),
                _ => std::net::Ipv4Addr::UNSPECIFIED.into(),
            };
            SocketAddr::new(ip, 0)
        });
        Ok((mio::net::TcpStream::from_std(stream), addr))
    }

    /// netloop: true once the listener accepts through its loop's io_uring ring (a
    /// multishot accept, armed by an accept on the listener's own loop). See
    /// `docs/io-uring.md`.
    pub fn is_on_ring(&self) -> bool {
        self.io.is_on_ring()
    }

    forward_to_socket! {
        /// The local address, e.g. to learn the port after binding port 0.
        pub fn local_addr(&self) -> io::Result<SocketAddr>;
        /// Reads `IP_TTL`.
        pub fn ttl(&self) -> io::Result<u32>;
        /// Sets `IP_TTL`.
        pub fn set_ttl(&self, ttl: u32) -> io::Result<()>;
    }
}

evented_socket!(
    TcpListener,
    std::net::TcpListener,
    mio::net::TcpListener,
    mio::Interest::READABLE
);
