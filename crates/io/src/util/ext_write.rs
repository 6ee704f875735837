//! [`AsyncWriteExt`] and the futures its methods return.

use super::ext_int::*;
use crate::AsyncWrite;
use bytes::Buf;
use pin_project_lite::pin_project;
use std::future::Future;
use std::io::{self, IoSlice};
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// At most this many chunks of a `Buf` go into one vectored write.
const MAX_IOVECS: usize = 64;

macro_rules! int_writers {
    ($($(#[$doc:meta])* $name:ident($ty:ty) -> $fut:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// Not cancel safe: if the future is dropped early, part of the value may have
        /// been written.
        fn $name(&mut self, n: $ty) -> $fut<&mut Self>
        where
            Self: Unpin,
        {
            $fut::new(self, n)
        }
    )*};
}

/// The methods that make an [`AsyncWrite`] useful from `async` code: each returns a
/// future that performs one writing operation.
///
/// Implemented for every `AsyncWrite`; bring it into scope with
/// `use netloop_io::AsyncWriteExt`.
///
/// ```
/// use netloop_io::AsyncWriteExt;
///
/// futures::executor::block_on(async {
///     let mut out = Vec::new();
///     out.write_u16(42).await.unwrap();
///     out.write_all(b"end").await.unwrap();
///     out.flush().await.unwrap();
///     assert_eq!(out, b"\x00\x2aend");
/// });
/// ```
pub trait AsyncWriteExt: AsyncWrite {
    /// Writes some of `src`, returning how many bytes were taken.
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was written.
    fn write<'a>(&'a mut self, src: &'a [u8]) -> Write<'a, Self>
    where
        Self: Unpin,
    {
        Write {
            writer: self,
            buf: src,
            _pin: PhantomPinned,
        }
    }

    /// Writes some of the bytes of `bufs`, in order, returning how many were taken.
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was written.
    fn write_vectored<'a, 'b>(&'a mut self, bufs: &'a [IoSlice<'b>]) -> WriteVectored<'a, 'b, Self>
    where
        Self: Unpin,
    {
        WriteVectored {
            writer: self,
            bufs,
            _pin: PhantomPinned,
        }
    }

    /// Writes some of the remaining bytes of a [`Buf`] (several chunks at once if the
    /// writer is vectored) and advances it past them, returning how many.
    ///
    /// Cancel safe: if the future is dropped before it completes, nothing was written.
    fn write_buf<'a, B>(&'a mut self, src: &'a mut B) -> WriteBuf<'a, Self, B>
    where
        Self: Sized + Unpin,
        B: Buf,
    {
        WriteBuf {
            writer: self,
            buf: src,
            _pin: PhantomPinned,
        }
    }

    /// Writes every remaining byte of a [`Buf`], advancing it as bytes are taken.
    ///
    /// Cancel safe in the sense that the `Buf` is advanced past exactly what was
    /// written, so the call can be retried with the same `Buf`.
    fn write_all_buf<'a, B>(&'a mut self, src: &'a mut B) -> WriteAllBuf<'a, Self, B>
    where
        Self: Sized + Unpin,
        B: Buf,
    {
        WriteAllBuf {
            writer: self,
            buf: src,
            _pin: PhantomPinned,
        }
    }

    /// Writes all of `src`; fails with a [`WriteZero`](std::io::ErrorKind::WriteZero)
    /// error if the writer stops taking bytes.
    ///
    /// Not cancel safe: if the future is dropped early, part of `src` may have been
    /// written.
    fn write_all<'a>(&'a mut self, src: &'a [u8]) -> WriteAll<'a, Self>
    where
        Self: Unpin,
    {
        WriteAll {
            writer: self,
            buf: src,
            _pin: PhantomPinned,
        }
    }

    int_writers! {
        /// Writes a `u8`.
        write_u8(u8) -> WriteU8;
        /// Writes an `i8`.
        write_i8(i8) -> WriteI8;
        /// Writes a big-endian `u16`.
        write_u16(u16) -> WriteU16;
        /// Writes a big-endian `i16`.
        write_i16(i16) -> WriteI16;
        /// Writes a big-endian `u32`.
        write_u32(u32) -> WriteU32;
        /// Writes a big-endian `i32`.
        write_i32(i32) -> WriteI32;
        /// Writes a big-endian `u64`.
        write_u64(u64) -> WriteU64;
        /// Writes a big-endian `i64`.
        write_i64(i64) -> WriteI64;
        /// Writes a big-endian `u128`.
        write_u128(u128) -> WriteU128;
        /// Writes a big-endian `i128`.
        write_i128(i128) -> WriteI128;
        /// Writes a big-endian IEEE 754 `f32`.
        write_f32(f32) -> WriteF32;
        /// Writes a big-endian IEEE 754 `f64`.
        write_f64(f64) -> WriteF64;
        /// Writes a little-endian `u16`.
        write_u16_le(u16) -> WriteU16Le;
        /// Writes a little-endian `i16`.
        write_i16_le(i16) -> WriteI16Le;
        /// Writes a little-endian `u32`.
        write_u32_le(u32) -> WriteU32Le;
        /// Writes a little-endian `i32`.
        write_i32_le(i32) -> WriteI32Le;
        /// Writes a little-endian `u64`.
        write_u64_le(u64) -> WriteU64Le;
        /// Writes a little-endian `i64`.
        write_i64_le(i64) -> WriteI64Le;
        /// Writes a little-endian `u128`.
        write_u128_le(u128) -> WriteU128Le;
        /// Writes a little-endian `i128`.
        write_i128_le(i128) -> WriteI128Le;
        /// Writes a little-endian IEEE 754 `f32`.
        write_f32_le(f32) -> WriteF32Le;
        /// Writes a little-endian IEEE 754 `f64`.
        write_f64_le(f64) -> WriteF64Le;
    }

    /// Pushes buffered bytes to their destination.
    fn flush(&mut self) -> Flush<'_, Self>
    where
        Self: Unpin,
    {
        Flush {
            writer: self,
            _pin: PhantomPinned,
        }
    }

    /// Flushes and closes the writing side (see
    /// [`AsyncWrite::poll_shutdown`]).
    fn shutdown(&mut self) -> Shutdown<'_, Self>
    where
        Self: Unpin,
    {
        Shutdown {
            writer: self,
            _pin: PhantomPinned,
        }
    }
}

impl<W: AsyncWrite + ?Sized> AsyncWriteExt for W {}

pin_project! {
    /// The future of [`AsyncWriteExt::write`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Write<'a, W: ?Sized> {
        writer: &'a mut W,
        buf: &'a [u8],
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<W: AsyncWrite + Unpin + ?Sized> Future for Write<'_, W> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        Pin::new(&mut **me.writer).poll_write(cx, me.buf)
    }
}

pin_project! {
    /// The future of [`AsyncWriteExt::write_vectored`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct WriteVectored<'a, 'b, W: ?Sized> {
        writer: &'a mut W,
        bufs: &'a [IoSlice<'b>],
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<W: AsyncWrite + Unpin + ?Sized> Future for WriteVectored<'_, '_, W> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        Pin::new(&mut **me.writer).poll_write_vectored(cx, me.bufs)
    }
}

/// One write of `buf`'s next bytes: vectored over up to `MAX_IOVECS` chunks when the
/// writer says that pays, else the first chunk.
fn poll_write_from<W: AsyncWrite + Unpin, B: Buf>(
    writer: &mut W,
    buf: &B,
    cx: &mut Context<'_>,
) -> Poll<io::Result<usize>> {
    if writer.is_write_vectored() {
        let mut slices = [IoSlice::new(&[]); MAX_IOVECS];
        let count = buf.chunks_vectored(&mut slices);
        Pin::new(writer).poll_write_vectored(cx, &slices[..count])
    } else {
        Pin::new(writer).poll_write(cx, buf.chunk())
    }
}

pin_project! {
    /// The future of [`AsyncWriteExt::write_buf`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct WriteBuf<'a, W, B> {
        writer: &'a mut W,
        buf: &'a mut B,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<W: AsyncWrite + Unpin, B: Buf> Future for WriteBuf<'_, W, B> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        if !me.buf.has_remaining() {
            return Poll::Ready(Ok(0));
        }
        let n = ready!(poll_write_from(&mut **me.writer, &**me.buf, cx))?;
        me.buf.advance(n);
        Poll::Ready(Ok(n))
    }
}

pin_project! {
    /// The future of [`AsyncWriteExt::write_all_buf`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct WriteAllBuf<'a, W, B> {
        writer: &'a mut W,
        buf: &'a mut B,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<W: AsyncWrite + Unpin, B: Buf> Future for WriteAllBuf<'_, W, B> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.project();
        while me.buf.has_remaining() {
            match ready!(poll_write_from(&mut **me.writer, &**me.buf, cx)) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(n) => me.buf.advance(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }
}

pin_project! {
    /// The future of [`AsyncWriteExt::write_all`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct WriteAll<'a, W: ?Sized> {
        writer: &'a mut W,
        buf: &'a [u8],
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<W: AsyncWrite + Unpin + ?Sized> Future for WriteAll<'_, W> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.project();
        while !me.buf.is_empty() {
            match ready!(Pin::new(&mut **me.writer).poll_write(cx, me.buf)) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(n) => *me.buf = &me.buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }
}

pin_project! {
    /// The future of [`AsyncWriteExt::flush`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Flush<'a, W: ?Sized> {
        writer: &'a mut W,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<W: AsyncWrite + Unpin + ?Sized> Future for Flush<'_, W> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut **self.project().writer).poll_flush(cx)
    }
}

pin_project! {
    /// The future of [`AsyncWriteExt::shutdown`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Shutdown<'a, W: ?Sized> {
        writer: &'a mut W,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<W: AsyncWrite + Unpin + ?Sized> Future for Shutdown<'_, W> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut **self.project().writer).poll_shutdown(cx)
    }
}
