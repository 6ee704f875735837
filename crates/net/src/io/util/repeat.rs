//! `repeat`: a reader that yields one byte forever.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::BufMut;
use tokio::io::{AsyncRead, ReadBuf};

use super::spend_budget;

/// A reader that fills every buffer with one byte, forever (tokio's `io::Repeat`).
/// Created by [`repeat`].
///
/// Endless, so it is usually bounded with [`take`](crate::io::AsyncReadExt::take):
/// here, a kilobyte of test data.
///
/// ```
/// use netloop_net::io::{self, AsyncReadExt};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut data = Vec::new();
/// io::repeat(b'x').take(1024).read_to_end(&mut data).await?;
/// assert_eq!(data, vec![b'x'; 1024]);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Repeat {
    byte: u8,
}

/// A reader that yields `byte` endlessly; each read fills the whole buffer.
///
/// Every read spends a unit of the task's cooperative budget, so a loop that reads it
/// forever still lets the other tasks of its loop run.
///
/// ```
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// use netloop_net::io::AsyncReadExt;
/// let mut buf = [0u8; 3];
/// netloop_net::io::repeat(7).read_exact(&mut buf).await?;
/// assert_eq!(buf, [7, 7, 7]);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn repeat(byte: u8) -> Repeat {
    Repeat { byte }
}

impl AsyncRead for Repeat {
    #[inline]
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        ready!(spend_budget(cx));
        buf.put_bytes(self.byte, buf.remaining());
        Poll::Ready(Ok(()))
    }
}
