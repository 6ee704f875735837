//! [`UnixSocket`]: a Unix socket before it becomes a listener, a stream or a datagram
//! socket, for options that must be set first (tokio's `UnixSocket`).

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use super::{UnixDatagram, UnixListener, UnixStream};
use crate::socket_setup::start_connect;

/// A Unix socket not yet listening, connected or used for datagrams.
///
/// Make one with [`new_stream`](Self::new_stream) or
/// [`new_datagram`](Self::new_datagram), set it up (`bind`), then turn it into a
/// [`UnixListener`] ([`listen`](Self::listen)), a [`UnixStream`]
/// ([`connect`](Self::connect)) or a [`UnixDatagram`] ([`datagram`](Self::datagram)).
/// `UnixListener::bind` listens with the OS's default backlog; a socket made here
/// chooses its own.
///
/// ```
/// use netloop_net::unix::UnixSocket;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let path = std::env::temp_dir().join(format!("netloop-doc-socket-{}.sock", std::process::id()));
/// let _ = std::fs::remove_file(&path);
///
/// let socket = UnixSocket::new_stream()?;
/// socket.bind(&path)?;
/// let listener = socket.listen(16)?; // at most 16 connections waiting for `accept`
///
/// let client = UnixSocket::new_stream()?.connect(&path).await?;
/// let (server, _) = listener.accept().await?;
/// assert_eq!(client.peer_addr()?.as_pathname(), Some(path.as_path()));
/// # drop(server);
/// std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct UnixSocket {
    inner: socket2::Socket,
}

impl UnixSocket {
    /// A new datagram socket (`SOCK_DGRAM`), non-blocking.
    pub fn new_datagram() -> io::Result<UnixSocket> {
        UnixSocket::new(socket2::Type::DGRAM)
    }

    /// A new stream socket (`SOCK_STREAM`), non-blocking.
    pub fn new_stream() -> io::Result<UnixSocket> {
        UnixSocket::new(socket2::Type::STREAM)
    }

    fn new(ty: socket2::Type) -> io::Result<UnixSocket> {
        let inner = socket2::Socket::new(socket2::Domain::UNIX, ty, None)?;
        inner.set_nonblocking(true)?;
        inner.set_cloexec(true)?;
        Ok(UnixSocket { inner })
    }

    fn is_datagram(&self) -> io::Result<bool> {
        Ok(self.inner.r#type()? == socket2::Type::DGRAM)
    }

    /// Binds the socket to `path` (a file-system path; on Linux a leading NUL byte
    /// names an abstract address).
    pub fn bind(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.inner.bind(&socket2::SockAddr::unix(path)?)
    }

    /// Listens for connections, with a queue of `backlog` pending ones.
    ///
    /// # Errors
    ///
    /// On a datagram socket: "listen cannot be called on a datagram socket".
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn listen(self, backlog: u32) -> io::Result<UnixListener> {
        if self.is_datagram()? {
            return Err(io::Error::other("listen cannot be called on a datagram socket"));
        }
        self.inner.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
        UnixListener::from_std(OwnedFd::from(self.inner).into())
    }

    /// Connects to the socket at `path` and waits for the connection.
    ///
    /// # Errors
    ///
    /// On a datagram socket: "connect cannot be called on a datagram socket"; else the
    /// OS's (nothing listens there, the listener's queue is full...).
    pub async fn connect(self, path: impl AsRef<Path>) -> io::Result<UnixStream> {
        if self.is_datagram()? {
            return Err(io::Error::other("connect cannot be called on a datagram socket"));
        }
        start_connect(&self.inner, &socket2::SockAddr::unix(path)?)?;
        // Registered as it is (not `from_std`, which places a connected stream): the
        // connect may still be under way.
        let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(self.inner));
        UnixStream::new(mio::net::UnixStream::from_std(socket))?
            .finish_connect()
            .await
    }

    /// The datagram socket this is.
    ///
    /// # Errors
    ///
    /// On a stream socket: "datagram cannot be called on a stream socket".
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn datagram(self) -> io::Result<UnixDatagram> {
        if !self.is_datagram()? {
            return Err(io::Error::other("datagram cannot be called on a stream socket"));
        }
        UnixDatagram::from_std(OwnedFd::from(self.inner).into())
    }
}

setup_socket_fd_traits!(UnixSocket, "Unix");
