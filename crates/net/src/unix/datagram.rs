//! `UnixDatagram`: a Unix domain datagram socket.

use std::fmt;
use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::Path;
use std::task::{Context, Poll, ready};

use netloop_reactor::io::{Direction, PollEvented};
use tokio::io::ReadBuf;

use super::SocketAddr;
use crate::registration::register;

/// A Unix domain datagram socket (tokio's `UnixDatagram`): message boundaries kept,
/// delivery reliable and ordered on one machine.
///
/// Registered with the loop of the thread that creates it (or the runtime's next loop,
/// off the loops). Every method takes `&self`, so one socket may be shared by a
/// sending and a receiving task; several tasks may wait on it at once.
///
/// ```
/// use netloop_net::UnixDatagram;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (a, b) = UnixDatagram::pair()?;
/// a.send(b"ping").await?;
/// let mut buf = [0u8; 16];
/// let n = b.recv(&mut buf).await?;
/// assert_eq!(&buf[..n], b"ping");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixDatagram {
    io: PollEvented<mio::net::UnixDatagram>,
}

impl fmt::Debug for UnixDatagram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.io.get_ref().fmt(f)
    }
}

impl UnixDatagram {
    /// A socket bound to `path`. A path that exists (even a stale socket file) is an
    /// `AddrInUse` error: remove it first.
    ///
    /// # Panics
    ///
    /// Outside a runtime, as tokio's does.
    #[track_caller]
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixDatagram> {
        let socket = match super::addr::abstract_address(path.as_ref())? {
            Some(address) => mio::net::UnixDatagram::bind_addr(&address)?,
            None => mio::net::UnixDatagram::bind(path)?,
        };
        UnixDatagram::new(socket)
    }

    /// Two connected, unnamed sockets.
    #[track_caller]
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = mio::net::UnixDatagram::pair()?;
        let (a, b) = (UnixDatagram::new(a)?, UnixDatagram::new(b)?);
        // Fresh buffers: writable at once, readable only once the peer sends.
        for end in [&a, &b] {
            end.io
                .registration()?
                .assume_ready(netloop_reactor::io::Ready::WRITABLE);
        }
        Ok((a, b))
    }

    /// A socket bound to no address: it can send (with `send_to`, or after
    /// `connect`), but nothing can send to it by name.
    #[track_caller]
    pub fn unbound() -> io::Result<UnixDatagram> {
        UnixDatagram::new(mio::net::UnixDatagram::unbound()?)
    }

    #[track_caller]
    fn new(socket: mio::net::UnixDatagram) -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            io: register(socket, mio::Interest::READABLE | mio::Interest::WRITABLE)?,
        })
    }

    /// Wraps a std socket, setting it non-blocking, registered with the current loop.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn from_std(socket: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        socket.set_nonblocking(true)?;
        UnixDatagram::new(mio::net::UnixDatagram::from_std(socket))
    }

    /// Deregisters and returns the std socket (still non-blocking).
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixDatagram> {
        let socket = self.io.into_inner()?;
        Ok(std::os::unix::net::UnixDatagram::from(std::os::fd::OwnedFd::from(
            socket,
        )))
    }

    /// Sets the default destination of `send` and the only source `recv` accepts.
    pub fn connect<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        self.io.get_ref().connect(path)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr().map(SocketAddr)
    }

    /// The connected peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().peer_addr().map(SocketAddr)
    }

    /// Takes the pending socket error (`SO_ERROR`), clearing it.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.get_ref().take_error()
    }

    /// Shuts down the read side, the write side, or both.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.get_ref().shutdown(how)
    }

    datagram_methods!();

    /// Sends `buf` to the socket at `target`.
    pub async fn send_to<P: AsRef<Path>>(&self, buf: &[u8], target: P) -> io::Result<usize> {
        let target = target.as_ref();
        std::future::poll_fn(|cx| self.io.poll_io_shared(cx, Direction::Write, |s| s.send_to(buf, target))).await
    }

    /// Polls to send `buf` to `target`.
    pub fn poll_send_to<P: AsRef<Path>>(&self, cx: &mut Context<'_>, buf: &[u8], target: P) -> Poll<io::Result<usize>> {
        let target = target.as_ref();
        self.io.poll_write_io(cx, |s| s.send_to(buf, target))
    }

    /// [`send_to`](Self::send_to) without waiting.
    pub fn try_send_to<P: AsRef<Path>>(&self, buf: &[u8], target: P) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |s| s.send_to(buf, target))
    }

    /// Receives one datagram and its sender's address.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let (n, from) =
            std::future::poll_fn(|cx| self.io.poll_io_shared(cx, Direction::Read, |s| s.recv_from(buf))).await?;
        Ok((n, SocketAddr(from)))
    }

    /// Polls to receive one datagram into `buf`'s unfilled part, with its sender.
    pub fn poll_recv_from(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<SocketAddr>> {
        let (n, from) = ready!(self.io.poll_read_io(cx, |s| s.recv_from(buf.initialize_unfilled())))?;
        buf.advance(n);
        Poll::Ready(Ok(SocketAddr(from)))
    }

    /// [`recv_from`](Self::recv_from) without waiting.
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let (n, from) = self.io.try_io(Direction::Read, |s| s.recv_from(buf))?;
        Ok((n, SocketAddr(from)))
    }

    /// Receives one datagram into the spare capacity of `buf`, with its sender.
    pub async fn recv_buf_from<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<(usize, SocketAddr)> {
        let mut from = None;
        let n = std::future::poll_fn(|cx| {
            self.io.poll_io_shared(cx, Direction::Read, |s| {
                crate::registration::recv_into(buf, |b| {
                    let (n, addr) = s.recv_from(b)?;
                    from = Some(addr);
                    Ok(n)
                })
            })
        })
        .await?;
        Ok((n, SocketAddr(from.expect("set by a successful recv_from"))))
    }

    /// [`recv_buf_from`](Self::recv_buf_from) without waiting.
    pub fn try_recv_buf_from<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<(usize, SocketAddr)> {
        let mut from = None;
        let n = self.io.try_io(Direction::Read, |s| {
            crate::registration::recv_into(buf, |b| {
                let (n, addr) = s.recv_from(b)?;
                from = Some(addr);
                Ok(n)
            })
        })?;
        Ok((n, SocketAddr(from.expect("set by a successful recv_from"))))
    }
}

impl TryFrom<std::os::unix::net::UnixDatagram> for UnixDatagram {
    type Error = io::Error;

    /// [`UnixDatagram::from_std`].
    fn try_from(socket: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        UnixDatagram::from_std(socket)
    }
}

impl AsRawFd for UnixDatagram {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get_ref().as_raw_fd()
    }
}

impl AsFd for UnixDatagram {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}
