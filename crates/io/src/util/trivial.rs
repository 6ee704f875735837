//! The trivial streams: [`empty`], [`repeat`] and [`sink`]. Each operation on them
//! completes at once and spends one unit of the task's cooperative budget, so a loop
//! over one still yields to the event loop.

use super::spend_budget;
use crate::{AsyncBufRead, AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use bytes::BufMut;
use std::fmt;
use std::io::{self, IoSlice, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// A stream that is always at its end and swallows every write; made by [`empty`].
pub struct Empty {
    _p: (),
}

/// A stream that is always at its end when read and takes (and drops) every byte
/// written to it.
///
/// ```
/// use netloop_io::AsyncReadExt;
///
/// futures::executor::block_on(async {
///     let mut buf = String::new();
///     netloop_io::empty().read_to_string(&mut buf).await.unwrap();
///     assert!(buf.is_empty());
/// });
/// ```
pub fn empty() -> Empty {
    Empty { _p: () }
}

impl AsyncRead for Empty {
    #[inline]
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, _: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(()))
    }
}

impl AsyncBufRead for Empty {
    #[inline]
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(&[]))
    }

    #[inline]
    fn consume(self: Pin<&mut Self>, _: usize) {}
}

impl AsyncWrite for Empty {
    #[inline]
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(buf.len()))
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn is_write_vectored(&self) -> bool {
        true
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()))
    }
}

impl AsyncSeek for Empty {
    #[inline]
    fn start_seek(self: Pin<&mut Self>, _position: SeekFrom) -> io::Result<()> {
        Ok(())
    }

    #[inline]
    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(0))
    }
}

impl fmt::Debug for Empty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Empty { .. }")
    }
}

/// A reader that yields one byte over and over, without end; made by [`repeat`].
#[derive(Debug)]
pub struct Repeat {
    byte: u8,
}

/// A reader that fills every read with `byte`, forever.
///
/// ```
/// use netloop_io::AsyncReadExt;
///
/// futures::executor::block_on(async {
///     let mut buf = [0u8; 3];
///     netloop_io::repeat(b'z').read_exact(&mut buf).await.unwrap();
///     assert_eq!(&buf, b"zzz");
/// });
/// ```
pub fn repeat(byte: u8) -> Repeat {
    Repeat { byte }
}

impl AsyncRead for Repeat {
    #[inline]
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        ready!(spend_budget(cx));
        let n = buf.remaining();
        buf.put_bytes(self.byte, n);
        Poll::Ready(Ok(()))
    }
}

/// A writer that takes every byte and drops it; made by [`sink`].
pub struct Sink {
    _p: (),
}

/// A writer that reports every write as complete and keeps nothing.
///
/// ```
/// use netloop_io::AsyncWriteExt;
///
/// futures::executor::block_on(async {
///     let n = netloop_io::sink().write(b"gone").await.unwrap();
///     assert_eq!(n, 4);
/// });
/// ```
pub fn sink() -> Sink {
    Sink { _p: () }
}

impl AsyncWrite for Sink {
    #[inline]
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(buf.len()))
    }

    #[inline]
    fn is_write_vectored(&self) -> bool {
        true
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()))
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(()))
    }
}

impl fmt::Debug for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Sink { .. }")
    }
}
