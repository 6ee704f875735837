//! The address of a Unix socket, and the credentials of its peer.

use std::fmt;
use std::path::Path;

/// The address of a Unix domain socket: a path, an abstract name (Linux), or nothing
/// (an unnamed socket, such as either end of a `pair`) (tokio's `net::unix::SocketAddr`).
///
/// ```
/// use netloop_net::unix::{UnixListener, UnixStream};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let path = std::env::temp_dir().join(format!("netloop-doc-addr-{}.sock", std::process::id()));
/// let _ = std::fs::remove_file(&path);
/// let listener = UnixListener::bind(&path)?;
/// assert_eq!(listener.local_addr()?.as_pathname(), Some(path.as_path()));
///
/// // A client that did not bind connects from an unnamed address.
/// let _client = UnixStream::connect(&path).await?;
/// let (_server, client_addr) = listener.accept().await?;
/// assert!(client_addr.is_unnamed());
/// std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
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

/// The abstract address a path names, on Linux: one that starts with a NUL byte (the
/// rest is the name). `None` for an ordinary path.
pub(crate) fn abstract_address(path: &Path) -> std::io::Result<Option<std::os::unix::net::SocketAddr>> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::unix::ffi::OsStrExt;
        if let Some(name) = path.as_os_str().as_bytes().strip_prefix(b"\0") {
            use std::os::linux::net::SocketAddrExt;
            return std::os::unix::net::SocketAddr::from_abstract_name(name).map(Some);
        }
    }
    Ok(None)
}

/// The credentials of a Unix socket's peer, as the kernel recorded them when the
/// connection was made (tokio's `net::unix::UCred`).
///
/// The kernel vouches for them, so a server can decide what a local client may do by
/// who runs it, with no password:
///
/// ```
/// use netloop_net::unix::UnixStream;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (server, _client) = UnixStream::pair()?;
/// let cred = server.peer_cred()?;
/// // Here the peer is this very process.
/// assert_eq!(cred.pid().map(|pid| pid as u32), Some(std::process::id()));
/// println!("peer runs as uid {} gid {}", cred.uid(), cred.gid());
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UCred {
    pid: Option<super::pid_t>,
    uid: super::uid_t,
    gid: super::gid_t,
}

impl UCred {
    /// The peer's user id.
    pub fn uid(&self) -> super::uid_t {
        self.uid
    }

    /// The peer's group id.
    pub fn gid(&self) -> super::gid_t {
        self.gid
    }

    /// The peer's process id, where the platform reports it.
    pub fn pid(&self) -> Option<super::pid_t> {
        self.pid
    }

    /// `SO_PEERCRED` of the connected socket `fd`.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(crate) fn of(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<UCred> {
        use std::os::fd::AsRawFd;
        let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: `fd` is open for the call (borrowed), `cred` and `len` are live and
        // writable, and `len` is the size of `cred`, as SO_PEERCRED expects.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&raw mut cred).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(UCred {
            pid: Some(cred.pid),
            uid: cred.uid,
            gid: cred.gid,
        })
    }
}
