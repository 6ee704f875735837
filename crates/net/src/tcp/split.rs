//! The halves of a `TcpStream` (tokio's `tcp::{ReadHalf, WriteHalf, OwnedReadHalf,
//! OwnedWriteHalf, ReuniteError}`): `split` borrows the stream for one task,
//! `into_split` shares it between two.

use super::TcpStream;

byte_stream_halves!(TcpStream, std::net::SocketAddr);

impl ReadHalf<'_> {
    tcp_peek_methods!(0);
}

impl OwnedReadHalf {
    tcp_peek_methods!(inner);
}
