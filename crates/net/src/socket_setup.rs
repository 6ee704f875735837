//! What `TcpSocket` and `UnixSocket` share: a `socket2::Socket`, held in a field
//! `inner`, that is configured before it connects or listens.

use std::io;

/// `AsRawFd`, `AsFd`, `FromRawFd` and `IntoRawFd` of `$Socket`, which owns a socket of
/// kind `$kind` (`"TCP"`, `"Unix"`) in its field `inner`.
macro_rules! setup_socket_fd_traits {
    ($Socket:ident, $kind:literal) => {
        impl std::os::fd::AsRawFd for $Socket {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(&self.inner)
            }
        }

        impl std::os::fd::AsFd for $Socket {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(&self.inner)
            }
        }

        impl std::os::fd::FromRawFd for $Socket {
            #[doc = concat!("Wraps a ", $kind, " socket's file descriptor, taking ownership of it.")]
            ///
            /// # Safety
            ///
            #[doc = concat!(
                        "`fd` must be an open ", $kind, " socket that nothing else owns (it is closed when the `",
                        stringify!($Socket), "` is dropped)."
                    )]
            unsafe fn from_raw_fd(fd: std::os::fd::RawFd) -> $Socket {
                // SAFETY: the caller hands over ownership of an open socket.
                let inner = unsafe { <socket2::Socket as std::os::fd::FromRawFd>::from_raw_fd(fd) };
                $Socket { inner }
            }
        }

        impl std::os::fd::IntoRawFd for $Socket {
            fn into_raw_fd(self) -> std::os::fd::RawFd {
                std::os::fd::IntoRawFd::into_raw_fd(self.inner)
            }
        }
    };
}

/// Starts a non-blocking `connect` of `socket` to `addr`: `Ok` once the handshake is
/// under way (`EINPROGRESS`) or done; the stream's `finish_connect` waits for it.
pub(crate) fn start_connect(socket: &socket2::Socket, addr: &socket2::SockAddr) -> io::Result<()> {
    match socket.connect(addr) {
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(()),
        result => result,
    }
}
