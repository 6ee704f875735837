//! The halves of a `UnixStream` (tokio's `unix::{ReadHalf, WriteHalf, OwnedReadHalf,
//! OwnedWriteHalf, ReuniteError}`).

use super::{SocketAddr, UnixStream};

byte_stream_halves!(UnixStream, SocketAddr);
