//! `UnixStream`: a Unix domain stream connection registered with one event loop.

use std::future::poll_fn;
use std::io;
use std::path::Path;

use netloop_reactor::io::Ready;

use super::{SocketAddr, UCred};

/// A Unix domain stream socket (tokio's `net::UnixStream`): a byte stream to another
/// process on the same machine, with the same I/O surface as a `TcpStream` (readiness
/// waits, `try_` operations, `AsyncRead`/`AsyncWrite`, halves).
///
/// Registered with the loop current where it is created; an accepted one with the
/// loop where it is first used, as TCP connections are.
///
/// ```
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
/// use netloop_net::unix::UnixStream;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (mut a, mut b) = UnixStream::pair()?;
/// a.write_all(b"ping").await?;
/// let mut buf = [0u8; 4];
/// b.read_exact(&mut buf).await?;
/// assert_eq!(&buf, b"ping");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixStream {
    pub(crate) io: netloop_reactor::io::StreamIo<mio::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket at `path`. Nothing listening there is a
    /// `ConnectionRefused` (or `NotFound`, without the file) error. On Linux a path
    /// that starts with a NUL byte names an abstract socket.
    ///
    /// # Panics
    ///
    /// Outside a runtime, as tokio's does.
    pub async fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        let socket = match super::addr::abstract_address(path.as_ref())? {
            Some(address) => mio::net::UnixStream::connect_addr(&address)?,
            None => mio::net::UnixStream::connect(path)?,
        };
        UnixStream::new(socket)?.finish_connect().await
    }

    /// Connects to the socket at `address` (a path or, on Linux, an abstract name),
    /// tokio's [`SocketAddr`] (a std address converts with `into`).
    pub async fn connect_addr(address: &SocketAddr) -> io::Result<UnixStream> {
        let stream = UnixStream::new(mio::net::UnixStream::connect_addr(&address.0)?)?;
        stream.finish_connect().await
    }

    /// Waits for a non-blocking connect to end; its error, if it failed.
    pub(super) async fn finish_connect(self) -> io::Result<UnixStream> {
        poll_fn(|cx| self.io.poll_write_ready(cx)).await?;
        match self.io.get_ref().take_error()? {
            Some(e) => Err(e),
            None => self.connected(),
        }
    }

    /// Two connected, unnamed streams.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = mio::net::UnixStream::pair()?;
        let (a, b) = (UnixStream::new(a)?, UnixStream::new(b)?);
        // Fresh buffers: writable at once, readable only once the peer writes.
        for end in [&a, &b] {
            end.io.evented().registration()?.assume_ready(Ready::WRITABLE);
        }
        // Connected from the start: placed as a connected stream is (on an io_uring
        // loop's ring at its first use there).
        Ok((a.connected()?, b.connected()?))
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr().map(SocketAddr)
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().peer_addr().map(SocketAddr)
    }

    /// The peer's credentials (`SO_PEERCRED`): its user, group and process.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn peer_cred(&self) -> io::Result<UCred> {
        UCred::of(std::os::fd::AsFd::as_fd(self.io.get_ref()))
    }

    byte_stream_methods!(mio::net::UnixStream);
}

evented_socket!(
    UnixStream,
    std::os::unix::net::UnixStream,
    mio::net::UnixStream,
    mio::Interest::READABLE | mio::Interest::WRITABLE,
    placed by connected
);

byte_stream_traits!(UnixStream);
