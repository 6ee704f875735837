//! `copy_bidirectional`: two copies at once, between two streams, each direction shut
//! down as its reader ends.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite};

use super::copy::CopyBuffer;

/// Where one direction stands.
enum Direction {
    Copying(CopyBuffer),
    /// The reader ended after this many bytes; the writer is being shut down.
    ShuttingDown(u64),
    Done(u64),
}

fn poll_direction<A, B>(cx: &mut Context<'_>, state: &mut Direction, from: &mut A, to: &mut B) -> Poll<io::Result<u64>>
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let (mut from, mut to) = (Pin::new(from), Pin::new(to));
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

/// Copies `a` to `b` and `b` to `a` at once, until both reach end of file; returns the
/// bytes copied `(a to b, b to a)` (tokio's `io::copy_bidirectional`). When one side's
/// reads end, the other side's write half is shut down, so a proxy passes a half-close
/// on. An error in either direction ends both with that error. 8 KiB buffers.
///
/// The heart of a TCP proxy: each accepted client is joined to a connection of its own
/// to the upstream server.
///
/// ```
/// use netloop_net::io::{self, AsyncReadExt, AsyncWriteExt};
/// use netloop_net::{TcpListener, TcpStream};
/// use netloop_scheduler::task;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// // An upstream server that answers "pong" to anything.
/// let upstream = TcpListener::bind("127.0.0.1:0").await?;
/// let upstream_addr = upstream.local_addr()?;
/// task::spawn(async move {
///     let (mut conn, _) = upstream.accept().await?;
///     conn.read(&mut [0u8; 16]).await?;
///     conn.write_all(b"pong").await
/// });
///
/// // The proxy.
/// let proxy = TcpListener::bind("127.0.0.1:0").await?;
/// let proxy_addr = proxy.local_addr()?;
/// task::spawn(async move {
///     let (mut client, _) = proxy.accept().await?;
///     let mut server = TcpStream::connect(upstream_addr).await?;
///     io::copy_bidirectional(&mut client, &mut server).await
/// });
///
/// let mut client = TcpStream::connect(proxy_addr).await?;
/// client.write_all(b"ping").await?;
/// let mut reply = String::new();
/// client.read_to_string(&mut reply).await?; // ends when upstream closes, passed on
/// assert_eq!(reply, "pong");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn copy_bidirectional<A, B>(a: &mut A, b: &mut B) -> io::Result<(u64, u64)>
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    copy_both(
        a,
        b,
        CopyBuffer::new(super::DEFAULT_BUF_SIZE),
        CopyBuffer::new(super::DEFAULT_BUF_SIZE),
    )
    .await
}

/// [`copy_bidirectional`] with the buffer size of each direction.
///
/// Larger buffers mean fewer reads and writes for bulk transfers; smaller ones, less
/// memory per connection for many idle ones.
///
/// ```
/// use netloop_net::io::{self, AsyncReadExt, AsyncWriteExt};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (mut a, mut a_peer) = io::duplex(1024);
/// let (mut b, mut b_peer) = io::duplex(1024);
/// a_peer.write_all(b"to b").await?;
/// a_peer.shutdown().await?;
/// b_peer.shutdown().await?;
///
/// let copied = io::copy_bidirectional_with_sizes(&mut a, &mut b, 64 * 1024, 4 * 1024).await?;
/// assert_eq!(copied, (4, 0));
/// let mut got = String::new();
/// b_peer.read_to_string(&mut got).await?;
/// assert_eq!(got, "to b");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Panics
///
/// If either size is zero.
#[track_caller]
pub fn copy_bidirectional_with_sizes<'a, A, B>(
    a: &'a mut A,
    b: &'a mut B,
    a_to_b_buf_size: usize,
    b_to_a_buf_size: usize,
) -> impl Future<Output = io::Result<(u64, u64)>> + 'a
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    // Checked here, not in the future: the panic points at the caller.
    assert!(a_to_b_buf_size > 0, "`a_to_b_buf_size` must be greater than 0");
    assert!(b_to_a_buf_size > 0, "`b_to_a_buf_size` must be greater than 0");
    copy_both(a, b, CopyBuffer::new(a_to_b_buf_size), CopyBuffer::new(b_to_a_buf_size))
}

async fn copy_both<A, B>(a: &mut A, b: &mut B, a_to_b: CopyBuffer, b_to_a: CopyBuffer) -> io::Result<(u64, u64)>
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let (mut a_to_b, mut b_to_a) = (Direction::Copying(a_to_b), Direction::Copying(b_to_a));
    poll_fn(|cx| {
        // Both directions are polled every time, so neither waits on the other.
        let there = poll_direction(cx, &mut a_to_b, a, b)?;
        let back = poll_direction(cx, &mut b_to_a, b, a)?;
        Poll::Ready(Ok((ready!(there), ready!(back))))
    })
    .await
}
