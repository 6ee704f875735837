//! The socket calls the ring's sockets make themselves, beside what the ring does for
//! them: the duplicate descriptor each keeps, a read that does not wait, the socket
//! options a release looks at, and a shutdown. Each takes a borrowed descriptor, so it
//! names an open socket for the whole call.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The errors the ring's sockets tell apart in completions and calls.
pub(crate) use libc::{EAGAIN, ECANCELED, ECONNRESET, EINTR, ENOBUFS, EPIPE};

/// A close-on-exec duplicate of `fd`, owned by the caller alone.
pub(crate) fn duplicate(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on an open descriptor touches no memory; the result is
    // checked.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(dup) })
}

/// One `recv(2)` that does not wait (`MSG_PEEK` for a peek).
pub(crate) fn recv_now(fd: BorrowedFd<'_>, buf: &mut [u8], peek: bool) -> io::Result<usize> {
    let flags = libc::MSG_DONTWAIT | if peek { libc::MSG_PEEK } else { 0 };
    // SAFETY: `buf` is writable for its length; `fd` is open for the call.
    let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// True for a TCP socket (the ring's other streams are Unix sockets).
pub(crate) fn is_tcp(fd: BorrowedFd<'_>) -> bool {
    get_sockopt(fd, libc::SO_DOMAIN, 0 as libc::c_int).is_some_and(|d| d == libc::AF_INET || d == libc::AF_INET6)
}

/// True if the socket's linger is on with a zero timeout (its close resets).
pub(crate) fn linger_is_zero(fd: BorrowedFd<'_>) -> bool {
    let off = libc::linger {
        l_onoff: 0,
        l_linger: 0,
    };
    get_sockopt(fd, libc::SO_LINGER, off).is_some_and(|l| l.l_onoff != 0 && l.l_linger == 0)
}

/// The socket-level option `name` of `fd` (`init` is overwritten), if the kernel gives it.
fn get_sockopt<T: Copy>(fd: BorrowedFd<'_>, name: libc::c_int, init: T) -> Option<T> {
    let mut value = init;
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `fd` is open for the call; `value` is writable for `len` bytes, and `T`
    // is the plain-data type the option's value has.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (&raw mut value).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(value)
}

/// Sets the socket's linger on with a zero timeout: its last close resets the
/// connection. False if the kernel refused.
pub(crate) fn set_linger_zero(fd: BorrowedFd<'_>) -> bool {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `fd` is open for the call; `linger` is readable for its size.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        ) == 0
    }
}

/// Shuts the socket's write direction (`SHUT_WR`); a socket the peer already closed
/// has nothing left to shut.
pub(crate) fn shutdown_write(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: `fd` is open for the call and `shutdown` touches no memory.
    if unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) } == 0 {
        Ok(())
    } else {
        match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::ENOTCONN) => Ok(()),
            e => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    use super::*;

    /// The duplicate is another number for the same socket, closed on exec.
    #[test]
    #[cfg_attr(miri, ignore = "miri has no sockets")]
    fn a_duplicate_is_the_same_socket_under_a_close_on_exec_number() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let dup = duplicate(a.as_fd()).unwrap();
        assert_ne!(dup.as_raw_fd(), a.as_raw_fd());
        // SAFETY: `dup` is open; F_GETFD touches no memory.
        let flags = unsafe { libc::fcntl(dup.as_raw_fd(), libc::F_GETFD) };
        assert!(flags >= 0 && flags & libc::FD_CLOEXEC != 0, "flags {flags}");
        drop(a);
        let mut through_dup = UnixStream::from(dup);
        through_dup.write_all(b"x").unwrap();
        let mut got = [0u8; 1];
        b.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"x");
    }

    /// A read that does not wait: `WouldBlock` on nothing, a peek leaves the bytes, a
    /// read takes them, and the end of the stream reads 0.
    #[test]
    #[cfg_attr(miri, ignore = "miri has no sockets")]
    fn recv_now_never_waits_and_a_peek_leaves_the_bytes() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut buf = [0u8; 8];
        let e = recv_now(a.as_fd(), &mut buf, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        b.write_all(b"ping").unwrap();
        assert_eq!(recv_now(a.as_fd(), &mut buf, true).unwrap(), 4);
        assert_eq!(recv_now(a.as_fd(), &mut buf, false).unwrap(), 4);
        assert_eq!(&buf[..4], b"ping");
        shutdown_write(b.as_fd()).unwrap();
        assert_eq!(recv_now(a.as_fd(), &mut buf, false).unwrap(), 0);
        drop(b);
        // Shutting a socket whose peer is gone has nothing to report.
        shutdown_write(a.as_fd()).unwrap();
    }

    /// Only a TCP socket counts as TCP, and a zero linger is read back once set.
    #[test]
    #[cfg_attr(miri, ignore = "miri has no sockets")]
    fn tcp_and_a_zero_linger_are_told_apart() {
        let (unix, _peer) = UnixStream::pair().unwrap();
        assert!(!is_tcp(unix.as_fd()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert!(is_tcp(tcp.as_fd()));
        assert!(!linger_is_zero(tcp.as_fd()));
        assert!(set_linger_zero(tcp.as_fd()));
        assert!(linger_is_zero(tcp.as_fd()));
    }
}
