//! Unix domain sockets (tokio's `net::unix`): `UnixDatagram` and the address type.
//! `UnixListener` and `UnixStream` are not built yet.

mod addr;
mod datagram;

pub use addr::SocketAddr;
pub use datagram::UnixDatagram;
