//! [`BufWriter`]: an [`AsyncWrite`] with a write buffer in front of it.

use super::DEFAULT_BUF_SIZE;
use crate::{AsyncBufRead, AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use pin_project_lite::pin_project;
use std::fmt;
use std::io::{self, IoSlice, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

pin_project! {
    /// Adds a buffer to a writer, so that many small writes cost one write of the
    /// inner writer per buffer's worth.
    ///
    /// Writes at least as large as the buffer skip it. The buffer is written out by
    /// `flush` and `shutdown`; **dropping a `BufWriter` loses what is still buffered**, so
    /// call [`flush`](crate::AsyncWriteExt::flush) or
    /// [`shutdown`](crate::AsyncWriteExt::shutdown) before.
    ///
    /// ```
    /// use netloop_io::{AsyncWriteExt, BufWriter};
    ///
    /// futures::executor::block_on(async {
    ///     let mut w = BufWriter::new(Vec::new());
    ///     w.write_all(b"hi").await.unwrap();
    ///     assert!(w.get_ref().is_empty());
    ///     w.flush().await.unwrap();
    ///     assert_eq!(w.get_ref(), b"hi");
    /// });
    /// ```
    pub struct BufWriter<W> {
        #[pin]
        pub(super) inner: W,
        pub(super) buf: Vec<u8>,
        // How much of `buf` a flush in progress has written already.
        pub(super) written: usize,
        pub(super) seek_state: SeekState,
    }
}

impl<W: AsyncWrite> BufWriter<W> {
    /// Wraps `inner` with an 8 KiB buffer.
    pub fn new(inner: W) -> Self {
        Self::with_capacity(DEFAULT_BUF_SIZE, inner)
    }

    /// Wraps `inner` with a buffer of `cap` bytes.
    pub fn with_capacity(cap: usize, inner: W) -> Self {
        BufWriter {
            inner,
            buf: Vec::with_capacity(cap),
            written: 0,
            seek_state: SeekState::Init,
        }
    }

    /// Writes the buffer out to the inner writer (without flushing the inner writer).
    /// On an error, whatever was written is removed from the buffer and the rest stays.
    fn flush_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut me = self.project();
        let mut res = Ok(());
        while *me.written < me.buf.len() {
            match ready!(me.inner.as_mut().poll_write(cx, &me.buf[*me.written..])) {
                Ok(0) => {
                    res = Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "failed to write the buffered data",
                    ));
                    break;
                }
                Ok(n) => *me.written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    res = Err(e);
                    break;
                }
            }
        }
        if *me.written > 0 {
            me.buf.drain(..*me.written);
        }
        *me.written = 0;
        Poll::Ready(res)
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer, mutably. Writing to it directly may reorder bytes with the
    /// buffered ones.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The pinned inner writer. Writing to it directly may reorder bytes with the
    /// buffered ones.
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut W> {
        self.project().inner
    }

    /// Takes the inner writer back; buffered bytes are lost.
    pub fn into_inner(self) -> W {
        self.inner
    }

    /// The bytes buffered and not written out yet.
    pub fn buffer(&self) -> &[u8] {
        &self.buf
    }
}

impl<W: AsyncWrite> AsyncWrite for BufWriter<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.buf.len() + buf.len() > self.buf.capacity() {
            ready!(self.as_mut().flush_buf(cx))?;
        }
        let me = self.project();
        if buf.len() >= me.buf.capacity() {
            me.inner.poll_write(cx, buf)
        } else {
            me.buf.extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.inner.is_write_vectored() {
            let total = bufs.iter().fold(0usize, |n, b| n.saturating_add(b.len()));
            if total > self.buf.capacity() - self.buf.len() {
                ready!(self.as_mut().flush_buf(cx))?;
            }
            let me = self.as_mut().project();
            if total >= me.buf.capacity() {
                // Too big to buffer: hand the slices on as they are.
                return me.inner.poll_write_vectored(cx, bufs);
            }
            for b in bufs {
                me.buf.extend_from_slice(b);
            }
            return Poll::Ready(Ok(total));
        }

        // The inner writer writes one slice at a time: gather as many whole slices as
        // fit into the buffer.
        while bufs.first().is_some_and(|b| b.is_empty()) {
            bufs = &bufs[1..];
        }
        let Some(first) = bufs.first() else {
            return Poll::Ready(Ok(0));
        };
        let first_len = first.len();
        if first_len > self.buf.capacity() - self.buf.len() {
            ready!(self.as_mut().flush_buf(cx))?;
            debug_assert!(self.buf.is_empty());
        }
        let me = self.as_mut().project();
        if first_len >= me.buf.capacity() {
            debug_assert!(me.buf.is_empty());
            return me.inner.poll_write(cx, &bufs[0]);
        }
        me.buf.extend_from_slice(&bufs[0]);
        let mut total = first_len;
        for b in &bufs[1..] {
            if b.len() > me.buf.capacity() - me.buf.len() {
                break;
            }
            me.buf.extend_from_slice(b);
            total += b.len();
        }
        Poll::Ready(Ok(total))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.as_mut().flush_buf(cx))?;
        self.get_pin_mut().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.as_mut().flush_buf(cx))?;
        self.get_pin_mut().poll_shutdown(cx)
    }
}

/// Where a `BufWriter`'s seek is.
#[derive(Debug, Clone, Copy)]
pub(super) enum SeekState {
    /// No seek requested.
    Init,
    /// `start_seek` was called; the buffer must be written out before the inner seek.
    Start(SeekFrom),
    /// The inner writer's seek is in flight.
    Pending,
}

impl<W: AsyncWrite + AsyncSeek> AsyncSeek for BufWriter<W> {
    /// Requests a seek; the buffer is written out before the inner writer seeks.
    fn start_seek(self: Pin<&mut Self>, pos: SeekFrom) -> io::Result<()> {
        *self.project().seek_state = SeekState::Start(pos);
        Ok(())
    }

    fn poll_complete(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let start = match self.seek_state {
            SeekState::Init => return self.project().inner.poll_complete(cx),
            SeekState::Start(pos) => Some(pos),
            SeekState::Pending => None,
        };
        ready!(self.as_mut().flush_buf(cx))?;
        let mut me = self.project();
        if let Some(pos) = start {
            // Let a seek of the inner writer that is still in flight finish first.
            ready!(me.inner.as_mut().poll_complete(cx))?;
            if let Err(e) = me.inner.as_mut().start_seek(pos) {
                *me.seek_state = SeekState::Init;
                return Poll::Ready(Err(e));
            }
        }
        match me.inner.poll_complete(cx) {
            Poll::Ready(res) => {
                *me.seek_state = SeekState::Init;
                Poll::Ready(res)
            }
            Poll::Pending => {
                *me.seek_state = SeekState::Pending;
                Poll::Pending
            }
        }
    }
}

impl<W: AsyncWrite + AsyncRead> AsyncRead for BufWriter<W> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.get_pin_mut().poll_read(cx, buf)
    }
}

impl<W: AsyncWrite + AsyncBufRead> AsyncBufRead for BufWriter<W> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.get_pin_mut().poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_pin_mut().consume(amt)
    }
}

impl<W: fmt::Debug> fmt::Debug for BufWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufWriter")
            .field("writer", &self.inner)
            .field("buffer", &format_args!("{}/{}", self.buf.len(), self.buf.capacity()))
            .field("written", &self.written)
            .finish()
    }
}
