//! The [`AsyncRead`] trait and its impls for std types.

use crate::ReadBuf;
use std::io;
use std::ops::DerefMut;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A source of bytes that can be read without blocking the thread.
///
/// `poll_read` either puts bytes into the unfilled part of `buf` and returns
/// `Ready(Ok(()))`, or returns `Pending` after arranging for the task to be woken when
/// reading may make progress. A ready read that filled nothing means end of stream
/// (unless `buf` had no room). This is the poll-based counterpart of
/// [`std::io::Read`]; the methods most code calls are in
/// [`AsyncReadExt`](crate::AsyncReadExt).
pub trait AsyncRead {
    /// Tries to read bytes into `buf`.
    ///
    /// On `Ready(Ok(()))` the bytes read are the growth of `buf.filled()`; no growth
    /// means end of stream. On `Pending` the task will be woken once the source may be
    /// readable again.
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>>;
}

macro_rules! forward_read {
    () => {
        fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut **self).poll_read(cx, buf)
        }
    };
}

impl<T: ?Sized + AsyncRead + Unpin> AsyncRead for Box<T> {
    forward_read!();
}

impl<T: ?Sized + AsyncRead + Unpin> AsyncRead for &mut T {
    forward_read!();
}

impl<P> AsyncRead for Pin<P>
where
    P: DerefMut,
    P::Target: AsyncRead,
{
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.as_deref_mut().poll_read(cx, buf)
    }
}

impl AsyncRead for &[u8] {
    #[inline]
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let n = self.len().min(buf.remaining());
        let (head, tail) = self.split_at(n);
        buf.put_slice(head);
        *self = tail;
        Poll::Ready(Ok(()))
    }
}

impl<T: AsRef<[u8]> + Unpin> AsyncRead for io::Cursor<T> {
    #[inline]
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let pos = self.position();
        let data = self.get_ref().as_ref();
        // A position past the end reads nothing rather than panicking.
        if pos >= data.len() as u64 {
            return Poll::Ready(Ok(()));
        }
        let start = pos as usize;
        let n = (data.len() - start).min(buf.remaining());
        buf.put_slice(&data[start..start + n]);
        self.set_position((start + n) as u64);
        Poll::Ready(Ok(()))
    }
}
