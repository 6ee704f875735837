//! Unix domain sockets (tokio's `net::unix`): `UnixListener`, `UnixStream` and its
//! halves, `UnixDatagram`, the address type and the peer credentials; and Unix pipes,
//! anonymous or named ([`pipe`]).

mod addr;
mod datagram;
mod listener;
pub mod pipe;
mod socket;
mod split;
mod stream;

pub use addr::{SocketAddr, UCred};

/// A user ID, as [`UCred::uid`] returns it (tokio's `net::unix::uid_t`).
#[allow(non_camel_case_types)]
pub type uid_t = u32;

/// A group ID, as [`UCred::gid`] returns it (tokio's `net::unix::gid_t`).
#[allow(non_camel_case_types)]
pub type gid_t = u32;

/// A process or process group ID, as [`UCred::pid`] returns it (tokio's
/// `net::unix::pid_t`).
#[allow(non_camel_case_types)]
pub type pid_t = i32;
pub use datagram::UnixDatagram;
pub use listener::UnixListener;
pub use socket::UnixSocket;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::UnixStream;
