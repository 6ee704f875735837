//! [`Chain`] and [`Take`]: reader adapters made by [`AsyncReadExt`](super::AsyncReadExt).

use crate::{AsyncBufRead, AsyncRead, ReadBuf};
use pin_project_lite::pin_project;
use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

pin_project! {
    /// Two readers one after the other, from
    /// [`AsyncReadExt::chain`](super::AsyncReadExt::chain).
    #[must_use = "streams do nothing unless polled"]
    pub struct Chain<T, U> {
        #[pin]
        first: T,
        #[pin]
        second: U,
        done_first: bool,
    }
}

impl<T, U> Chain<T, U>
where
    T: AsyncRead,
    U: AsyncRead,
{
    pub(super) fn new(first: T, second: U) -> Self {
        Chain {
            first,
            second,
            done_first: false,
        }
    }

    /// The two readers.
    pub fn get_ref(&self) -> (&T, &U) {
        (&self.first, &self.second)
    }

    /// The two readers, mutably. Reading from them directly may confuse the chain.
    pub fn get_mut(&mut self) -> (&mut T, &mut U) {
        (&mut self.first, &mut self.second)
    }

    /// The two pinned readers. Reading from them directly may confuse the chain.
    pub fn get_pin_mut(self: Pin<&mut Self>) -> (Pin<&mut T>, Pin<&mut U>) {
        let me = self.project();
        (me.first, me.second)
    }

    /// Takes the two readers back.
    pub fn into_inner(self) -> (T, U) {
        (self.first, self.second)
    }
}

impl<T: fmt::Debug, U: fmt::Debug> fmt::Debug for Chain<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chain")
            .field("t", &self.first)
            .field("u", &self.second)
            .finish()
    }
}

impl<T: AsyncRead, U: AsyncRead> AsyncRead for Chain<T, U> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.project();
        if !*me.done_first {
            let room = buf.remaining();
            ready!(me.first.poll_read(cx, buf))?;
            // Only a read with room that produced nothing is the first reader's end.
            if room == 0 || buf.remaining() != room {
                return Poll::Ready(Ok(()));
            }
            *me.done_first = true;
        }
        me.second.poll_read(cx, buf)
    }
}

impl<T: AsyncBufRead, U: AsyncBufRead> AsyncBufRead for Chain<T, U> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let me = self.project();
        if !*me.done_first {
            let chunk = ready!(me.first.poll_fill_buf(cx))?;
            if !chunk.is_empty() {
                return Poll::Ready(Ok(chunk));
            }
            *me.done_first = true;
        }
        me.second.poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let me = self.project();
        if *me.done_first {
            me.second.consume(amt)
        } else {
            me.first.consume(amt)
        }
    }
}

pin_project! {
    /// A reader cut off after a number of bytes, from
    /// [`AsyncReadExt::take`](super::AsyncReadExt::take).
    #[derive(Debug)]
    #[must_use = "streams do nothing unless you `.await` or poll them"]
    pub struct Take<R> {
        #[pin]
        inner: R,
        // What may still be read.
        limit_: u64,
    }
}

impl<R: AsyncRead> Take<R> {
    pub(super) fn new(inner: R, limit: u64) -> Self {
        Take { inner, limit_: limit }
    }

    /// How many more bytes may be read before this reader reports end of stream.
    pub fn limit(&self) -> u64 {
        self.limit_
    }

    /// Sets how many more bytes may be read.
    pub fn set_limit(&mut self, limit: u64) {
        self.limit_ = limit;
    }

    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader, mutably. Reading from it directly bypasses the limit.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The pinned inner reader. Reading from it directly bypasses the limit.
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut R> {
        self.project().inner
    }

    /// Takes the inner reader back.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: AsyncRead> AsyncRead for Take<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.limit_ == 0 {
            return Poll::Ready(Ok(()));
        }
        let me = self.project();
        let max = usize::try_from(*me.limit_).unwrap_or(usize::MAX);
        let n = {
            let mut sub = buf.take(max);
            let start = sub.filled().as_ptr();
            ready!(me.inner.poll_read(cx, &mut sub))?;
            // The inner reader must have filled the sub-buffer it was given.
            assert_eq!(sub.filled().as_ptr(), start);
            sub.filled().len()
        };
        // SAFETY: the inner reader filled (so initialized) the first `n` bytes of the
        // sub-buffer, which are the first `n` unfilled bytes of `buf`.
        unsafe { buf.assume_init(n) };
        buf.advance(n);
        *me.limit_ -= n as u64;
        Poll::Ready(Ok(()))
    }
}

impl<R: AsyncBufRead> AsyncBufRead for Take<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let me = self.project();
        if *me.limit_ == 0 {
            return Poll::Ready(Ok(&[]));
        }
        let chunk = ready!(me.inner.poll_fill_buf(cx))?;
        let len = (chunk.len() as u64).min(*me.limit_) as usize;
        Poll::Ready(Ok(&chunk[..len]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let me = self.project();
        let amt = (amt as u64).min(*me.limit_) as usize;
        *me.limit_ -= amt as u64;
        me.inner.consume(amt);
    }
}
