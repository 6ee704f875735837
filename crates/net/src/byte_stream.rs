//! What a connected byte stream does, written once for `TcpStream` and `UnixStream`:
//! the readiness waits, the `try_` operations, the reads and writes behind the
//! `AsyncRead`/`AsyncWrite` impls, and the halves of `split` and `into_split`.
//!
//! They are macros, not a generic type, because each stream is a distinct public type
//! with tokio's inherent methods and its own half types (`tcp::OwnedReadHalf`,
//! `unix::OwnedReadHalf`, ...), as tokio's are. A stream type using them has an
//! `io: PollEvented<S>` field, where `&S` reads and writes, and `S` has
//! `shutdown(Shutdown)` and `take_error()`. The halves, and the stream's `split` and
//! `into_split` that make them, are defined by [`byte_stream_halves`] in a module
//! `split` beside the stream's, which imports the stream: never the other way round.

/// The inherent I/O methods of a byte stream. Expands inside `impl $Stream { .. }`.
macro_rules! byte_stream_methods {
    ($Source:ty) => {
        readiness_methods!(stream);

        /// An accepted stream, on the loop that first uses it (`fallback`, the
        /// listener's loop, if that use is off every loop): on that loop's ring if it
        /// runs on io_uring, else registered for readiness there and taken as readable
        /// and writable until an operation finds otherwise (a new connection's first
        /// request is usually there already, so the first read tries the socket before
        /// any event has arrived, as tokio's accepted streams do).
        pub(crate) fn new_deferred(stream: $Source, fallback: netloop_reactor::EventLoopHandle) -> Self {
            Self {
                io: netloop_reactor::io::StreamIo::accepted(stream, fallback),
            }
        }

        /// The stream once its connect has completed (or made connected: `from_std`, a
        /// pair): on a loop that runs on io_uring it leaves epoll and goes on the ring at
        /// its next use on such a loop, as an accepted stream does.
        pub(crate) fn connected(self) -> std::io::Result<Self> {
            // A connect still under way (`from_std` of a connecting socket) stays on
            // readiness, whose writable() waits for the handshake.
            if self.io.get_ref().peer_addr().is_err() {
                return Ok(self);
            }
            Ok(Self {
                io: self.io.connected()?,
            })
        }

        /// netloop: true while the stream reads and writes through its loop's io_uring
        /// ring (an accepted or connected stream first used on a loop that runs on
        /// io_uring); false on readiness (epoll). See `docs/io-uring.md`.
        pub fn is_on_ring(&self) -> bool {
            self.io.is_on_ring()
        }

        /// Polls for read readiness (only the last task to poll is woken).
        pub fn poll_read_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
            self.io.poll_read_ready(cx)
        }

        /// Polls for write readiness (only the last task to poll is woken).
        pub fn poll_write_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
            self.io.poll_write_ready(cx)
        }

        /// Reads without waiting; `WouldBlock` if nothing is there.
        pub fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.io.try_read(buf)
        }

        /// Vectored `try_read` (one `readv`).
        pub fn try_read_vectored(&self, bufs: &mut [std::io::IoSliceMut<'_>]) -> std::io::Result<usize> {
            self.io.try_read_vectored(bufs)
        }

        /// Reads without waiting into the spare capacity of `buf` (at most 16 KiB at a
        /// time, through a stack buffer: no uninitialized memory is handed to the OS).
        pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
            let mut chunk = [0u8; 16 * 1024];
            let want = buf.remaining_mut().min(chunk.len());
            let n = self.try_read(&mut chunk[..want])?;
            buf.put_slice(&chunk[..n]);
            Ok(n)
        }

        /// Writes without waiting; `WouldBlock` if the send buffer is full.
        pub fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
            self.io.try_write(buf)
        }

        /// Vectored `try_write` (one `writev`).
        pub fn try_write_vectored(&self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
            self.io.try_write_vectored(bufs)
        }

        /// Takes the socket's pending error (`SO_ERROR`), if any.
        pub fn take_error(&self) -> std::io::Result<Option<std::io::Error>> {
            self.io.take_error(|s| s.take_error())
        }

        pub(crate) fn poll_read_priv(
            &self,
            cx: &mut std::task::Context<'_>,
            buf: &mut netloop_io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let n = std::task::ready!(self.io.poll_read(cx, buf.initialize_unfilled()))?;
            buf.advance(n);
            std::task::Poll::Ready(Ok(()))
        }

        pub(crate) fn poll_write_priv(
            &self,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.io.poll_write(cx, buf)
        }

        pub(crate) fn poll_write_vectored_priv(
            &self,
            cx: &mut std::task::Context<'_>,
            bufs: &[std::io::IoSlice<'_>],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.io.poll_write_vectored(cx, bufs)
        }

        pub(crate) fn poll_flush_priv(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
            self.io.poll_flush(cx)
        }

        /// Shuts the write direction (on io_uring, once the bytes already accepted are
        /// sent; it does not wait for that).
        pub(crate) fn poll_shutdown_priv(
            &self,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(self.io.shutdown(|s| Self::shutdown_source(s)))
        }

        pub(crate) fn shutdown_write(&self) -> std::io::Result<()> {
            self.io.shutdown_write(|s| Self::shutdown_source(s))
        }

        fn shutdown_source(s: &$Source) -> std::io::Result<()> {
            match s.shutdown(std::net::Shutdown::Write) {
                // Already closed by the peer: nothing left to shut.
                Err(e) if e.kind() == std::io::ErrorKind::NotConnected => Ok(()),
                r => r,
            }
        }
    };
}

/// `AsyncRead`/`AsyncWrite`, netloop-io's (and, with `tokio-io`, tokio's) and
/// futures-io's, of a byte stream, over the methods of [`byte_stream_methods`].
macro_rules! byte_stream_traits {
    ($Stream:ty) => {
        byte_stream_io!($Stream, $Stream);

        impl futures_io::AsyncRead for $Stream {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let mut rb = netloop_io::ReadBuf::new(buf);
                std::task::ready!(self.poll_read_priv(cx, &mut rb))?;
                std::task::Poll::Ready(Ok(rb.filled().len()))
            }
        }

        impl futures_io::AsyncWrite for $Stream {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.poll_write_priv(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.poll_write_vectored_priv(cx, bufs)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.poll_flush_priv(cx)
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.poll_shutdown_priv(cx)
            }
        }

        impl AsRef<$Stream> for $Stream {
            fn as_ref(&self) -> &$Stream {
                self
            }
        }
    };
}

/// The halves of a byte stream, defined in the invoking module (tokio's `ReadHalf`,
/// `WriteHalf`, `OwnedReadHalf`, `OwnedWriteHalf`, `ReuniteError` of `net::tcp` and
/// `net::unix`): `$Stream` is the stream type, `$Addr` its address type. The doc
/// comments given before each type's name (its examples, which name the module's own
/// types) follow the description written here.
macro_rules! byte_stream_halves {
    (
        $Stream:ident, $Addr:ty;
        $(#[$read_half:meta])* ReadHalf;
        $(#[$write_half:meta])* WriteHalf;
        $(#[$owned_read_half:meta])* OwnedReadHalf;
        $(#[$owned_write_half:meta])* OwnedWriteHalf;
        $(#[$reunite_error:meta])* ReuniteError;
    ) => {
        /// The read half of `split`: borrows the stream, for use in one task.
        ///
        /// Splitting lets one task read and write at the same time (say, in
        /// `io::copy` or a `select!`) without handing the stream itself to both.
        ///
        $(#[$read_half])*
        #[derive(Debug)]
        pub struct ReadHalf<'a>(pub(crate) &'a $Stream);

        /// The write half of `split`. Shutting it down shuts the stream's write
        /// direction: the peer reads end of file, and the read half still reads.
        ///
        $(#[$write_half])*
        #[derive(Debug)]
        pub struct WriteHalf<'a>(pub(crate) &'a $Stream);

        /// The read half of `into_split`; may move to another task (it owns its share
        /// of the stream, so it is `'static`).
        ///
        $(#[$owned_read_half])*
        #[derive(Debug)]
        pub struct OwnedReadHalf {
            inner: std::sync::Arc<$Stream>,
        }

        /// The write half of `into_split`. Dropping it shuts down the write direction
        /// (unless [`forget`](Self::forget) is called), so the peer learns that
        /// nothing more is coming.
        ///
        $(#[$owned_write_half])*
        #[derive(Debug)]
        pub struct OwnedWriteHalf {
            inner: std::sync::Arc<$Stream>,
            shutdown_on_drop: bool,
        }

        /// The halves given to `reunite` came from different streams; both come back.
        ///
        $(#[$reunite_error])*
        #[derive(Debug)]
        pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

        impl std::fmt::Display for ReuniteError {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("tried to reunite halves that are not from the same socket")
            }
        }

        impl std::error::Error for ReuniteError {}

        // The stream's `split` and `into_split` are defined here, beside the halves
        // they make: the halves name the stream, the stream's own module names no half.
        impl $Stream {
            /// Splits into borrowed halves, for use in one task.
            pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
                (ReadHalf(self), WriteHalf(self))
            }

            /// Splits into owned halves that may go to different tasks; `reunite` puts
            /// them back together. Dropping the write half shuts down the write direction.
            pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
                let inner = std::sync::Arc::new(self);
                (
                    OwnedReadHalf { inner: inner.clone() },
                    OwnedWriteHalf {
                        inner,
                        shutdown_on_drop: true,
                    },
                )
            }
        }

        fn reunite(read: OwnedReadHalf, mut write: OwnedWriteHalf) -> Result<$Stream, ReuniteError> {
            if !std::sync::Arc::ptr_eq(&read.inner, &write.inner) {
                return Err(ReuniteError(read, write));
            }
            write.shutdown_on_drop = false;
            let inner = write.inner.clone();
            drop(write);
            drop(read);
            Ok(std::sync::Arc::try_unwrap(inner).expect("both halves were just dropped"))
        }

        impl ReadHalf<'_> {
            half_methods!(read, 0, $Addr);
        }

        impl WriteHalf<'_> {
            half_methods!(write, 0, $Addr);
        }

        impl OwnedReadHalf {
            /// Puts the stream back together. Fails if the halves came from different
            /// streams.
            pub fn reunite(self, other: OwnedWriteHalf) -> Result<$Stream, ReuniteError> {
                reunite(self, other)
            }

            half_methods!(read, inner, $Addr);
        }

        impl OwnedWriteHalf {
            /// Puts the stream back together. Fails if the halves came from different
            /// streams.
            pub fn reunite(self, other: OwnedReadHalf) -> Result<$Stream, ReuniteError> {
                reunite(other, self)
            }

            /// Drops the half without shutting down the write direction.
            pub fn forget(mut self) {
                self.shutdown_on_drop = false;
            }

            half_methods!(write, inner, $Addr);
        }

        impl Drop for OwnedWriteHalf {
            fn drop(&mut self) {
                if self.shutdown_on_drop {
                    let _ = self.inner.shutdown_write();
                }
            }
        }

        byte_stream_io!(@impl ['a] ReadHalf<'a>, WriteHalf<'a>, 0);
        byte_stream_io!(OwnedReadHalf, OwnedWriteHalf, inner);

        impl AsRef<$Stream> for ReadHalf<'_> {
            fn as_ref(&self) -> &$Stream {
                self.0
            }
        }

        impl AsRef<$Stream> for WriteHalf<'_> {
            fn as_ref(&self) -> &$Stream {
                self.0
            }
        }

        impl AsRef<$Stream> for OwnedReadHalf {
            fn as_ref(&self) -> &$Stream {
                &self.inner
            }
        }

        impl AsRef<$Stream> for OwnedWriteHalf {
            fn as_ref(&self) -> &$Stream {
                &self.inner
            }
        }
    };
}

/// netloop-io's `AsyncRead` for `$Read` and `AsyncWrite` for `$Write`, forwarding to
/// the stream at `self` (the stream itself) or `self.$stream` (its halves); with
/// `tokio-io`, tokio's as well, forwarding to those.
macro_rules! byte_stream_io {
    ($Read:ty, $Write:ty $(, $stream:tt)?) => {
        byte_stream_io!(@impl [] $Read, $Write $(, $stream)?);
    };
    (@impl [$($g:tt)*] $Read:ty, $Write:ty $(, $stream:tt)?) => {
        impl<$($g)*> netloop_io::AsyncRead for $Read {
            // The trait shims inline into the caller's future (`Read`, `WriteAll`,
            // codecs), which then calls the operation directly.
            #[inline]
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut netloop_io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self$(.$stream)?.poll_read_priv(cx, buf)
            }
        }

        impl<$($g)*> netloop_io::AsyncWrite for $Write {
            #[inline]
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self$(.$stream)?.poll_write_priv(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self$(.$stream)?.poll_write_vectored_priv(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self$(.$stream)?.poll_flush_priv(cx)
            }

            /// Shuts down the write direction: the peer reads EOF; reading still works.
            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self$(.$stream)?.poll_shutdown_priv(cx)
            }
        }

        #[cfg(feature = "tokio-io")]
        netloop_io::impl_tokio_io! {
            impl AsyncRead for [$($g)*] $Read;
            impl AsyncWrite for [$($g)*] $Write;
        }
    };
}

/// The methods every half (borrowed and owned) has: each forwards to the stream
/// behind `self.$stream`. One definition keeps the four halves alike, as tokio's.
macro_rules! half_methods {
    (read, $stream:tt, $Addr:ty) => {
        half_methods!(both, $stream, $Addr);

        /// See the stream's `readable`.
        pub async fn readable(&self) -> std::io::Result<()> {
            self.$stream.readable().await
        }

        /// See the stream's `try_read`.
        pub fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.$stream.try_read(buf)
        }

        /// See the stream's `try_read_vectored`.
        pub fn try_read_vectored(&self, bufs: &mut [std::io::IoSliceMut<'_>]) -> std::io::Result<usize> {
            self.$stream.try_read_vectored(bufs)
        }

        /// See the stream's `try_read_buf`.
        pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
            self.$stream.try_read_buf(buf)
        }
    };
    (write, $stream:tt, $Addr:ty) => {
        half_methods!(both, $stream, $Addr);

        /// See the stream's `writable`.
        pub async fn writable(&self) -> std::io::Result<()> {
            self.$stream.writable().await
        }

        /// See the stream's `try_write`.
        pub fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
            self.$stream.try_write(buf)
        }

        /// See the stream's `try_write_vectored`.
        pub fn try_write_vectored(&self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
            self.$stream.try_write_vectored(bufs)
        }
    };
    (both, $stream:tt, $Addr:ty) => {
        /// The peer's address.
        pub fn peer_addr(&self) -> std::io::Result<$Addr> {
            self.$stream.peer_addr()
        }

        /// The local address.
        pub fn local_addr(&self) -> std::io::Result<$Addr> {
            self.$stream.local_addr()
        }

        /// See the stream's `ready`.
        pub async fn ready(&self, interest: crate::io::Interest) -> std::io::Result<crate::io::Ready> {
            self.$stream.ready(interest).await
        }
    };
}
