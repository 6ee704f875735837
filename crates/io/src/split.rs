//! [`split`]: one stream into a reading half and a writing half that can be moved to
//! different tasks.

use crate::{AsyncRead, AsyncWrite, ReadBuf};
use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

/// The reading half of a stream cut in two by [`split`].
pub struct ReadHalf<T> {
    shared: Arc<Shared<T>>,
}

/// The writing half of a stream cut in two by [`split`].
pub struct WriteHalf<T> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    // Each half takes the lock for the length of one poll call, so the two halves can
    // be used from different tasks or threads.
    stream: Mutex<T>,
    // Read once at split time, so that `is_write_vectored` needs no lock.
    vectored: bool,
}

impl<T> Shared<T> {
    fn locked<R>(&self, f: impl FnOnce(Pin<&mut T>) -> R) -> R {
        let mut guard = self.stream.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the stream lives inside the `Arc` and never moves out of it while
        // pinned: the only way to take it out is `unsplit`, which requires `T: Unpin`.
        let pinned = unsafe { Pin::new_unchecked(&mut *guard) };
        f(pinned)
    }
}

/// Cuts a stream that reads and writes into two halves, each usable on its own (from
/// different tasks, say). The halves share the stream behind a lock taken for the
/// duration of each poll; [`ReadHalf::unsplit`] puts them back together.
///
/// If the stream can be split without a lock (a TCP stream's `split`/`into_split`),
/// that is cheaper.
pub fn split<T>(stream: T) -> (ReadHalf<T>, WriteHalf<T>)
where
    T: AsyncRead + AsyncWrite,
{
    let vectored = stream.is_write_vectored();
    let shared = Arc::new(Shared {
        stream: Mutex::new(stream),
        vectored,
    });
    (ReadHalf { shared: shared.clone() }, WriteHalf { shared })
}

impl<T> ReadHalf<T> {
    /// Whether `other` is the writing half cut from the same stream as this one.
    pub fn is_pair_of(&self, other: &WriteHalf<T>) -> bool {
        other.is_pair_of(self)
    }

    /// Puts the two halves back together and returns the stream.
    ///
    /// # Panics
    ///
    /// If `wr` was not cut from the same stream as `self`.
    #[track_caller]
    pub fn unsplit(self, wr: WriteHalf<T>) -> T
    where
        T: Unpin,
    {
        if !self.is_pair_of(&wr) {
            panic!("Unrelated `split::Write` passed to `split::Read::unsplit`.");
        }
        drop(wr);
        let shared = Arc::try_unwrap(self.shared).ok().expect("`Arc::try_unwrap` failed");
        shared.stream.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> WriteHalf<T> {
    /// Whether `other` is the reading half cut from the same stream as this one.
    pub fn is_pair_of(&self, other: &ReadHalf<T>) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl<T: AsyncRead> AsyncRead for ReadHalf<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.shared.locked(|s| s.poll_read(cx, buf))
    }
}

impl<T: AsyncWrite> AsyncWrite for WriteHalf<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.shared.locked(|s| s.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.shared.locked(|s| s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.shared.locked(|s| s.poll_shutdown(cx))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.shared.locked(|s| s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.shared.vectored
    }
}

// SAFETY: a half only reaches the stream through the mutex, one poll at a time, so
// sending a half to another thread needs only `T: Send` (as for `Mutex<T>`).
unsafe impl<T: Send> Send for ReadHalf<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for WriteHalf<T> {}
// SAFETY: every method that touches the stream takes `Pin<&mut Self>`, so a shared
// reference to a half gives no access to the stream at all; tokio asks `T: Sync`.
unsafe impl<T: Sync> Sync for ReadHalf<T> {}
// SAFETY: as above (`is_write_vectored` reads a plain bool).
unsafe impl<T: Sync> Sync for WriteHalf<T> {}

impl<T: fmt::Debug> fmt::Debug for ReadHalf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("split::ReadHalf").finish()
    }
}

impl<T: fmt::Debug> fmt::Debug for WriteHalf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("split::WriteHalf").finish()
    }
}
