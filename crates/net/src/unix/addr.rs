//! The address of a Unix socket.

use std::fmt;
use std::path::Path;

/// The address of a Unix domain socket: a path, an abstract name (Linux), or nothing
/// (an unnamed socket, such as either end of a `pair`) (tokio's `net::unix::SocketAddr`).
#[derive(Clone)]
pub struct SocketAddr(pub(crate) std::os::unix::net::SocketAddr);

impl SocketAddr {
    /// True for an unnamed address.
    pub fn is_unnamed(&self) -> bool {
        self.0.is_unnamed()
    }

    /// The path, for a pathname address.
    pub fn as_pathname(&self) -> Option<&Path> {
        self.0.as_pathname()
    }

    /// The name, for an abstract address (Linux and Android).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn as_abstract_name(&self) -> Option<&[u8]> {
        std::os::linux::net::SocketAddrExt::as_abstract_name(&self.0)
    }
}

impl fmt::Debug for SocketAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl From<std::os::unix::net::SocketAddr> for SocketAddr {
    fn from(addr: std::os::unix::net::SocketAddr) -> SocketAddr {
        SocketAddr(addr)
    }
}

impl From<SocketAddr> for std::os::unix::net::SocketAddr {
    fn from(addr: SocketAddr) -> std::os::unix::net::SocketAddr {
        addr.0
    }
}
