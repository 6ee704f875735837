//! `copy`, and the buffer it shares with `copy_bidirectional`.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// One direction of a copy: a buffer that a reader fills and a writer drains, with the
/// bytes written so far.
///
/// Invariants: `pos <= cap <= buf.len()`; `buf[pos..cap]` is read and not yet written;
/// `need_flush` is set once a write happened since the last flush; `read_done` once the
/// reader gave end of file.
#[derive(Debug)]
pub(super) struct CopyBuffer {
    read_done: bool,
    need_flush: bool,
    pos: usize,
    cap: usize,
    amt: u64,
    buf: Box<[u8]>,
}

impl CopyBuffer {
    pub(super) fn new(size: usize) -> CopyBuffer {
        CopyBuffer {
            read_done: false,
            need_flush: false,
            pos: 0,
            cap: 0,
            amt: 0,
            buf: vec![0; size].into_boxed_slice(),
        }
    }

    /// Reads into the free tail of the buffer.
    fn poll_fill<R: AsyncRead + ?Sized>(
        &mut self,
        cx: &mut Context<'_>,
        mut reader: Pin<&mut R>,
    ) -> Poll<io::Result<()>> {
        let mut buf = ReadBuf::new(&mut self.buf);
        buf.set_filled(self.cap);
        loop {
            match ready!(reader.as_mut().poll_read(cx, &mut buf)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Poll::Ready(Err(e)),
                Ok(()) => break,
            }
        }
        let filled = buf.filled().len();
        // Nothing added: end of file.
        self.read_done = filled == self.cap;
        self.cap = filled;
        Poll::Ready(Ok(()))
    }

    /// Writes some of `buf[pos..cap]`. While the writer waits, reads more into the
    /// free tail, so the next write can be larger.
    fn poll_write_some<R, W>(
        &mut self,
        cx: &mut Context<'_>,
        mut reader: Pin<&mut R>,
        mut writer: Pin<&mut W>,
    ) -> Poll<io::Result<usize>>
    where
        R: AsyncRead + ?Sized,
        W: AsyncWrite + ?Sized,
    {
        loop {
            match writer.as_mut().poll_write(cx, &self.buf[self.pos..self.cap]) {
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Poll::Pending => {
                    if !self.read_done && self.cap < self.buf.len() {
                        ready!(self.poll_fill(cx, reader.as_mut()))?;
                    }
                    return Poll::Pending;
                }
                done => return done,
            }
        }
    }

    /// Copies until the reader's end of file, then flushes; returns the bytes copied.
    ///
    /// The task's budget is spent by the reader and the writer themselves (netloop's
    /// sockets and in-memory pipes spend it), and one unit more per poll that made
    /// progress, so a copy between two always-ready ends still yields.
    pub(super) fn poll_copy<R, W>(
        &mut self,
        cx: &mut Context<'_>,
        mut reader: Pin<&mut R>,
        mut writer: Pin<&mut W>,
    ) -> Poll<io::Result<u64>>
    where
        R: AsyncRead + ?Sized,
        W: AsyncWrite + ?Sized,
    {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        loop {
            if self.cap < self.buf.len() && !self.read_done {
                match self.poll_fill(cx, reader.as_mut()) {
                    Poll::Ready(Ok(())) => coop.made_progress(),
                    Poll::Ready(Err(e)) => {
                        coop.made_progress();
                        return Poll::Ready(Err(e));
                    }
                    Poll::Pending => {
                        // Nothing left to write: flush what was written, then wait.
                        if self.pos == self.cap {
                            if self.need_flush {
                                ready!(writer.as_mut().poll_flush(cx))?;
                                coop.made_progress();
                                self.need_flush = false;
                            }
                            return Poll::Pending;
                        }
                    }
                }
            }
            while self.pos < self.cap {
                let n = ready!(self.poll_write_some(cx, reader.as_mut(), writer.as_mut()))?;
                coop.made_progress();
                if n == 0 {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "write zero byte into writer",
                    )));
                }
                self.pos += n;
                self.amt += n as u64;
                self.need_flush = true;
            }
            self.pos = 0;
            self.cap = 0;
            if self.read_done {
                ready!(writer.as_mut().poll_flush(cx))?;
                coop.made_progress();
                return Poll::Ready(Ok(self.amt));
            }
        }
    }
}

/// Copies everything `reader` gives until end of file into `writer`, then flushes it;
/// returns the number of bytes copied (tokio's `io::copy`). Uses an 8 KiB buffer.
///
/// An error from either side ends the copy with that error (the bytes copied so far
/// are lost to the caller, as with tokio). A writer that accepts zero bytes is a
/// `WriteZero` error.
///
/// ```
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut reader: &[u8] = b"hello";
/// let mut writer: Vec<u8> = Vec::new();
/// assert_eq!(netloop_net::io::copy(&mut reader, &mut writer).await?, 5);
/// assert_eq!(writer, b"hello");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn copy<'a, R, W>(reader: &'a mut R, writer: &'a mut W) -> io::Result<u64>
where
    R: AsyncRead + Unpin + ?Sized,
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut buf = CopyBuffer::new(super::DEFAULT_BUF_SIZE);
    poll_fn(|cx| buf.poll_copy(cx, Pin::new(&mut *reader), Pin::new(&mut *writer))).await
}
