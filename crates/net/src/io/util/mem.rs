//! In-memory pipes: `simplex` (one direction) and `duplex` (two simplex pipes crossed).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker, ready};

use bytes::{Buf, BytesMut};
use netloop_scheduler::sync::lock;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf, split};

/// A bounded in-memory byte pipe, read at one end and written at the other (tokio's
/// `io::SimplexStream`).
///
/// Writes fill a buffer of at most `max_buf_size` bytes and wait while it is full;
/// reads drain it and wait while it is empty. Shutting the write side down gives the
/// reader end of file once the buffer is drained, and later writes fail with
/// `BrokenPipe`. (The halves from [`simplex`] are tokio's `split` halves: dropping one
/// closes nothing.) Every read and write spends a unit of
/// the task's cooperative budget (only when it completes), so two tasks pumping data
/// through a pipe still let the rest of their loop run.
///
/// The bound is backpressure: here the writer sends 1 KiB through a 64-byte pipe,
/// waiting whenever the reader falls behind.
///
/// ```
/// use netloop_net::io::{self, AsyncReadExt, AsyncWriteExt};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (mut rx, mut tx) = io::simplex(64);
/// let writer = netloop_scheduler::task::spawn(async move {
///     tx.write_all(&[7u8; 1024]).await?;
///     tx.shutdown().await // the reader sees EOF once the buffer is drained
/// });
/// let mut got = Vec::new();
/// rx.read_to_end(&mut got).await?;
/// assert_eq!(got, vec![7u8; 1024]);
/// writer.await??;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct SimplexStream {
    /// Written, not yet read; never longer than `max_buf_size`.
    buffer: BytesMut,
    /// Set when either end closes: no more writes; reads end once `buffer` is empty.
    is_closed: bool,
    max_buf_size: usize,
    /// The task waiting to read (the buffer was empty).
    read_waker: Option<Waker>,
    /// The task waiting to write (the buffer was full).
    write_waker: Option<Waker>,
}

/// The wake-ups an operation owes, made after the pipe's lock is released: the woken
/// task may run on another thread and take the lock at once.
#[derive(Default)]
struct Wakeups {
    wake: Option<Waker>,
    /// A waker replaced by the new one: dropped outside the lock as well (its drop may
    /// run arbitrary code).
    replaced: Option<Waker>,
}

impl Wakeups {
    fn run(self) {
        if let Some(waker) = self.wake {
            waker.wake();
        }
        drop(self.replaced);
    }
}

/// A pipe of at most `max_buf_size` bytes in flight, as the two halves of one
/// [`SimplexStream`].
///
/// # Panics
///
/// If `max_buf_size` is zero: nothing could ever be written.
///
/// ```
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
/// let (mut rx, mut tx) = netloop_net::io::simplex(64);
/// tx.write_all(b"ping").await?;
/// tx.shutdown().await?; // dropping a half closes nothing: shut the writer down
/// let mut got = String::new();
/// rx.read_to_string(&mut got).await?;
/// assert_eq!(got, "ping");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn simplex(max_buf_size: usize) -> (ReadHalf<SimplexStream>, WriteHalf<SimplexStream>) {
    split(SimplexStream::new_unsplit(max_buf_size))
}

impl SimplexStream {
    /// A pipe not split into halves: it is its own reader and writer.
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

    /// The write side is done: the reader sees end of file after the buffered bytes.
    #[must_use = "the reader's waker must be woken"]
    fn close_write(&mut self) -> Option<Waker> {
        self.is_closed = true;
        self.read_waker.take()
    }

    /// The read side is gone: writes fail from now on.
    #[must_use = "the writer's waker must be woken"]
    fn close_read(&mut self) -> Option<Waker> {
        self.is_closed = true;
        self.write_waker.take()
    }

    fn read(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>, wakeups: &mut Wakeups) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        if self.buffer.has_remaining() {
            let n = self.buffer.remaining().min(buf.remaining());
            buf.put_slice(&self.buffer[..n]);
            self.buffer.advance(n);
            // Room was made: a writer waiting for it may go on.
            wakeups.wake = self.write_waker.take();
            Poll::Ready(Ok(()))
        } else if self.is_closed {
            // End of file.
            Poll::Ready(Ok(()))
        } else {
            wakeups.replaced = self.read_waker.replace(cx.waker().clone());
            Poll::Pending
        }
    }

    /// Copies as much of `bufs` as fits; `Pending` while the buffer is full.
    fn write(&mut self, cx: &mut Context<'_>, bufs: &[IoSlice<'_>], wakeups: &mut Wakeups) -> Poll<io::Result<usize>> {
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
            let n = b.len().min(left);
            self.buffer.extend_from_slice(&b[..n]);
            left -= n;
            if left == 0 {
                break;
            }
        }
        // Data arrived: a reader waiting for it may go on.
        wakeups.wake = self.read_waker.take();
        Poll::Ready(Ok(room - left))
    }
}

impl AsyncRead for SimplexStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        spend_on(cx, |cx, wakeups| me.read(cx, buf, wakeups))
    }
}

impl AsyncWrite for SimplexStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        spend_on(cx, |cx, wakeups| me.write(cx, &[IoSlice::new(buf)], wakeups))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        spend_on(cx, |cx, wakeups| me.write(cx, bufs, wakeups))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(waker) = self.get_mut().close_write() {
            waker.wake();
        }
        Poll::Ready(Ok(()))
    }
}

/// Runs a pipe operation under the budget: one unit spent when it completes, none when
/// it waits. The operation's wake-ups run after it returns (after any lock it held is
/// released).
fn spend_on<T>(
    cx: &mut Context<'_>,
    op: impl FnOnce(&mut Context<'_>, &mut Wakeups) -> Poll<io::Result<T>>,
) -> Poll<io::Result<T>> {
    let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
    let mut wakeups = Wakeups::default();
    let polled = op(cx, &mut wakeups);
    wakeups.run();
    if polled.is_ready() {
        coop.made_progress();
    }
    polled
}

/// One end of a bidirectional in-memory pipe (tokio's `io::DuplexStream`): what one
/// end writes, the other reads. Created in pairs by [`duplex`].
///
/// Each direction is a [`SimplexStream`] of at most `max_buf_size` bytes. Shutting an
/// end's write side down gives the other end end of file; dropping an end does that and
/// makes the other end's writes fail with `BrokenPipe`.
///
/// Code generic over the I/O traits can be tested with a
/// duplex pair, no network needed:
///
/// ```
/// use netloop_net::io::{self, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
///
/// // Answers each line with its length.
/// async fn serve_lengths(conn: impl AsyncRead + AsyncWrite + Unpin) -> std::io::Result<()> {
///     let mut conn = BufReader::new(conn);
///     let mut line = String::new();
///     while conn.read_line(&mut line).await? != 0 {
///         conn.write_all(format!("{}\n", line.trim_end().len()).as_bytes()).await?;
///         line.clear();
///     }
///     Ok(())
/// }
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (client, server) = io::duplex(64);
/// let server = netloop_scheduler::task::spawn(serve_lengths(server));
///
/// let mut client = BufReader::new(client);
/// client.write_all(b"hello\n").await?;
/// let mut answer = String::new();
/// client.read_line(&mut answer).await?;
/// assert_eq!(answer, "5\n");
///
/// drop(client); // the server reads EOF and returns
/// server.await??;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct DuplexStream {
    // Each change to a direction's buffer is one `BytesMut` call, so a panic while a
    // lock is held leaves the buffer whole: the locks are taken with `sync::lock`.
    read: Arc<Mutex<SimplexStream>>,
    write: Arc<Mutex<SimplexStream>>,
}

/// Two connected ends of an in-memory pipe, each direction buffering at most
/// `max_buf_size` bytes: a stand-in for a socket pair in tests, with no OS resource.
///
/// # Panics
///
/// If `max_buf_size` is zero.
///
/// ```
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
/// let (mut client, mut server) = netloop_net::io::duplex(64);
/// client.write_all(b"ping").await?;
/// let mut buf = [0u8; 4];
/// server.read_exact(&mut buf).await?;
/// assert_eq!(&buf, b"ping");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
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

impl AsyncRead for DuplexStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        spend_on(cx, |cx, wakeups| lock(&self.read).read(cx, buf, wakeups))
    }
}

impl AsyncWrite for DuplexStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        spend_on(cx, |cx, wakeups| {
            lock(&self.write).write(cx, &[IoSlice::new(buf)], wakeups)
        })
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        spend_on(cx, |cx, wakeups| lock(&self.write).write(cx, bufs, wakeups))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let reader = lock(&self.write).close_write();
        if let Some(waker) = reader {
            waker.wake();
        }
        Poll::Ready(Ok(()))
    }
}

impl Drop for DuplexStream {
    fn drop(&mut self) {
        // The other end reads end of file, and its writes fail.
        let reader = lock(&self.write).close_write();
        let writer = lock(&self.read).close_read();
        for waker in [reader, writer].into_iter().flatten() {
            waker.wake();
        }
    }
}
