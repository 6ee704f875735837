//! TCP: listener, stream, and the stream's halves.

/// The methods every read half (borrowed and owned) has: each forwards to the
/// stream behind `self.$stream`. One definition keeps the four halves alike, as tokio's.
macro_rules! read_half_methods {
    ($stream:tt) => {
        /// The peer's address.
        pub fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
            self.$stream.peer_addr()
        }

        /// The local address.
        pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
            self.$stream.local_addr()
        }

        /// See [`TcpStream::ready`](crate::TcpStream::ready).
        pub async fn ready(&self, interest: crate::io::Interest) -> std::io::Result<crate::io::Ready> {
            self.$stream.ready(interest).await
        }

        /// See [`TcpStream::readable`](crate::TcpStream::readable).
        pub async fn readable(&self) -> std::io::Result<()> {
            self.$stream.readable().await
        }

        /// See [`TcpStream::try_read`](crate::TcpStream::try_read).
        pub fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.$stream.try_read(buf)
        }

        /// See [`TcpStream::try_read_vectored`](crate::TcpStream::try_read_vectored).
        pub fn try_read_vectored(&self, bufs: &mut [std::io::IoSliceMut<'_>]) -> std::io::Result<usize> {
            self.$stream.try_read_vectored(bufs)
        }

        /// See [`TcpStream::try_read_buf`](crate::TcpStream::try_read_buf).
        pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
            self.$stream.try_read_buf(buf)
        }

        /// See [`TcpStream::peek`](crate::TcpStream::peek).
        pub async fn peek(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.$stream.peek(buf).await
        }

        /// See [`TcpStream::poll_peek`](crate::TcpStream::poll_peek).
        pub fn poll_peek(
            &mut self,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.$stream.poll_peek(cx, buf)
        }
    };
}

/// The methods every write half has; see [`read_half_methods`].
macro_rules! write_half_methods {
    ($stream:tt) => {
        /// The peer's address.
        pub fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
            self.$stream.peer_addr()
        }

        /// The local address.
        pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
            self.$stream.local_addr()
        }

        /// See [`TcpStream::ready`](crate::TcpStream::ready).
        pub async fn ready(&self, interest: crate::io::Interest) -> std::io::Result<crate::io::Ready> {
            self.$stream.ready(interest).await
        }

        /// See [`TcpStream::writable`](crate::TcpStream::writable).
        pub async fn writable(&self) -> std::io::Result<()> {
            self.$stream.writable().await
        }

        /// See [`TcpStream::try_write`](crate::TcpStream::try_write).
        pub fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
            self.$stream.try_write(buf)
        }

        /// See [`TcpStream::try_write_vectored`](crate::TcpStream::try_write_vectored).
        pub fn try_write_vectored(&self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
            self.$stream.try_write_vectored(bufs)
        }
    };
}

mod listener;
mod socket;
mod split;
mod split_owned;
mod stream;

pub use listener::TcpListener;
pub use socket::TcpSocket;
pub use split::{ReadHalf, WriteHalf};
pub use split_owned::{OwnedReadHalf, OwnedWriteHalf, ReuniteError};
pub use stream::TcpStream;
