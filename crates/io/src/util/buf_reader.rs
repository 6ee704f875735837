//! [`BufReader`]: an [`AsyncRead`] with a read buffer in front of it.

use super::DEFAULT_BUF_SIZE;
use crate::{AsyncBufRead, AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use pin_project_lite::pin_project;
use std::fmt;
use std::io::{self, IoSlice, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

pin_project! {
    /// Adds a buffer to a reader, so that many small reads (a byte, a line) cost one
    /// read of the inner reader per buffer's worth, and gives it [`AsyncBufRead`].
    ///
    /// Reads at least as large as the buffer skip it when it is empty. Dropping a
    /// `BufReader` loses the bytes buffered in it.
    ///
    /// ```
    /// use netloop_io::{AsyncBufReadExt, BufReader};
    ///
    /// futures::executor::block_on(async {
    ///     let mut r = BufReader::new(&b"hello\nworld"[..]);
    ///     let mut line = String::new();
    ///     r.read_line(&mut line).await.unwrap();
    ///     assert_eq!(line, "hello\n");
    ///     assert_eq!(r.buffer(), b"world");
    /// });
    /// ```
    pub struct BufReader<R> {
        #[pin]
        pub(super) inner: R,
        pub(super) buf: Box<[u8]>,
        // `buf[pos..cap]` is what has been read from `inner` and not consumed.
        pub(super) pos: usize,
        pub(super) cap: usize,
        pub(super) seek_state: SeekState,
    }
}

impl<R: AsyncRead> BufReader<R> {
    /// Wraps `inner` with an 8 KiB buffer.
    pub fn new(inner: R) -> Self {
        Self::with_capacity(DEFAULT_BUF_SIZE, inner)
    }

    /// Wraps `inner` with a buffer of `capacity` bytes.
    ///
    /// # Panics
    ///
    /// If `capacity` is zero.
    #[track_caller]
    pub fn with_capacity(capacity: usize, inner: R) -> Self {
        assert!(capacity > 0, "capacity must be greater than zero");
        BufReader {
            inner,
            buf: vec![0; capacity].into_boxed_slice(),
            pos: 0,
            cap: 0,
            seek_state: SeekState::Init,
        }
    }

    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader, mutably. Reading from it directly skips the buffer.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The pinned inner reader. Reading from it directly skips the buffer.
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut R> {
        self.project().inner
    }

    /// Takes the inner reader back; buffered bytes are lost.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The bytes buffered and not consumed yet.
    pub fn buffer(&self) -> &[u8] {
        &self.buf[self.pos..self.cap]
    }

    fn discard_buffer(self: Pin<&mut Self>) {
        let me = self.project();
        *me.pos = 0;
        *me.cap = 0;
    }
}

impl<R: AsyncRead> AsyncRead for BufReader<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        // Nothing buffered and the caller's buffer is at least as big as ours: read
        // straight into it.
        if self.pos == self.cap && buf.remaining() >= self.buf.len() {
            let res = ready!(self.as_mut().get_pin_mut().poll_read(cx, buf));
            self.discard_buffer();
            return Poll::Ready(res);
        }
        let avail = ready!(self.as_mut().poll_fill_buf(cx))?;
        let n = avail.len().min(buf.remaining());
        buf.put_slice(&avail[..n]);
        self.consume(n);
        Poll::Ready(Ok(()))
    }
}

impl<R: AsyncRead> AsyncBufRead for BufReader<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let me = self.project();
        if *me.pos >= *me.cap {
            debug_assert_eq!(*me.pos, *me.cap);
            let mut rb = ReadBuf::new(me.buf);
            ready!(me.inner.poll_read(cx, &mut rb))?;
            *me.cap = rb.filled().len();
            *me.pos = 0;
        }
        Poll::Ready(Ok(&me.buf[*me.pos..*me.cap]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let me = self.project();
        *me.pos = (*me.pos + amt).min(*me.cap);
    }
}

/// Where a `BufReader`'s seek is.
#[derive(Debug, Clone, Copy)]
pub(super) enum SeekState {
    /// No seek requested.
    Init,
    /// `start_seek` was called; nothing sent to the inner reader yet.
    Start(SeekFrom),
    /// A relative seek too far back for one `Current` offset: the inner reader is being
    /// moved back over the buffered bytes first; the `i64` is the seek still to do.
    PendingOverflowed(i64),
    /// The inner reader's seek is in flight.
    Pending,
}

impl<R: AsyncRead + AsyncSeek> AsyncSeek for BufReader<R> {
    /// Requests a seek; a `SeekFrom::Current` offset counts from the position of the
    /// next byte this reader returns, not from the inner reader's position. The buffer
    /// is dropped once the seek completes.
    fn start_seek(self: Pin<&mut Self>, pos: SeekFrom) -> io::Result<()> {
        *self.project().seek_state = SeekState::Start(pos);
        Ok(())
    }

    fn poll_complete(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let state = std::mem::replace(self.as_mut().project().seek_state, SeekState::Init);
        let res = match state {
            SeekState::Init => return self.get_pin_mut().poll_complete(cx),
            SeekState::Start(SeekFrom::Current(n)) => {
                // The inner reader is `buffered` bytes ahead of our position.
                let buffered = (self.cap - self.pos) as i64;
                match n.checked_sub(buffered) {
                    Some(offset) => {
                        self.as_mut().get_pin_mut().start_seek(SeekFrom::Current(offset))?;
                    }
                    None => {
                        // `n - buffered` overflows: seek back over the buffer first,
                        // then by `n`.
                        self.as_mut().get_pin_mut().start_seek(SeekFrom::Current(-buffered))?;
                        if self.as_mut().get_pin_mut().poll_complete(cx)?.is_pending() {
                            *self.as_mut().project().seek_state = SeekState::PendingOverflowed(n);
                            return Poll::Pending;
                        }
                        self.as_mut().discard_buffer();
                        self.as_mut().get_pin_mut().start_seek(SeekFrom::Current(n))?;
                    }
                }
                self.as_mut().get_pin_mut().poll_complete(cx)?
            }
            SeekState::PendingOverflowed(n) => {
                if self.as_mut().get_pin_mut().poll_complete(cx)?.is_pending() {
                    *self.as_mut().project().seek_state = SeekState::PendingOverflowed(n);
                    return Poll::Pending;
                }
                self.as_mut().discard_buffer();
                self.as_mut().get_pin_mut().start_seek(SeekFrom::Current(n))?;
                self.as_mut().get_pin_mut().poll_complete(cx)?
            }
            SeekState::Start(pos) => {
                self.as_mut().get_pin_mut().start_seek(pos)?;
                self.as_mut().get_pin_mut().poll_complete(cx)?
            }
            SeekState::Pending => self.as_mut().get_pin_mut().poll_complete(cx)?,
        };
        match res {
            Poll::Ready(at) => {
                self.discard_buffer();
                Poll::Ready(Ok(at))
            }
            Poll::Pending => {
                *self.as_mut().project().seek_state = SeekState::Pending;
                Poll::Pending
            }
        }
    }
}

impl<R: AsyncRead + AsyncWrite> AsyncWrite for BufReader<R> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_pin_mut().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_pin_mut().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_pin_mut().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_pin_mut().poll_shutdown(cx)
    }
}

impl<R: fmt::Debug> fmt::Debug for BufReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufReader")
            .field("reader", &self.inner)
            .field("buffer", &format_args!("{}/{}", self.cap - self.pos, self.buf.len()))
            .finish()
    }
}
