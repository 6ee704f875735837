//! TCP: listener, stream, and the stream's halves.

mod listener;
mod split;
mod split_owned;
mod stream;

pub use listener::TcpListener;
pub use split::{ReadHalf, WriteHalf};
pub use split_owned::{OwnedReadHalf, OwnedWriteHalf, ReuniteError};
pub use stream::TcpStream;
