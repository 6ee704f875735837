//! `sink`: a writer that takes everything and keeps nothing.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::AsyncWrite;

use super::spend_budget;

/// A writer that accepts and discards every byte (tokio's `io::Sink`). Created by
/// [`sink`].
///
/// Copying a reader into a sink drains it, and counts its bytes:
///
/// ```
/// use netloop_net::io;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut reader: &[u8] = b"twenty-one bytes long"; // `&[u8]` is a reader
/// let n = io::copy(&mut reader, &mut io::sink()).await?;
/// assert_eq!(n, 21);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Sink {
    _private: (),
}

/// A writer that reports every write as complete and drops the data.
///
/// Every operation spends a unit of the task's cooperative budget, so a loop that
/// writes to it forever still lets the other tasks of its loop run.
///
/// ```
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// use netloop_net::io::AsyncWriteExt;
/// let n = netloop_net::io::sink().write(b"gone").await?;
/// assert_eq!(n, 4);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn sink() -> Sink {
    Sink { _private: () }
}

impl AsyncWrite for Sink {
    #[inline]
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(buf.len()))
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()))
    }

    #[inline]
    fn is_write_vectored(&self) -> bool {
        true
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(spend_budget(cx));
        Poll::Ready(Ok(()))
    }
}

impl fmt::Debug for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Sink { .. }")
    }
}
