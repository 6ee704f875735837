//! In-memory pipes: [`simplex`] (one direction) and [`duplex`] (two).

use crate::{AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf, split};
use bytes::{Buf, BytesMut};
use netloop_reactor::coop;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker, ready};

/// One end of an in-memory, bidirectional byte pipe made by [`duplex`].
///
/// What is written to one end is read from the other. Each direction buffers at most
/// the `max_buf_size` given to `duplex`; a writer that finds its direction full waits
/// for the reader. Dropping an end, or shutting its writing side down, makes the other
/// end read end of stream once the buffered bytes are read; writing towards a dropped
/// end fails with [`BrokenPipe`](std::io::ErrorKind::BrokenPipe).
#[derive(Debug)]
pub struct DuplexStream {
    read: Arc<Mutex<SimplexStream>>,
    write: Arc<Mutex<SimplexStream>>,
}

/// An in-memory, one-directional byte pipe with a bounded buffer.
///
/// Used whole (see [`new_unsplit`](SimplexStream::new_unsplit)), it is read and written
/// through the same value; [`simplex`] returns it cut into a reading and a writing
/// half. A shutdown of the writing side makes reads return end of stream once the
/// buffer is drained.
#[derive(Debug)]
pub struct SimplexStream {
    buffer: BytesMut,
    is_closed: bool,
    max_buf_size: usize,
    // The task waiting for bytes to read, and the one waiting for room to write.
    read_waker: Option<Waker>,
    write_waker: Option<Waker>,
}

/// Makes a pair of connected [`DuplexStream`]s, each direction buffering at most
/// `max_buf_size` bytes.
///
/// # Panics
///
/// If `max_buf_size` is zero.
///
/// ```
/// use netloop_io::{AsyncReadExt, AsyncWriteExt};
///
/// futures::executor::block_on(async {
///     let (mut client, mut server) = netloop_io::duplex(64);
///     client.write_all(b"ping").await.unwrap();
///     let mut buf = [0u8; 4];
///     server.read_exact(&mut buf).await.unwrap();
///     assert_eq!(&buf, b"ping");
/// });
/// ```
#[track_caller]
pub fn duplex(max_buf_size: usize) -> (DuplexStream, DuplexStream) {
    let one = Arc::new(Mutex::new(SimplexStream::new_unsplit(max_buf_size)));
    let two = Arc::new(Mutex::new(SimplexStream::new_unsplit(max_buf_size)));
    (
        DuplexStream {
            read: one.clone(),
            write: two.clone(),
        },
        DuplexStream { read: two, write: one },
    )
}

/// Makes a one-directional pipe buffering at most `max_buf_size` bytes, cut into its
/// reading and writing halves.
///
/// # Panics
///
/// If `max_buf_size` is zero.
#[track_caller]
pub fn simplex(max_buf_size: usize) -> (ReadHalf<SimplexStream>, WriteHalf<SimplexStream>) {
    split(SimplexStream::new_unsplit(max_buf_size))
}

fn lock(m: &Mutex<SimplexStream>) -> MutexGuard<'_, SimplexStream> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Wakers collected under the lock, woken (or dropped) after it is released.
#[derive(Default)]
struct Wakeups {
    wake: Option<Waker>,
    // A waker replaced by a newer one: dropped outside the lock, as it may run
    // arbitrary code.
    replaced: Option<Waker>,
}

impl Wakeups {
    fn run(self) {
        if let Some(w) = self.wake {
            w.wake();
        }
        drop(self.replaced);
    }
}

impl SimplexStream {
    /// Makes a whole pipe, read and written through the same value, buffering at most
    /// `max_buf_size` bytes.
    ///
    /// # Panics
    ///
    /// If `max_buf_size` is zero.
    #[track_caller]
    pub fn new_unsplit(max_buf_size: usize) -> SimplexStream {
        assert!(max_buf_size > 0, "`max_buf_size` must be greater than 0");
        SimplexStream {
            buffer: BytesMut::new(),
            is_closed: false,
            max_buf_size,
            read_waker: None,
            write_waker: None,
        }
    }

    fn close_write(&mut self) -> Option<Waker> {
        self.is_closed = true;
        self.read_waker.take()
    }

    fn close_read(&mut self) -> Option<Waker> {
        self.is_closed = true;
        self.write_waker.take()
    }

    fn read_inner(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
        wakeups: &mut Wakeups,
    ) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        if self.buffer.has_remaining() {
            let n = self.buffer.remaining().min(buf.remaining());
            buf.put_slice(&self.buffer[..n]);
            self.buffer.advance(n);
            wakeups.wake = self.write_waker.take();
            Poll::Ready(Ok(()))
        } else if self.is_closed {
            Poll::Ready(Ok(()))
        } else {
            wakeups.replaced = self.read_waker.replace(cx.waker().clone());
            Poll::Pending
        }
    }

    fn write_inner(&mut self, cx: &mut Context<'_>, bufs: &[&[u8]], wakeups: &mut Wakeups) -> Poll<io::Result<usize>> {
        if self.is_closed {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        let room = self.max_buf_size - self.buffer.len();
        if room == 0 {
            wakeups.replaced = self.write_waker.replace(cx.waker().clone());
            return Poll::Pending;
        }
        let mut left = room;
        for b in bufs {
            if left == 0 {
                break;
            }
            let n = b.len().min(left);
            self.buffer.extend_from_slice(&b[..n]);
            left -= n;
        }
        wakeups.wake = self.read_waker.take();
        Poll::Ready(Ok(room - left))
    }

    /// A read that spends one unit of the cooperative budget when it completes.
    fn read_budgeted(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
        wakeups: &mut Wakeups,
    ) -> Poll<io::Result<()>> {
        let budget = ready!(coop::poll_proceed(cx));
        let res = self.read_inner(cx, buf, wakeups);
        if res.is_ready() {
            budget.made_progress();
        }
        res
    }

    /// A write that spends one unit of the cooperative budget when it completes.
    fn write_budgeted(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[&[u8]],
        wakeups: &mut Wakeups,
    ) -> Poll<io::Result<usize>> {
        let budget = ready!(coop::poll_proceed(cx));
        let res = self.write_inner(cx, bufs, wakeups);
        if res.is_ready() {
            budget.made_progress();
        }
        res
    }
}

/// Calls `f` with the slices of `bufs` as plain byte slices (on the stack for the
/// usual small counts).
fn with_slices<R>(bufs: &[IoSlice<'_>], f: impl FnOnce(&[&[u8]]) -> R) -> R {
    const INLINE: usize = 16;
    if bufs.len() <= INLINE {
        let mut arr: [&[u8]; INLINE] = [&[]; INLINE];
        for (slot, b) in arr.iter_mut().zip(bufs) {
            *slot = b;
        }
        f(&arr[..bufs.len()])
    } else {
        let v: Vec<&[u8]> = bufs.iter().map(|b| &**b).collect();
        f(&v)
    }
}

impl AsyncRead for SimplexStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut wakeups = Wakeups::default();
        let res = self.get_mut().read_budgeted(cx, buf, &mut wakeups);
        wakeups.run();
        res
    }
}

impl AsyncWrite for SimplexStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut wakeups = Wakeups::default();
        let res = self.get_mut().write_budgeted(cx, &[buf], &mut wakeups);
        wakeups.run();
        res
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut wakeups = Wakeups::default();
        let me = self.get_mut();
        let res = with_slices(bufs, |s| me.write_budgeted(cx, s, &mut wakeups));
        wakeups.run();
        res
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(w) = self.get_mut().close_write() {
            w.wake();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for DuplexStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut wakeups = Wakeups::default();
        let res = lock(&self.read).read_budgeted(cx, buf, &mut wakeups);
        wakeups.run();
        res
    }
}

impl AsyncWrite for DuplexStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut wakeups = Wakeups::default();
        let res = lock(&self.write).write_budgeted(cx, &[buf], &mut wakeups);
        wakeups.run();
        res
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut wakeups = Wakeups::default();
        let res = with_slices(bufs, |s| lock(&self.write).write_budgeted(cx, s, &mut wakeups));
        wakeups.run();
        res
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let waker = lock(&self.write).close_write();
        if let Some(w) = waker {
            w.wake();
        }
        Poll::Ready(Ok(()))
    }
}

impl Drop for DuplexStream {
    fn drop(&mut self) {
        // The peer's reads end, and its writes towards us fail.
        let reader = lock(&self.write).close_write();
        let writer = lock(&self.read).close_read();
        if let Some(w) = reader {
            w.wake();
        }
        if let Some(w) = writer {
            w.wake();
        }
    }
}
