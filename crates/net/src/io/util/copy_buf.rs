//! `copy_buf`: a copy that reads through the reader's own buffer.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Poll, ready};

use tokio::io::{AsyncBufRead, AsyncWrite};

/// Copies everything a buffered reader gives until end of file into `writer`, then
/// flushes it; returns the number of bytes copied (tokio's `io::copy_buf`). No buffer
/// of its own: it writes straight from the reader's.
///
/// ```
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut reader: &[u8] = b"hello";
/// let mut writer: Vec<u8> = Vec::new();
/// assert_eq!(netloop_net::io::copy_buf(&mut reader, &mut writer).await?, 5);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn copy_buf<'a, R, W>(reader: &'a mut R, writer: &'a mut W) -> io::Result<u64>
where
    R: AsyncBufRead + Unpin + ?Sized,
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut amt = 0u64;
    // Set once a write happened since the last flush.
    let mut need_flush = false;
    poll_fn(|cx| {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        loop {
            let buffer = match Pin::new(&mut *reader).poll_fill_buf(cx) {
                Poll::Ready(Ok(buffer)) => {
                    coop.made_progress();
                    buffer
                }
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Poll::Ready(Err(e)) => {
                    coop.made_progress();
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => {
                    if need_flush {
                        ready!(Pin::new(&mut *writer).poll_flush(cx))?;
                        need_flush = false;
                    }
                    return Poll::Pending;
                }
            };
            if buffer.is_empty() {
                ready!(Pin::new(&mut *writer).poll_flush(cx))?;
                return Poll::Ready(Ok(amt));
            }
            let n = match ready!(Pin::new(&mut *writer).poll_write(cx, buffer)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                written => written?,
            };
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            amt += n as u64;
            need_flush = true;
            Pin::new(&mut *reader).consume(n);
        }
    })
    .await
}
