//! `empty`: a reader at end of file, a writer that discards, a seek that stays at 0.

use std::fmt;
use std::io::{self, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncBufRead, AsyncRead, AsyncSeek, ReadBuf};

use super::spent;

/// Always at end of file for reads, accepts and discards writes, and seeks to 0
/// (tokio's `io::Empty`). Created by [`empty`].
///
/// A stand-in where an API wants a reader or a writer and there is nothing to give or
/// keep, such as a request with no body:
///
/// ```
/// use netloop_net::io::{self, AsyncReadExt, AsyncWriteExt};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut body = io::empty();
/// let mut text = String::new();
/// assert_eq!(body.read_to_string(&mut text).await?, 0);
/// body.write_all(b"discarded").await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Empty {
    _private: (),
}

/// A reader with nothing in it (every read returns 0 bytes) that is also a writer
/// discarding everything, and a seekable stream always at position 0.
///
/// Every operation spends a unit of the task's cooperative budget, so a loop on it
/// still lets the other tasks of its loop run.
///
/// ```
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// use netloop_net::io::AsyncReadExt;
/// let mut out = Vec::new();
/// assert_eq!(netloop_net::io::empty().read_to_end(&mut out).await?, 0);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn empty() -> Empty {
    Empty { _private: () }
}

impl AsyncRead for Empty {
    #[inline]
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, _: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        spent(cx, ())
    }
}

impl AsyncBufRead for Empty {
    #[inline]
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        spent(cx, &[])
    }

    #[inline]
    fn consume(self: Pin<&mut Self>, _: usize) {}
}

discarding_writer!(Empty);

impl AsyncSeek for Empty {
    #[inline]
    fn start_seek(self: Pin<&mut Self>, _position: SeekFrom) -> io::Result<()> {
        Ok(())
    }

    #[inline]
    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        spent(cx, 0)
    }
}

impl fmt::Debug for Empty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Empty { .. }")
    }
}
