//! `UdpSocket`: datagrams on an event loop (tokio's `net::UdpSocket`).

use std::future::poll_fn;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::task::{Context, Poll, ready};

use netloop_io::ReadBuf;
use netloop_reactor::io::{DatagramIo, Direction};

use crate::addr::{ToSocketAddrs, try_each_addr};
use crate::registration::MAX_DATAGRAM;

/// A UDP socket (tokio's `net::UdpSocket`).
///
/// Registered with the event loop current where it was bound (or the runtime's next
/// loop, off the loops). Every method takes `&self`, so one socket may be shared
/// through an `Arc` by a sending and a receiving task; several tasks may await
/// `recv_from` at once, each datagram going to one of them.
///
/// netloop: on a loop that runs on io_uring, a socket first used on such a loop's
/// thread receives through the ring (see `docs/io-uring.md`); sends are the socket's
/// own `sendto` either way.
///
/// ```
/// use netloop_net::UdpSocket;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let a = UdpSocket::bind("127.0.0.1:0").await?;
/// let b = UdpSocket::bind("127.0.0.1:0").await?;
/// a.send_to(b"ping", b.local_addr()?).await?;
/// let mut buf = [0u8; 16];
/// let (n, from) = b.recv_from(&mut buf).await?;
/// assert_eq!((&buf[..n], from), (&b"ping"[..], a.local_addr()?));
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UdpSocket {
    io: DatagramIo,
}

impl UdpSocket {
    /// Binds to `addr`, trying each resolved address in turn; returns the first
    /// success or the last error (`AddrInUse` for a port in use).
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        try_each_addr(addr, |addr| {
            std::future::ready(
                mio::net::UdpSocket::bind(addr)
                    .and_then(UdpSocket::new)
                    .and_then(UdpSocket::bound),
            )
        })
        .await
    }

    /// A socket just bound or taken from the standard library: on a loop that runs on
    /// io_uring, placed at its first use (see [`DatagramIo::bound`]).
    fn bound(self) -> io::Result<UdpSocket> {
        Ok(UdpSocket { io: self.io.bound()? })
    }

    /// netloop: true while the socket receives through its loop's io_uring ring (see
    /// `docs/io-uring.md`); decided at its first use.
    pub fn is_on_ring(&self) -> bool {
        self.io.is_on_ring()
    }

    forward_to_socket! {
        /// The local address.
        pub fn local_addr(&self) -> io::Result<SocketAddr>;
        /// The address of the connected peer.
        pub fn peer_addr(&self) -> io::Result<SocketAddr>;
    }

    /// Sets the default destination of `send` and the only source `recv` accepts,
    /// trying each resolved address in turn.
    pub async fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        try_each_addr(addr, |addr| std::future::ready(self.io.get_ref().connect(addr))).await
    }

    readiness_methods!(stream);

    /// Polls for read readiness (only the last waker is woken).
    pub fn poll_recv_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_ready(cx, Direction::Read, false)
    }

    /// Polls for write readiness (only the last waker is woken).
    pub fn poll_send_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_ready(cx, Direction::Write, false)
    }

    /// Sends `buf` to the connected peer; returns the bytes sent.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.io.poll_send(cx, true, |s| s.send(buf))).await
    }

    /// Polls to send `buf` to the connected peer.
    pub fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io.poll_send(cx, false, |s| s.send(buf))
    }

    /// Sends without waiting; `WouldBlock` if the socket is not ready.
    pub fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.try_send(|s| s.send(buf))
    }

    /// Receives one datagram from the connected peer into `buf`; a datagram larger
    /// than `buf` is cut to fit (the rest is lost, as with `recv(2)`).
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv_from(buf).await.map(|(n, _)| n)
    }

    /// Polls to receive one datagram into `buf`'s unfilled part.
    pub fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.poll_recv_from(cx, buf).map_ok(drop)
    }

    /// Receives without waiting; `WouldBlock` if nothing is there.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.try_recv_from(buf).map(|(n, _)| n)
    }

    /// Receives one datagram from the connected peer into the spare capacity of `buf`.
    pub async fn recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        self.recv_buf_from(buf).await.map(|(n, _)| n)
    }

    /// [`recv_buf`](Self::recv_buf) without waiting.
    pub fn try_recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        self.try_recv_buf_from(buf).map(|(n, _)| n)
    }

    /// Sends `buf` to `target` (the first address it resolves to).
    pub async fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], target: A) -> io::Result<usize> {
        let target = target
            .to_addrs()
            .resolve()
            .await?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no addresses to send data to"))?;
        poll_fn(|cx| self.io.poll_send(cx, true, |s| s.send_to(buf, target))).await
    }

    /// Polls to send `buf` to `target`.
    pub fn poll_send_to(&self, cx: &mut Context<'_>, buf: &[u8], target: SocketAddr) -> Poll<io::Result<usize>> {
        self.io.poll_send(cx, false, |s| s.send_to(buf, target))
    }

    /// Sends to `target` without waiting.
    pub fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        self.io.try_send(|s| s.send_to(buf, target))
    }

    /// Receives one datagram and its sender's address; cut to fit `buf` if larger.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| self.io.poll_recv_from(cx, buf, false, true, true)).await
    }

    /// Polls to receive one datagram into `buf`'s unfilled part; returns its sender.
    pub fn poll_recv_from(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<SocketAddr>> {
        self.poll_into(cx, buf, false)
    }

    /// Receives with its sender without waiting.
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io.try_recv_from(buf, false)
    }

    /// Receives the next datagram and its sender without removing it from the queue.
    pub async fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| self.io.poll_recv_from(cx, buf, true, true, true)).await
    }

    /// Polls to receive the next datagram into `buf`'s unfilled part, with its sender,
    /// without removing it from the queue.
    pub fn poll_peek_from(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<SocketAddr>> {
        self.poll_into(cx, buf, true)
    }

    /// [`peek_from`](Self::peek_from) without waiting.
    pub fn try_peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io.try_recv_from(buf, true)
    }

    /// Receives the next datagram from the connected peer without removing it from
    /// the queue; cut to fit `buf` if larger.
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.peek_from(buf).await.map(|(n, _)| n)
    }

    /// Polls to receive the connected peer's next datagram into `buf`'s unfilled part,
    /// without removing it from the queue.
    pub fn poll_peek(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.poll_into(cx, buf, true).map_ok(drop)
    }

    /// [`peek`](Self::peek) without waiting.
    pub fn try_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.try_peek_from(buf).map(|(n, _)| n)
    }

    /// The sender of the next datagram, without removing it.
    pub async fn peek_sender(&self) -> io::Result<SocketAddr> {
        let mut none = [0u8; 0];
        self.peek_from(&mut none).await.map(|(_, from)| from)
    }

    /// Polls for the sender of the next datagram, without removing it.
    pub fn poll_peek_sender(&self, cx: &mut Context<'_>) -> Poll<io::Result<SocketAddr>> {
        let mut none = [0u8; 0];
        self.io
            .poll_recv_from(cx, &mut none, true, false, false)
            .map_ok(|(_, from)| from)
    }

    /// [`peek_sender`](Self::peek_sender) without waiting.
    pub fn try_peek_sender(&self) -> io::Result<SocketAddr> {
        let mut none = [0u8; 0];
        self.try_peek_from(&mut none).map(|(_, from)| from)
    }

    /// Receives one datagram into the spare capacity of `buf`, with its sender.
    pub async fn recv_buf_from<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<(usize, SocketAddr)> {
        // Zeroed, so that no uninitialized memory is handed to the kernel: a copy.
        let mut tmp = vec![0u8; buf.remaining_mut().min(MAX_DATAGRAM)];
        let (n, from) = poll_fn(|cx| self.io.poll_recv_from(cx, &mut tmp, false, true, true)).await?;
        buf.put_slice(&tmp[..n]);
        Ok((n, from))
    }

    /// [`recv_buf_from`](Self::recv_buf_from) without waiting.
    pub fn try_recv_buf_from<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<(usize, SocketAddr)> {
        let mut tmp = vec![0u8; buf.remaining_mut().min(MAX_DATAGRAM)];
        let (n, from) = self.io.try_recv_from(&mut tmp, false)?;
        buf.put_slice(&tmp[..n]);
        Ok((n, from))
    }

    /// A receive (`peek`: a peek) into `buf`'s unfilled part, advancing it over the
    /// datagram's bytes; only the last task to poll is woken.
    fn poll_into(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>, peek: bool) -> Poll<io::Result<SocketAddr>> {
        let (n, from) = ready!(
            self.io
                .poll_recv_from(cx, buf.initialize_unfilled(), peek, false, false)
        )?;
        buf.advance(n);
        Poll::Ready(Ok(from))
    }

    forward_to_socket! {
        via socket2:
        /// `IP_TOS`, the type-of-service field of this IPv4 socket's packets.
        pub fn tos_v4(&self) -> io::Result<u32>;
        /// Sets `IP_TOS`.
        pub fn set_tos_v4(&self, tos: u32) -> io::Result<()>;
        /// `IPV6_TCLASS`, the traffic class of this IPv6 socket's packets.
        pub fn tclass_v6(&self) -> io::Result<u32>;
        /// Sets `IPV6_TCLASS`.
        pub fn set_tclass_v6(&self, tclass: u32) -> io::Result<()>;
        /// The device this socket is bound to (`SO_BINDTODEVICE`), if any.
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        pub fn device(&self) -> io::Result<Option<Vec<u8>>>;
        /// Binds the socket to a network interface by name (`SO_BINDTODEVICE`, which
        /// needs `CAP_NET_RAW`): only packets of that interface are received; `None`
        /// removes the binding.
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        pub fn bind_device(&self, interface: Option<&[u8]>) -> io::Result<()>;
    }

    forward_to_socket! {
        /// Reads `SO_BROADCAST`.
        pub fn broadcast(&self) -> io::Result<bool>;
        /// Sets `SO_BROADCAST`.
        pub fn set_broadcast(&self, on: bool) -> io::Result<()>;
        /// Reads `IP_TTL`.
        pub fn ttl(&self) -> io::Result<u32>;
        /// Sets `IP_TTL`.
        pub fn set_ttl(&self, ttl: u32) -> io::Result<()>;
        /// Reads `IP_MULTICAST_LOOP`.
        pub fn multicast_loop_v4(&self) -> io::Result<bool>;
        /// Sets `IP_MULTICAST_LOOP`.
        pub fn set_multicast_loop_v4(&self, on: bool) -> io::Result<()>;
        /// Reads `IP_MULTICAST_TTL`.
        pub fn multicast_ttl_v4(&self) -> io::Result<u32>;
        /// Sets `IP_MULTICAST_TTL`.
        pub fn set_multicast_ttl_v4(&self, ttl: u32) -> io::Result<()>;
        /// Reads `IPV6_MULTICAST_LOOP`.
        pub fn multicast_loop_v6(&self) -> io::Result<bool>;
        /// Sets `IPV6_MULTICAST_LOOP`.
        pub fn set_multicast_loop_v6(&self, on: bool) -> io::Result<()>;
        /// Joins an IPv6 multicast group on interface index `interface`.
        pub fn join_multicast_v6(&self, multiaddr: &Ipv6Addr, interface: u32) -> io::Result<()>;
        /// Leaves an IPv6 multicast group.
        pub fn leave_multicast_v6(&self, multiaddr: &Ipv6Addr, interface: u32) -> io::Result<()>;
    }

    /// Takes the socket's pending error (`SO_ERROR`), if any.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.take_error()
    }

    /// Joins an IPv4 multicast group on `interface`.
    pub fn join_multicast_v4(&self, multiaddr: Ipv4Addr, interface: Ipv4Addr) -> io::Result<()> {
        self.io.get_ref().join_multicast_v4(&multiaddr, &interface)
    }

    /// Leaves an IPv4 multicast group.
    pub fn leave_multicast_v4(&self, multiaddr: Ipv4Addr, interface: Ipv4Addr) -> io::Result<()> {
        self.io.get_ref().leave_multicast_v4(&multiaddr, &interface)
    }
}

evented_socket!(
    UdpSocket,
    std::net::UdpSocket,
    mio::net::UdpSocket,
    mio::Interest::READABLE | mio::Interest::WRITABLE,
    placed by bound
);
