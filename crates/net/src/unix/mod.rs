//! Unix domain sockets (tokio's `net::unix`): `UnixListener`, `UnixStream` and its
//! halves, `UnixDatagram`, the address type and the peer credentials.

mod addr;
mod datagram;
mod listener;
mod socket;
mod split;
mod stream;

pub use addr::{SocketAddr, UCred};
pub use datagram::UnixDatagram;
pub use listener::UnixListener;
pub use socket::UnixSocket;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::UnixStream;
