//! `UnixListener`.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::task::{Context, Poll, ready};

use netloop_reactor::io::ListenerIo;

use super::{SocketAddr, UnixStream};

/// A Unix domain socket server, listening for connections (tokio's
/// `net::UnixListener`). Accepted connections spread over the runtime's loops as TCP
/// connections do.
///
/// The socket file stays after the listener is dropped, as with every Unix socket:
/// remove it before binding the path again.
///
/// ```
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
/// use netloop_net::unix::{UnixListener, UnixStream};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let path = std::env::temp_dir().join(format!("netloop-doc-listener-{}.sock", std::process::id()));
/// let _ = std::fs::remove_file(&path); // a file left by an earlier run
/// let listener = UnixListener::bind(&path)?;
///
/// let mut client = UnixStream::connect(&path).await?;
/// let (mut server, _client_addr) = listener.accept().await?;
/// client.write_all(b"ping").await?;
/// let mut buf = [0u8; 4];
/// server.read_exact(&mut buf).await?;
/// assert_eq!(&buf, b"ping");
///
/// drop(listener);
/// std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixListener {
    io: ListenerIo<mio::net::UnixListener>,
}

impl UnixListener {
    /// Listens at `path`. A path that exists (even a stale socket file) is an
    /// `AddrInUse` error. On Linux a path that starts with a NUL byte names an abstract
    /// socket (no file).
    ///
    /// # Panics
    ///
    /// Outside a runtime, as tokio's does.
    #[track_caller]
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        match super::addr::abstract_address(path.as_ref())? {
            Some(address) => UnixListener::new(mio::net::UnixListener::bind_addr(&address)?),
            None => UnixListener::new(mio::net::UnixListener::bind(path)?),
        }
    }

    /// Listens at `address` (a path or, on Linux, an abstract name), tokio's
    /// [`SocketAddr`], as `local_addr` returns it (a std address converts with `into`).
    #[track_caller]
    pub fn bind_addr(address: &SocketAddr) -> io::Result<UnixListener> {
        UnixListener::new(mio::net::UnixListener::bind_addr(&address.0)?)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr().map(SocketAddr)
    }

    /// Takes the socket's pending error (`SO_ERROR`), if any.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.get_ref().take_error()
    }

    /// Accepts a connection. Several tasks may await `accept` at once: each connection
    /// goes to one of them.
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (stream, addr) = std::future::poll_fn(|cx| self.poll_accept_raw(cx, true)).await?;
        Ok(self.accepted(stream, addr))
    }

    /// Polls to accept a connection (only the last task to poll is woken).
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(UnixStream, SocketAddr)>> {
        let (stream, addr) = ready!(self.poll_accept_raw(cx, false))?;
        Poll::Ready(Ok(self.accepted(stream, addr)))
    }

    /// One accept, through the ring's multishot accept on a loop that runs on io_uring,
    /// else by readiness (`shared`: several tasks may await it).
    fn poll_accept_raw(
        &self,
        cx: &mut Context<'_>,
        shared: bool,
    ) -> Poll<io::Result<(mio::net::UnixStream, std::os::unix::net::SocketAddr)>> {
        self.io.poll_accept(cx, shared, ring_accepted, |l| l.accept())
    }

    /// netloop: true once the listener accepts through its loop's io_uring ring (a
    /// multishot accept, armed by an accept on the listener's own loop). See
    /// `docs/io-uring.md`.
    pub fn is_on_ring(&self) -> bool {
        self.io.is_on_ring()
    }

    /// An accepted socket as a deferred stream, and the hand-off of the accepting
    /// task's next spawn (as for TCP).
    fn accepted(&self, stream: mio::net::UnixStream, addr: std::os::unix::net::SocketAddr) -> (UnixStream, SocketAddr) {
        let fallback = self
            .io
            .registered_loop()
            .expect("a listener is registered when it is made");
        netloop_scheduler::placement::connection_accepted();
        (UnixStream::new_deferred(stream, fallback), SocketAddr(addr))
    }
}

/// A connection of the ring's multishot accept, which gives no address: the peer's is
/// asked of the socket (a peer that connected from an unbound socket has the unnamed
/// address, as `accept` reports it).
fn ring_accepted(fd: OwnedFd) -> io::Result<(mio::net::UnixStream, std::os::unix::net::SocketAddr)> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    // Linux keeps an accepted socket's peer for the socket's life, so this fails only
    // on a system that does not: the connection is then returned as from an unbound
    // peer (an empty path makes the unnamed address).
    let addr = match stream.peer_addr() {
        Ok(addr) => addr,
        Err(_) => std::os::unix::net::SocketAddr::from_pathname("")?,
    };
    Ok((mio::net::UnixStream::from_std(stream), addr))
}

evented_socket!(
    UnixListener,
    std::os::unix::net::UnixListener,
    mio::net::UnixListener,
    mio::Interest::READABLE
);
