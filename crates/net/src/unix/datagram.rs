//! `UnixDatagram`: a Unix domain datagram socket.

use std::io;
use std::net::Shutdown;
use std::path::Path;
use std::task::{Context, Poll};

use netloop_io::ReadBuf;
use netloop_reactor::io::{Direction, PollEvented};

use super::SocketAddr;
use crate::registration::{io_shared, poll_read_into, recv_from_into};

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
        io_shared(&self.io, Direction::Write, |s| s.send_to(buf, target)).await
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
        let (n, from) = io_shared(&self.io, Direction::Read, |s| s.recv_from(buf)).await?;
        Ok((n, SocketAddr(from)))
    }

    /// Polls to receive one datagram into `buf`'s unfilled part, with its sender.
    pub fn poll_recv_from(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<SocketAddr>> {
        poll_read_into(&self.io, cx, buf, |s, b| s.recv_from(b)).map_ok(SocketAddr)
    }

    /// [`recv_from`](Self::recv_from) without waiting.
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let (n, from) = self.io.try_io(Direction::Read, |s| s.recv_from(buf))?;
        Ok((n, SocketAddr(from)))
    }

    /// Receives one datagram into the spare capacity of `buf`, with its sender.
    pub async fn recv_buf_from<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<(usize, SocketAddr)> {
        let (n, from) = io_shared(&self.io, Direction::Read, |s| recv_from_into(buf, |b| s.recv_from(b))).await?;
        Ok((n, SocketAddr(from)))
    }

    /// [`recv_buf_from`](Self::recv_buf_from) without waiting.
    pub fn try_recv_buf_from<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<(usize, SocketAddr)> {
        let (n, from) = self
            .io
            .try_io(Direction::Read, |s| recv_from_into(buf, |b| s.recv_from(b)))?;
        Ok((n, SocketAddr(from)))
    }
}

evented_socket!(
    UnixDatagram,
    std::os::unix::net::UnixDatagram,
    mio::net::UnixDatagram,
    mio::Interest::READABLE | mio::Interest::WRITABLE
);
