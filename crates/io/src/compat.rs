//! The bridge to tokio's own I/O traits (feature `tokio-io`).
//!
//! Crates written against tokio's traits (hyper-util's `TokioIo`, tokio-util's codecs,
//! tokio-tungstenite, ...) ask for `tokio::io::AsyncRead` and `tokio::io::AsyncWrite`,
//! not for this crate's. With the feature on, a type that implements this crate's
//! traits can implement tokio's too, by forwarding: [`impl_tokio_io!`](crate::impl_tokio_io)
//! writes those impls, and [`poll_read_into_tokio`] is the one step that is not a plain
//! call (a read into tokio's `ReadBuf` goes through one of ours over the same memory).
//!
//! Only tokio's traits are used, and they need none of tokio's features: tokio is
//! built with `default-features = false`, so no runtime, reactor or utility code of
//! tokio's is compiled in.
//!
//! ```
//! use netloop_io::AsyncWriteExt as _;
//!
//! // A tokio-only consumer: it accepts anything that implements tokio's AsyncWrite.
//! fn tokio_writer(_: &impl netloop_io::compat::tokio::io::AsyncWrite) {}
//!
//! let (a, _b) = netloop_io::duplex(64);
//! tokio_writer(&a); // this crate's DuplexStream implements tokio's traits as well
//! ```

use crate::ReadBuf;
use std::io;
use std::task::Poll;

/// The registry tokio, for the expansions of [`impl_tokio_io!`](crate::impl_tokio_io)
/// in crates that do not name tokio themselves. Only its always-present I/O traits
/// are meant to be used through it.
pub use ::tokio;

/// Runs `read`, a read into this crate's [`ReadBuf`], on the unfilled part of tokio's
/// `buf`, then moves tokio's filled and initialized marks to where the read left
/// ours. The bytes already known to be initialized stay known, so a reader that
/// zeroes the unfilled part zeroes it once, whichever trait it is reached through.
///
/// # Panics
///
/// If `read` replaces the buffer it was given with a different one (nothing it filled
/// would be in tokio's buffer).
#[inline]
pub fn poll_read_into_tokio(
    buf: &mut tokio::io::ReadBuf<'_>,
    read: impl FnOnce(&mut ReadBuf<'_>) -> Poll<io::Result<()>>,
) -> Poll<io::Result<()>> {
    let already_init = buf.initialized().len() - buf.filled().len();
    // SAFETY: `ours` only ever writes initialized bytes into this memory, and never
    // marks bytes initialized that it did not write or that were not (it starts with
    // tokio's own initialized count), so tokio's marks, moved below to ours, stay true.
    let unfilled = unsafe { buf.unfilled_mut() };
    let start = unfilled.as_ptr().cast::<u8>();
    let mut ours = ReadBuf::uninit(unfilled);
    // SAFETY: tokio says these bytes, right after its filled part, are initialized.
    unsafe { ours.assume_init(already_init) };
    let result = read(&mut ours);
    assert_eq!(
        ours.filled().as_ptr(),
        start,
        "the read replaced the ReadBuf it was given with another buffer"
    );
    let (filled, initialized) = (ours.filled().len(), ours.initialized().len());
    // SAFETY: `ours` wrote the first `initialized` bytes of tokio's unfilled part.
    unsafe { buf.assume_init(initialized) };
    buf.advance(filled);
    result
}

/// Implements tokio's I/O traits for types that implement this crate's, each by
/// forwarding to the impl of this crate's trait of the same name (feature `tokio-io`).
///
/// Each line names one trait (`AsyncRead`, `AsyncWrite`, `AsyncBufRead` or
/// `AsyncSeek`), the impl's generic parameters in brackets, and the type. Every impl is
/// bounded by the type implementing this crate's trait, so a generic adapter gets
/// tokio's trait exactly when it has ours.
///
/// ```
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
/// use netloop_io::{AsyncRead, ReadBuf};
///
/// /// Reads zeros forever.
/// struct Zeros;
///
/// impl AsyncRead for Zeros {
///     fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
///         let n = buf.remaining();
///         buf.initialize_unfilled_to(n);
///         buf.advance(n);
///         Poll::Ready(Ok(()))
///     }
/// }
///
/// netloop_io::impl_tokio_io! {
///     impl AsyncRead for [] Zeros;
/// }
///
/// fn tokio_reader(_: impl netloop_io::compat::tokio::io::AsyncRead) {}
/// tokio_reader(Zeros);
/// ```
#[macro_export]
macro_rules! impl_tokio_io {
    ($(impl $Trait:ident for [$($g:tt)*] $T:ty;)*) => {
        $($crate::impl_tokio_io!(@ $Trait [$($g)*] $T);)*
    };
    (@ AsyncRead [$($g:tt)*] $T:ty) => {
        impl<$($g)*> $crate::compat::tokio::io::AsyncRead for $T
        where
            $T: $crate::AsyncRead,
        {
            #[inline]
            fn poll_read(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &mut $crate::compat::tokio::io::ReadBuf<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                $crate::compat::poll_read_into_tokio(buf, |ours| {
                    <$T as $crate::AsyncRead>::poll_read(self, cx, ours)
                })
            }
        }
    };
    (@ AsyncWrite [$($g:tt)*] $T:ty) => {
        impl<$($g)*> $crate::compat::tokio::io::AsyncWrite for $T
        where
            $T: $crate::AsyncWrite,
        {
            #[inline]
            fn poll_write(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &[u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                <$T as $crate::AsyncWrite>::poll_write(self, cx, buf)
            }

            #[inline]
            fn poll_write_vectored(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &[::std::io::IoSlice<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                <$T as $crate::AsyncWrite>::poll_write_vectored(self, cx, bufs)
            }

            #[inline]
            fn is_write_vectored(&self) -> bool {
                <$T as $crate::AsyncWrite>::is_write_vectored(self)
            }

            #[inline]
            fn poll_flush(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                <$T as $crate::AsyncWrite>::poll_flush(self, cx)
            }

            #[inline]
            fn poll_shutdown(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                <$T as $crate::AsyncWrite>::poll_shutdown(self, cx)
            }
        }
    };
    (@ AsyncBufRead [$($g:tt)*] $T:ty) => {
        impl<$($g)*> $crate::compat::tokio::io::AsyncBufRead for $T
        where
            $T: $crate::AsyncBufRead,
        {
            #[inline]
            fn poll_fill_buf(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<&[u8]>> {
                <$T as $crate::AsyncBufRead>::poll_fill_buf(self, cx)
            }

            #[inline]
            fn consume(self: ::std::pin::Pin<&mut Self>, amt: usize) {
                <$T as $crate::AsyncBufRead>::consume(self, amt)
            }
        }
    };
    (@ AsyncSeek [$($g:tt)*] $T:ty) => {
        impl<$($g)*> $crate::compat::tokio::io::AsyncSeek for $T
        where
            $T: $crate::AsyncSeek,
        {
            #[inline]
            fn start_seek(self: ::std::pin::Pin<&mut Self>, position: ::std::io::SeekFrom) -> ::std::io::Result<()> {
                <$T as $crate::AsyncSeek>::start_seek(self, position)
            }

            #[inline]
            fn poll_complete(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<u64>> {
                <$T as $crate::AsyncSeek>::poll_complete(self, cx)
            }
        }
    };
}

// This crate's own types: each gets tokio's traits wherever it has ours.
crate::impl_tokio_io! {
    impl AsyncRead for [] crate::DuplexStream;
    impl AsyncWrite for [] crate::DuplexStream;
    impl AsyncRead for [] crate::SimplexStream;
    impl AsyncWrite for [] crate::SimplexStream;
    impl AsyncRead for [R] crate::BufReader<R>;
    impl AsyncBufRead for [R] crate::BufReader<R>;
    impl AsyncSeek for [R] crate::BufReader<R>;
    impl AsyncWrite for [R] crate::BufReader<R>;
    impl AsyncRead for [W] crate::BufWriter<W>;
    impl AsyncBufRead for [W] crate::BufWriter<W>;
    impl AsyncSeek for [W] crate::BufWriter<W>;
    impl AsyncWrite for [W] crate::BufWriter<W>;
    impl AsyncRead for [RW] crate::BufStream<RW>;
    impl AsyncBufRead for [RW] crate::BufStream<RW>;
    impl AsyncSeek for [RW] crate::BufStream<RW>;
    impl AsyncWrite for [RW] crate::BufStream<RW>;
    impl AsyncRead for [T] crate::ReadHalf<T>;
    impl AsyncWrite for [T] crate::WriteHalf<T>;
    impl AsyncRead for [R, W] crate::Join<R, W>;
    impl AsyncBufRead for [R, W] crate::Join<R, W>;
    impl AsyncWrite for [R, W] crate::Join<R, W>;
    impl AsyncRead for [T, U] crate::Chain<T, U>;
    impl AsyncBufRead for [T, U] crate::Chain<T, U>;
    impl AsyncRead for [R] crate::Take<R>;
    impl AsyncBufRead for [R] crate::Take<R>;
    impl AsyncRead for [] crate::Empty;
    impl AsyncBufRead for [] crate::Empty;
    impl AsyncWrite for [] crate::Empty;
    impl AsyncSeek for [] crate::Empty;
    impl AsyncRead for [] crate::Repeat;
    impl AsyncWrite for [] crate::Sink;
}
