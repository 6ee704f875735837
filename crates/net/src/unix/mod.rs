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
pub use datagram::UnixDatagram;
pub use listener::UnixListener;
pub use socket::UnixSocket;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::UnixStream;
