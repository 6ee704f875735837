//! TCP: listener, stream, and the stream's halves.

/// `peek` and `poll_peek` of the read halves, forwarding to `self.$stream`.
macro_rules! tcp_peek_methods {
    ($stream:tt) => {
        /// See [`TcpStream::peek`](crate::TcpStream::peek).
        pub async fn peek(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.$stream.peek(buf).await
        }

        /// See [`TcpStream::poll_peek`](crate::TcpStream::poll_peek).
        pub fn poll_peek(
            &mut self,
            cx: &mut std::task::Context<'_>,
            buf: &mut netloop_io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.$stream.poll_peek(cx, buf)
        }
    };
}

mod listener;
mod socket;
mod split;
mod stream;

pub use listener::TcpListener;
pub use socket::TcpSocket;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::TcpStream;
