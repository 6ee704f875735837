//! `TcpSocket`: a TCP socket not yet connected or listening, to set options on first.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use super::{TcpListener, TcpStream};
use crate::socket_setup::start_connect;

/// A TCP socket that has not yet become a [`TcpStream`] or a [`TcpListener`] (tokio's
/// `TcpSocket`).
///
/// Some options only take effect before `connect` or `listen` (`SO_REUSEADDR`, the
/// buffer sizes for the window scale, binding to a device or a source address), which
/// `TcpStream::connect` and `TcpListener::bind` give no room for. Create the socket
/// with [`new_v4`](Self::new_v4) or [`new_v6`](Self::new_v6), set what is needed, then
/// [`connect`](Self::connect) or [`bind`](Self::bind) and [`listen`](Self::listen).
/// The socket is non-blocking from the start; it joins a loop only when it becomes a
/// stream or a listener, so creating and configuring it needs no runtime.
///
/// ```
/// use netloop_net::TcpSocket;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let socket = TcpSocket::new_v4()?;
/// socket.set_reuseaddr(true)?;
/// socket.bind("127.0.0.1:0".parse().unwrap())?;
/// let listener = socket.listen(1024)?;
///
/// let client = TcpSocket::new_v4()?;
/// client.set_nodelay(true)?;
/// let stream = client.connect(listener.local_addr()?).await?;
/// assert!(stream.nodelay()?);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TcpSocket {
    inner: Socket,
}

impl TcpSocket {
    /// A new IPv4 TCP socket (non-blocking, close-on-exec).
    pub fn new_v4() -> io::Result<TcpSocket> {
        TcpSocket::new(Domain::IPV4)
    }

    /// A new IPv6 TCP socket (non-blocking, close-on-exec).
    pub fn new_v6() -> io::Result<TcpSocket> {
        TcpSocket::new(Domain::IPV6)
    }

    fn new(domain: Domain) -> io::Result<TcpSocket> {
        let inner = Socket::new(domain, Type::STREAM.nonblocking().cloexec(), Some(Protocol::TCP))?;
        Ok(TcpSocket { inner })
    }

    /// Sets `SO_KEEPALIVE`: the kernel probes an idle connection.
    pub fn set_keepalive(&self, keepalive: bool) -> io::Result<()> {
        self.inner.set_keepalive(keepalive)
    }

    /// `SO_KEEPALIVE`.
    pub fn keepalive(&self) -> io::Result<bool> {
        self.inner.keepalive()
    }

    /// Sets `SO_REUSEADDR`: a listener may bind an address whose earlier connections
    /// are still in `TIME_WAIT` (what a server restarting at once needs).
    pub fn set_reuseaddr(&self, reuseaddr: bool) -> io::Result<()> {
        self.inner.set_reuse_address(reuseaddr)
    }

    /// `SO_REUSEADDR`.
    pub fn reuseaddr(&self) -> io::Result<bool> {
        self.inner.reuse_address()
    }

    /// Sets `SO_REUSEPORT`: several sockets may listen on one address, and the kernel
    /// spreads new connections over them.
    pub fn set_reuseport(&self, reuseport: bool) -> io::Result<()> {
        self.inner.set_reuse_port(reuseport)
    }

    /// `SO_REUSEPORT`.
    pub fn reuseport(&self) -> io::Result<bool> {
        self.inner.reuse_port()
    }

    /// Sets `SO_SNDBUF`, the send buffer size (Linux doubles it for its bookkeeping, and
    /// [`send_buffer_size`](Self::send_buffer_size) reports the doubled value).
    pub fn set_send_buffer_size(&self, size: u32) -> io::Result<()> {
        self.inner.set_send_buffer_size(size as usize)
    }

    /// `SO_SNDBUF`.
    pub fn send_buffer_size(&self) -> io::Result<u32> {
        self.inner.send_buffer_size().map(saturate)
    }

    /// Sets `SO_RCVBUF`, the receive buffer size; set it before `connect` or `listen`
    /// for the window scale to follow it.
    pub fn set_recv_buffer_size(&self, size: u32) -> io::Result<()> {
        self.inner.set_recv_buffer_size(size as usize)
    }

    /// `SO_RCVBUF`.
    pub fn recv_buffer_size(&self) -> io::Result<u32> {
        self.inner.recv_buffer_size().map(saturate)
    }

    /// Sets `SO_LINGER`. A non-zero linger makes `close` block the thread, which an
    /// event loop must not do; prefer [`set_zero_linger`](Self::set_zero_linger) (reset
    /// on close) or leave it unset.
    #[deprecated = "a non-zero linger blocks the thread on close; use `set_zero_linger` or leave it unset"]
    pub fn set_linger(&self, dur: Option<Duration>) -> io::Result<()> {
        self.inner.set_linger(dur)
    }

    /// Sets a zero `SO_LINGER`: closing the socket resets the connection (RST) and
    /// discards unsent data, instead of the orderly FIN and `TIME_WAIT`.
    pub fn set_zero_linger(&self) -> io::Result<()> {
        self.inner.set_linger(Some(Duration::ZERO))
    }

    /// `SO_LINGER`.
    pub fn linger(&self) -> io::Result<Option<Duration>> {
        self.inner.linger()
    }

    /// Sets `TCP_NODELAY`: small writes are sent at once rather than coalesced (Nagle).
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.inner.set_tcp_nodelay(nodelay)
    }

    /// `TCP_NODELAY`.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.inner.tcp_nodelay()
    }

    /// `IPV6_TCLASS`, the traffic class of an IPv6 socket's packets.
    pub fn tclass_v6(&self) -> io::Result<u32> {
        self.inner.tclass_v6()
    }

    /// Sets `IPV6_TCLASS`.
    pub fn set_tclass_v6(&self, tclass: u32) -> io::Result<()> {
        self.inner.set_tclass_v6(tclass)
    }

    /// `IP_TOS`, the type-of-service field of an IPv4 socket's packets.
    pub fn tos_v4(&self) -> io::Result<u32> {
        self.inner.tos_v4()
    }

    /// `IP_TOS` (the name tokio used before `tos_v4`).
    #[deprecated = "use `tos_v4`"]
    pub fn tos(&self) -> io::Result<u32> {
        self.tos_v4()
    }

    /// Sets `IP_TOS`.
    pub fn set_tos_v4(&self, tos: u32) -> io::Result<()> {
        self.inner.set_tos_v4(tos)
    }

    /// Sets `IP_TOS` (the name tokio used before `set_tos_v4`).
    #[deprecated = "use `set_tos_v4`"]
    pub fn set_tos(&self, tos: u32) -> io::Result<()> {
        self.set_tos_v4(tos)
    }

    /// The device this socket is bound to (`SO_BINDTODEVICE`), if any.
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    pub fn device(&self) -> io::Result<Option<Vec<u8>>> {
        self.inner.device()
    }

    /// Binds the socket to a network interface by name (`SO_BINDTODEVICE`): only
    /// packets of that interface are received; `None` removes the binding.
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    pub fn bind_device(&self, interface: Option<&[u8]>) -> io::Result<()> {
        self.inner.bind_device(interface)
    }

    /// The local address (after [`bind`](Self::bind); `0.0.0.0:0` or `[::]:0` before).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the socket's address is not an IP address"))
    }

    /// Takes the pending socket error (`SO_ERROR`), clearing it.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.take_error()
    }

    /// Binds the socket to `addr`. An address already in use is an
    /// [`AddrInUse`](io::ErrorKind::AddrInUse) error (set `SO_REUSEADDR` or
    /// `SO_REUSEPORT` first where that is wanted).
    pub fn bind(&self, addr: SocketAddr) -> io::Result<()> {
        self.inner.bind(&addr.into())
    }

    /// Connects to `addr`, and returns the connected stream, registered with a loop of
    /// the current runtime. A refused or unreachable peer is an error.
    ///
    /// # Panics
    ///
    /// Outside a runtime, as tokio's does.
    #[track_caller]
    pub fn connect(self, addr: SocketAddr) -> impl Future<Output = io::Result<TcpStream>> {
        // Registered before the first await, where the caller's location is known.
        let started = start_connect(&self.inner, &addr.into());
        let stream = started.and_then(|()| TcpStream::new(mio::net::TcpStream::from_std(self.inner.into())));
        async move { TcpStream::finish_connect(stream?).await }
    }

    /// Starts listening, with at most `backlog` connections waiting to be accepted, and
    /// returns the listener, registered with a loop of the current runtime.
    ///
    /// # Panics
    ///
    /// Outside a runtime, as tokio's does.
    #[track_caller]
    pub fn listen(self, backlog: u32) -> io::Result<TcpListener> {
        self.inner.listen(backlog.try_into().unwrap_or(i32::MAX))?;
        TcpListener::new(mio::net::TcpListener::from_std(self.inner.into()))
    }

    /// Wraps a connected std stream, to read or change its options as a `TcpSocket`
    /// (it is not made non-blocking: `connect` and `listen` do not apply to it).
    pub fn from_std_stream(std_stream: std::net::TcpStream) -> TcpSocket {
        TcpSocket {
            inner: Socket::from(std_stream),
        }
    }
}

/// A kernel buffer size as tokio reports it.
fn saturate(size: usize) -> u32 {
    u32::try_from(size).unwrap_or(u32::MAX)
}

impl fmt::Debug for TcpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpSocket")
            .field("fd", &self.inner.as_raw_fd())
            .finish()
    }
}

setup_socket_fd_traits!(TcpSocket, "TCP");

impl From<TcpSocket> for OwnedFd {
    fn from(socket: TcpSocket) -> OwnedFd {
        socket.inner.into()
    }
}
