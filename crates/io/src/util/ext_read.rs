//! [`AsyncReadExt`] and the futures its methods return.

use super::adapters::{Chain, Take};
use super::ext_buf_read::finish_string_read;
use super::ext_int::*;
use super::vec_buf::{ByteVec, PROBE, VecBuf};
use crate::AsyncRead;
use bytes::BufMut;
use pin_project_lite::pin_project;
use std::future::Future;
use std::io;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

macro_rules! int_readers {
    ($($(#[$doc:meta])* $name:ident -> $fut:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// Returns an [`UnexpectedEof`](std::io::ErrorKind::UnexpectedEof) error if the
        /// stream ends first. Not cancel safe: bytes already read are lost if the
        /// future is dropped early.
        fn $name(&mut self) -> $fut<&mut Self>
        where
            Self: Unpin,
        {
            $fut::new(self)
        }
    )*};
}

/// The methods that make an [`AsyncRead`] useful from `async` code: each returns a
/// future that performs one reading operation.
///
/// Implemented for every `AsyncRead`; bring it into scope with
/// `use netloop_io::AsyncReadExt`.
///
/// ```
/// use netloop_io::AsyncReadExt;
///
/// futures::executor::block_on(async {
///     let mut src: &[u8] = b"\x00\x2aend";
///     assert_eq!(src.read_u16().await.unwrap(), 42);
///     let mut rest = String::new();
///     src.read_to_string(&mut rest).await.unwrap();
///     assert_eq!(rest, "end");
/// });
/// ```
pub trait AsyncReadExt: AsyncRead {
    /// A reader that yields this reader's bytes until its end, then `next`'s.
    fn chain<R>(self, next: R) -> Chain<Self, R>
    where
        Self: Sized,
        R: AsyncRead,
    {
        Chain::new(self, next)
    }

    /// Reads some bytes into `buf`, returning how many (0 at end of stream or if `buf`
    /// is empty).
    ///
    /// Cancel safe: if the future is dropped before it completes, no data was read.
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> Read<'a, Self>
    where
        Self: Unpin,
    {
        Read {
            reader: self,
            buf,
            _pin: PhantomPinned,
        }
    }

    /// Reads some bytes into the spare room of a [`BufMut`] and advances it, returning
    /// how many (0 at end of stream or if `buf` has no room left).
    ///
    /// Cancel safe: if the future is dropped before it completes, no data was read.
    fn read_buf<'a, B>(&'a mut self, buf: &'a mut B) -> ReadBuf<'a, Self, B>
    where
        Self: Unpin,
        B: BufMut + ?Sized,
    {
        ReadBuf {
            reader: self,
            buf,
            _pin: PhantomPinned,
        }
    }

    /// Reads exactly `buf.len()` bytes, returning that length; fails with an
    /// [`UnexpectedEof`](std::io::ErrorKind::UnexpectedEof) error ("early eof") if the
    /// stream ends first.
    ///
    /// Not cancel safe: bytes already read are lost if the future is dropped early.
    fn read_exact<'a>(&'a mut self, buf: &'a mut [u8]) -> ReadExact<'a, Self>
    where
        Self: Unpin,
    {
        ReadExact {
            reader: self,
            buf: crate::ReadBuf::new(buf),
            _pin: PhantomPinned,
        }
    }

    int_readers! {
        /// Reads a `u8`.
        read_u8 -> ReadU8;
        /// Reads an `i8`.
        read_i8 -> ReadI8;
        /// Reads a big-endian `u16`.
        read_u16 -> ReadU16;
        /// Reads a big-endian `i16`.
        read_i16 -> ReadI16;
        /// Reads a big-endian `u32`.
        read_u32 -> ReadU32;
        /// Reads a big-endian `i32`.
        read_i32 -> ReadI32;
        /// Reads a big-endian `u64`.
        read_u64 -> ReadU64;
        /// Reads a big-endian `i64`.
        read_i64 -> ReadI64;
        /// Reads a big-endian `u128`.
        read_u128 -> ReadU128;
        /// Reads a big-endian `i128`.
        read_i128 -> ReadI128;
        /// Reads a big-endian IEEE 754 `f32`.
        read_f32 -> ReadF32;
        /// Reads a big-endian IEEE 754 `f64`.
        read_f64 -> ReadF64;
        /// Reads a little-endian `u16`.
        read_u16_le -> ReadU16Le;
        /// Reads a little-endian `i16`.
        read_i16_le -> ReadI16Le;
        /// Reads a little-endian `u32`.
        read_u32_le -> ReadU32Le;
        /// Reads a little-endian `i32`.
        read_i32_le -> ReadI32Le;
        /// Reads a little-endian `u64`.
        read_u64_le -> ReadU64Le;
        /// Reads a little-endian `i64`.
        read_i64_le -> ReadI64Le;
        /// Reads a little-endian `u128`.
        read_u128_le -> ReadU128Le;
        /// Reads a little-endian `i128`.
        read_i128_le -> ReadI128Le;
        /// Reads a little-endian IEEE 754 `f32`.
        read_f32_le -> ReadF32Le;
        /// Reads a little-endian IEEE 754 `f64`.
        read_f64_le -> ReadF64Le;
    }

    /// Reads until the end of the stream, appending everything to `buf`, and returns
    /// how many bytes were appended. On an error, the bytes read before it stay in
    /// `buf`.
    fn read_to_end<'a>(&'a mut self, buf: &'a mut Vec<u8>) -> ReadToEnd<'a, Self>
    where
        Self: Unpin,
    {
        ReadToEnd {
            reader: self,
            buf: VecBuf::new(buf),
            read: 0,
            _pin: PhantomPinned,
        }
    }

    /// Reads until the end of the stream, appending everything to `dst`, and returns
    /// how many bytes were appended. If the bytes are not UTF-8, fails with an
    /// [`InvalidData`](std::io::ErrorKind::InvalidData) error and leaves `dst` as it
    /// was.
    fn read_to_string<'a>(&'a mut self, dst: &'a mut String) -> ReadToString<'a, Self>
    where
        Self: Unpin,
    {
        let bytes = std::mem::take(dst).into_bytes();
        ReadToString {
            reader: self,
            output: dst,
            buf: VecBuf::new(bytes),
            read: 0,
            _pin: PhantomPinned,
        }
    }

    /// A reader that yields at most `limit` bytes of this one, then end of stream.
    fn take(self, limit: u64) -> Take<Self>
    where
        Self: Sized,
    {
        Take::new(self, limit)
    }
}

impl<R: AsyncRead + ?Sized> AsyncReadExt for R {}

pin_project! {
    /// The future of [`AsyncReadExt::read`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Read<'a, R: ?Sized> {
        reader: &'a mut R,
        buf: &'a mut [u8],
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<R: AsyncRead + Unpin + ?Sized> Future for Read<'_, R> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        let mut rb = crate::ReadBuf::new(me.buf);
        ready!(Pin::new(&mut **me.reader).poll_read(cx, &mut rb))?;
        Poll::Ready(Ok(rb.filled().len()))
    }
}

pin_project! {
    /// The future of [`AsyncReadExt::read_buf`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ReadBuf<'a, R: ?Sized, B: ?Sized> {
        reader: &'a mut R,
        buf: &'a mut B,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<R, B> Future for ReadBuf<'_, R, B>
where
    R: AsyncRead + Unpin + ?Sized,
    B: BufMut + ?Sized,
{
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        if !me.buf.has_remaining_mut() {
            return Poll::Ready(Ok(0));
        }
        let n = {
            let chunk = me.buf.chunk_mut();
            // SAFETY: the ReadBuf below never writes uninitialized bytes, and
            // `UninitSlice` makes no promise that its bytes are initialized, so viewing
            // it as `MaybeUninit<u8>` is sound.
            let dst = unsafe { chunk.as_uninit_slice_mut() };
            let mut rb = crate::ReadBuf::uninit(dst);
            let start = rb.filled().as_ptr();
            ready!(Pin::new(&mut **me.reader).poll_read(cx, &mut rb))?;
            // A reader that replaced the ReadBuf with another would make us advance
            // over bytes it never wrote.
            assert_eq!(start, rb.filled().as_ptr());
            rb.filled().len()
        };
        // SAFETY: the reader initialized the first `n` bytes of the chunk (they are the
        // ReadBuf's filled part, checked above to be this chunk).
        unsafe { me.buf.advance_mut(n) };
        Poll::Ready(Ok(n))
    }
}

pin_project! {
    /// The future of [`AsyncReadExt::read_exact`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ReadExact<'a, R: ?Sized> {
        reader: &'a mut R,
        buf: crate::ReadBuf<'a>,
        #[pin]
        _pin: PhantomPinned,
    }
}

fn early_eof() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "early eof")
}

impl<R: AsyncRead + Unpin + ?Sized> Future for ReadExact<'_, R> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        loop {
            let before = me.buf.remaining();
            if before == 0 {
                return Poll::Ready(Ok(me.buf.capacity()));
            }
            match ready!(Pin::new(&mut **me.reader).poll_read(cx, me.buf)) {
                Ok(()) if me.buf.remaining() == before => return Poll::Ready(Err(early_eof())),
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

pin_project! {
    /// The future of [`AsyncReadExt::read_to_end`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ReadToEnd<'a, R: ?Sized> {
        reader: &'a mut R,
        buf: VecBuf<&'a mut Vec<u8>>,
        read: usize,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<R: AsyncRead + Unpin + ?Sized> Future for ReadToEnd<'_, R> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        read_to_end_inner(me.buf, Pin::new(&mut **me.reader), me.read, cx)
    }
}

/// Reads into `buf` until end of stream; `total` counts across polls and is reset when
/// the result is returned.
pub(super) fn read_to_end_inner<V: ByteVec, R: AsyncRead + ?Sized>(
    buf: &mut VecBuf<V>,
    mut reader: Pin<&mut R>,
    total: &mut usize,
    cx: &mut Context<'_>,
) -> Poll<io::Result<usize>> {
    loop {
        match ready!(read_once(buf, reader.as_mut(), cx)) {
            Ok(0) => return Poll::Ready(Ok(std::mem::take(total))),
            Ok(n) => *total += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
    }
}

/// One read into the vector's spare room (grown by `PROBE` bytes when short), or,
/// while the caller's capacity is nearly used up and untouched, into a small stack
/// buffer whose bytes are then appended: so a vector sized exactly for the stream is
/// not grown just to see the end of it.
fn read_once<V: ByteVec, R: AsyncRead + ?Sized>(
    buf: &mut VecBuf<V>,
    reader: Pin<&mut R>,
    cx: &mut Context<'_>,
) -> Poll<io::Result<usize>> {
    if buf.probe_first() {
        let mut probe = [MaybeUninit::<u8>::uninit(); PROBE];
        let mut rb = crate::ReadBuf::uninit(&mut probe);
        let res = reader.poll_read(cx, &mut rb);
        let got = rb.filled();
        if !got.is_empty() {
            if buf.spare() < got.len() {
                buf.reserve(PROBE);
            }
            buf.push_slice(got);
        }
        let n = got.len();
        match res {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(n)),
            other => {
                debug_assert_eq!(n, 0);
                other.map_ok(|()| n)
            }
        }
    } else {
        buf.reserve(PROBE);
        buf.with_read_buf(|rb| {
            let before = rb.filled().len();
            let res = reader.poll_read(cx, rb);
            let n = rb.filled().len() - before;
            match res {
                Poll::Ready(Ok(())) => Poll::Ready(Ok(n)),
                other => {
                    debug_assert_eq!(n, 0);
                    other.map_ok(|()| n)
                }
            }
        })
    }
}

pin_project! {
    /// The future of [`AsyncReadExt::read_to_string`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ReadToString<'a, R: ?Sized> {
        reader: &'a mut R,
        // Empty while the read runs: its bytes are in `buf` until the end.
        output: &'a mut String,
        buf: VecBuf<Vec<u8>>,
        read: usize,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<R: AsyncRead + Unpin + ?Sized> Future for ReadToString<'_, R> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        let res = ready!(read_to_end_inner(me.buf, Pin::new(&mut **me.reader), me.read, cx));
        let bytes = me.buf.take_vec();
        debug_assert!(me.buf.is_empty());
        finish_string_read(res, String::from_utf8(bytes), *me.read, me.output, true)
    }
}
