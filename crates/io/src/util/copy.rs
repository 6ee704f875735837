//! [`copy`], [`copy_buf`], [`copy_bidirectional`] and
//! [`copy_bidirectional_with_sizes`].

use super::DEFAULT_BUF_SIZE;
use crate::{AsyncBufRead, AsyncRead, AsyncWrite, ReadBuf};
use netloop_reactor::coop;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// The buffer and progress of one direction of a copy.
///
/// Reading and writing overlap: while the writer is not ready, the buffer is topped up
/// from the reader, and while the reader is not ready, what was written is flushed.
#[derive(Debug)]
pub(super) struct CopyBuffer {
    /// The reader returned end of stream.
    read_done: bool,
    /// Bytes were written since the last flush.
    need_flush: bool,
    /// `buf[pos..cap]` has been read and not written yet.
    pos: usize,
    cap: usize,
    /// Bytes written in all.
    amt: u64,
    buf: Box<[u8]>,
}

impl CopyBuffer {
    pub(super) fn new(size: usize) -> Self {
        CopyBuffer {
            read_done: false,
            need_flush: false,
            pos: 0,
            cap: 0,
            amt: 0,
            buf: vec![0; size].into_boxed_slice(),
        }
    }

    /// Reads into the free tail of the buffer (`cap..`); an empty read marks the end.
    fn poll_fill<R: AsyncRead + ?Sized>(
        &mut self,
        cx: &mut Context<'_>,
        mut reader: Pin<&mut R>,
    ) -> Poll<io::Result<()>> {
        let mut rb = ReadBuf::new(&mut self.buf);
        rb.set_filled(self.cap);
        let res = loop {
            match reader.as_mut().poll_read(cx, &mut rb) {
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other,
            }
        };
        if let Poll::Ready(Ok(())) = res {
            let filled = rb.filled().len();
            self.read_done = filled == self.cap;
            self.cap = filled;
        }
        res
    }

    /// Writes from `pos..cap`; if the writer is not ready, uses the wait to read more
    /// into the buffer's free tail.
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
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Poll::Pending => {
                    if !self.read_done && self.cap < self.buf.len() {
                        ready!(self.poll_fill(cx, reader.as_mut()))?;
                    }
                    return Poll::Pending;
                }
                other => return other,
            }
        }
    }

    /// Copies until the reader's end, then flushes the writer; returns the total.
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
        let budget = ready!(coop::poll_proceed(cx));
        loop {
            if self.cap < self.buf.len() && !self.read_done {
                match self.poll_fill(cx, reader.as_mut()) {
                    Poll::Ready(Ok(())) => budget.made_progress(),
                    Poll::Ready(Err(e)) => {
                        budget.made_progress();
                        return Poll::Ready(Err(e));
                    }
                    Poll::Pending => {
                        // Nothing left to write: flush what was written while waiting
                        // for the reader.
                        if self.pos == self.cap {
                            if self.need_flush {
                                ready!(writer.as_mut().poll_flush(cx))?;
                                budget.made_progress();
                                self.need_flush = false;
                            }
                            return Poll::Pending;
                        }
                    }
                }
            }

            while self.pos < self.cap {
                let n = ready!(self.poll_write_some(cx, reader.as_mut(), writer.as_mut()))?;
                budget.made_progress();
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
            debug_assert!(self.pos <= self.cap, "writer returned length larger than input slice");

            // Everything read was written: start over at the front of the buffer.
            self.pos = 0;
            self.cap = 0;

            if self.read_done {
                ready!(writer.as_mut().poll_flush(cx))?;
                budget.made_progress();
                return Poll::Ready(Ok(self.amt));
            }
        }
    }
}

/// Copies everything `reader` yields into `writer`, then flushes `writer`; returns how
/// many bytes were copied.
///
/// Uses an 8 KiB buffer of its own; [`copy_buf`] copies out of an
/// [`AsyncBufRead`]'s buffer instead. Reads and writes overlap: while the writer is
/// busy the buffer is refilled, and while the reader has nothing the writer is flushed.
/// On an error, bytes already read but not written are lost.
///
/// Not cancel safe: bytes read but not yet written are lost if the future is dropped.
///
/// ```
/// futures::executor::block_on(async {
///     let mut src: &[u8] = b"hello";
///     let mut dst = Vec::new();
///     assert_eq!(netloop_io::copy(&mut src, &mut dst).await.unwrap(), 5);
///     assert_eq!(dst, b"hello");
/// });
/// ```
pub async fn copy<'a, R, W>(reader: &'a mut R, writer: &'a mut W) -> io::Result<u64>
where
    R: AsyncRead + Unpin + ?Sized,
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut buf = CopyBuffer::new(DEFAULT_BUF_SIZE);
    poll_fn(|cx| buf.poll_copy(cx, Pin::new(&mut *reader), Pin::new(&mut *writer))).await
}

/// Copies everything a buffered reader yields into `writer`, straight out of the
/// reader's buffer, then flushes `writer`; returns how many bytes were copied.
///
/// Not cancel safe in general, though no byte is consumed from the reader before the
/// writer has taken it.
///
/// ```
/// futures::executor::block_on(async {
///     let mut src: &[u8] = b"hello";
///     let mut dst = Vec::new();
///     assert_eq!(netloop_io::copy_buf(&mut src, &mut dst).await.unwrap(), 5);
///     assert_eq!(dst, b"hello");
/// });
/// ```
pub async fn copy_buf<'a, R, W>(reader: &'a mut R, writer: &'a mut W) -> io::Result<u64>
where
    R: AsyncBufRead + Unpin + ?Sized,
    W: AsyncWrite + Unpin + ?Sized,
{
    CopyBuf {
        reader,
        writer,
        amt: 0,
        need_flush: false,
    }
    .await
}

#[derive(Debug)]
struct CopyBuf<'a, R: ?Sized, W: ?Sized> {
    reader: &'a mut R,
    writer: &'a mut W,
    amt: u64,
    need_flush: bool,
}

impl<R, W> Future for CopyBuf<'_, R, W>
where
    R: AsyncBufRead + Unpin + ?Sized,
    W: AsyncWrite + Unpin + ?Sized,
{
    type Output = io::Result<u64>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let budget = ready!(coop::poll_proceed(cx));
        let me = self.get_mut();
        loop {
            let chunk = match Pin::new(&mut *me.reader).poll_fill_buf(cx) {
                Poll::Ready(Ok(chunk)) => {
                    budget.made_progress();
                    chunk
                }
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Poll::Ready(Err(e)) => {
                    budget.made_progress();
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => {
                    if me.need_flush {
                        ready!(Pin::new(&mut *me.writer).poll_flush(cx))?;
                        me.need_flush = false;
                    }
                    return Poll::Pending;
                }
            };
            if chunk.is_empty() {
                ready!(Pin::new(&mut *me.writer).poll_flush(cx))?;
                return Poll::Ready(Ok(me.amt));
            }
            let n = match ready!(Pin::new(&mut *me.writer).poll_write(cx, chunk)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => other?,
            };
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            me.amt += n as u64;
            me.need_flush = true;
            Pin::new(&mut *me.reader).consume(n);
        }
    }
}

/// One direction of a bidirectional copy.
enum Direction {
    Copying(CopyBuffer),
    ShuttingDown(u64),
    Done(u64),
}

/// Copies one direction to its end, then shuts the writing side down.
fn poll_direction<A, B>(cx: &mut Context<'_>, state: &mut Direction, from: &mut A, to: &mut B) -> Poll<io::Result<u64>>
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let mut from = Pin::new(from);
    let mut to = Pin::new(to);
    loop {
        match state {
            Direction::Copying(buf) => {
                let n = ready!(buf.poll_copy(cx, from.as_mut(), to.as_mut()))?;
                *state = Direction::ShuttingDown(n);
            }
            Direction::ShuttingDown(n) => {
                ready!(to.as_mut().poll_shutdown(cx))?;
                *state = Direction::Done(*n);
            }
            Direction::Done(n) => return Poll::Ready(Ok(*n)),
        }
    }
}

/// Copies between `a` and `b` in both directions at once until both reach their end;
/// when one direction ends, the other side's writing half is shut down. Returns the
/// bytes copied from `a` to `b` and from `b` to `a`.
///
/// Stops at the first error in either direction. Uses an 8 KiB buffer per direction.
///
/// ```
/// use netloop_io::{AsyncReadExt, AsyncWriteExt};
///
/// futures::executor::block_on(async {
///     let (mut a, mut a_peer) = netloop_io::duplex(64);
///     let (mut b, mut b_peer) = netloop_io::duplex(64);
///     a_peer.write_all(b"ping").await.unwrap();
///     a_peer.shutdown().await.unwrap();
///     b_peer.shutdown().await.unwrap();
///     let (ab, ba) = netloop_io::copy_bidirectional(&mut a, &mut b).await.unwrap();
///     assert_eq!((ab, ba), (4, 0));
///     let mut got = Vec::new();
///     b_peer.read_to_end(&mut got).await.unwrap();
///     assert_eq!(got, b"ping");
/// });
/// ```
pub async fn copy_bidirectional<A, B>(a: &mut A, b: &mut B) -> io::Result<(u64, u64)>
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    copy_both(
        a,
        b,
        CopyBuffer::new(DEFAULT_BUF_SIZE),
        CopyBuffer::new(DEFAULT_BUF_SIZE),
    )
    .await
}

/// [`copy_bidirectional`] with a buffer of `a_to_b_buf_size` bytes for the direction
/// from `a` to `b` and of `b_to_a_buf_size` for the other.
///
/// # Panics
///
/// If either size is zero.
pub async fn copy_bidirectional_with_sizes<A, B>(
    a: &mut A,
    b: &mut B,
    a_to_b_buf_size: usize,
    b_to_a_buf_size: usize,
) -> io::Result<(u64, u64)>
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    assert!(a_to_b_buf_size > 0, "`a_to_b_buf_size` must be greater than 0");
    assert!(b_to_a_buf_size > 0, "`b_to_a_buf_size` must be greater than 0");
    copy_both(a, b, CopyBuffer::new(a_to_b_buf_size), CopyBuffer::new(b_to_a_buf_size)).await
}

async fn copy_both<A, B>(a: &mut A, b: &mut B, a_to_b: CopyBuffer, b_to_a: CopyBuffer) -> io::Result<(u64, u64)>
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let mut a_to_b = Direction::Copying(a_to_b);
    let mut b_to_a = Direction::Copying(b_to_a);
    poll_fn(|cx| {
        // Poll both directions every time, so one that is ready is never held up by
        // the other; an error in either ends the copy.
        let ab = poll_direction(cx, &mut a_to_b, a, b)?;
        let ba = poll_direction(cx, &mut b_to_a, b, a)?;
        let ab = ready!(ab);
        let ba = ready!(ba);
        Poll::Ready(Ok((ab, ba)))
    })
    .await
}
