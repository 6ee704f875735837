//! [`File`]: an open file whose reads, writes and seeks run on the blocking pool.
//!
//! A file is in one of two states. `Idle` holds its buffer: unread bytes of the last
//! read, or nothing. `Busy` means one operation (read, write or seek) runs on the pool,
//! holding the buffer; polling the state's join handle gives both back. Invariants:
//! - at most one operation is in flight, and the buffer goes with it;
//! - the OS file position is past any unread bytes in the buffer, so anything that
//!   moves the position (a write, a seek) first seeks back over them;
//! - a failed background write is reported by the next write, flush or seek.
//!
//! Opening a file (`File::open`, `create`, `options`...) is `open_options`'s, above
//! this module: a `File` is made here only from an open standard-library file.

mod buf;
mod state;

use std::fmt;
use std::fs::{Metadata, Permissions};
use std::future::poll_fn;
use std::io::{self, IoSlice, Seek, SeekFrom};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use netloop_io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use netloop_sync::Mutex;

use super::asyncify;
use buf::Buf;
use state::{Inner, Operation, State};

/// The default [`File::max_buf_size`]: 2 MiB, as tokio's.
const DEFAULT_MAX_BUF_SIZE: usize = 2 * 1024 * 1024;

/// An open file, used with `AsyncRead`, `AsyncWrite` and `AsyncSeek` (tokio's `File`).
///
/// A `write` returns as soon as its bytes are copied into the file's buffer; the write
/// itself completes in the background, so **call `flush` before dropping the file** if
/// you need the data written (or an error reported). Dropping a file with a write in
/// flight lets that write finish on its own.
///
/// ```
/// use netloop_net::fs::File;
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let path = std::env::temp_dir().join(format!("netloop-doc-file-{}.txt", std::process::id()));
///
/// let mut file = File::create(&path).await?;
/// file.write_all(b"hello, file").await?;
/// file.flush().await?; // wait for the background write, and see its error if any
///
/// let mut contents = String::new();
/// File::open(&path).await?.read_to_string(&mut contents).await?;
/// assert_eq!(contents, "hello, file");
/// netloop_net::fs::remove_file(&path).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct File {
    std: Arc<std::fs::File>,
    /// Locked by the `&self` methods (`sync_all`, `set_len`...) to wait for the
    /// operation in flight; the poll methods take `&mut self` and need no lock.
    inner: Mutex<Inner>,
    max_buf_size: usize,
}

impl File {
    /// Wraps an open standard-library file.
    pub fn from_std(std: std::fs::File) -> File {
        File {
            std: Arc::new(std),
            inner: Mutex::new(Inner::new()),
            max_buf_size: DEFAULT_MAX_BUF_SIZE,
        }
    }

    /// Waits for the operation in flight, then flushes data and metadata to the device.
    pub async fn sync_all(&self) -> io::Result<()> {
        self.inner.lock().await.complete_inflight().await;
        let std = self.std.clone();
        asyncify(move || std.sync_all()).await
    }

    /// Waits for the operation in flight, then flushes data (not all metadata) to the
    /// device.
    pub async fn sync_data(&self) -> io::Result<()> {
        self.inner.lock().await.complete_inflight().await;
        let std = self.std.clone();
        asyncify(move || std.sync_data()).await
    }
    /// Truncates or extends the file to `size` bytes; the position is unchanged.
    pub async fn set_len(&self, size: u64) -> io::Result<()> {
        let mut inner = self.inner.lock().await;
        inner.complete_inflight().await;
        let mut buf = inner
            .take_idle_buf()
            .unwrap_or_else(|| unreachable!("complete_inflight leaves the file idle"));
        let seek_back = buf.discard_read();
        inner.start(&self.std, buf, move |mut file, _| {
            let result = (|| {
                if seek_back != 0 {
                    file.seek(SeekFrom::Current(seek_back))?;
                }
                file.set_len(size)?;
                file.stream_position()
            })();
            Operation::Seek(result)
        });
        let done = poll_fn(|cx| inner.poll_done(cx)).await?;
        match done {
            Operation::Seek(result) => result.map(|pos| inner.pos = pos),
            _ => unreachable!("set_len runs a seek"),
        }
    }

    /// The file's metadata.
    pub async fn metadata(&self) -> io::Result<Metadata> {
        let std = self.std.clone();
        asyncify(move || std.metadata()).await
    }

    /// A new `File` for the same open file (a duplicated descriptor), with the same
    /// [`max_buf_size`](Self::max_buf_size).
    pub async fn try_clone(&self) -> io::Result<File> {
        self.inner.lock().await.complete_inflight().await;
        let std = self.std.clone();
        let clone = asyncify(move || std.try_clone()).await?;
        let mut clone = File::from_std(clone);
        clone.max_buf_size = self.max_buf_size;
        Ok(clone)
    }

    /// Waits for the operation in flight and gives back the standard-library file.
    pub async fn into_std(mut self) -> std::fs::File {
        self.inner.get_mut().complete_inflight().await;
        Arc::try_unwrap(self.std).expect("no operation holds the file once it is idle")
    }

    /// The standard-library file, if no operation is in flight; else `self` back.
    #[allow(clippy::result_large_err, reason = "tokio's signature: the file itself comes back")]
    pub fn try_into_std(mut self) -> Result<std::fs::File, Self> {
        match Arc::try_unwrap(self.std) {
            Ok(std) => Ok(std),
            Err(std) => {
                self.std = std;
                Err(self)
            }
        }
    }

    /// Sets the file's permissions.
    pub async fn set_permissions(&self, perm: Permissions) -> io::Result<()> {
        let std = self.std.clone();
        asyncify(move || std.set_permissions(perm)).await
    }

    /// Sets the file's access and modification times.
    pub async fn set_times(&self, times: std::fs::FileTimes) -> io::Result<()> {
        let std = self.std.clone();
        asyncify(move || std.set_times(times)).await
    }

    /// Sets the file's modification time.
    pub async fn set_modified(&self, time: std::time::SystemTime) -> io::Result<()> {
        let std = self.std.clone();
        asyncify(move || std.set_modified(time)).await
    }

    /// Sets the most one read or write moves between the task and the pool.
    ///
    /// # Panics
    ///
    /// If `max_buf_size` is 0.
    #[track_caller]
    pub fn set_max_buf_size(&mut self, max_buf_size: usize) {
        assert!(max_buf_size > 0, "`max_buf_size` must be greater than 0");
        self.max_buf_size = max_buf_size;
    }

    /// The most one read or write moves between the task and the pool (default 2 MiB).
    pub fn max_buf_size(&self) -> usize {
        self.max_buf_size
    }

    /// Starts a write of what `fill` copies into the idle buffer; returns its count.
    fn start_write(&mut self, fill: impl FnOnce(&mut Buf, usize) -> usize) -> io::Result<usize> {
        let inner = self.inner.get_mut();
        let mut buf = inner
            .take_idle_buf()
            .unwrap_or_else(|| unreachable!("start_write on a busy file"));
        // Unread bytes are ahead of the OS position: write where the reader stands.
        let seek_back = buf.discard_read();
        let n = fill(&mut buf, self.max_buf_size);
        inner.start(&self.std, buf, move |mut file, buf| {
            let result = if seek_back != 0 {
                file.seek(SeekFrom::Current(seek_back))
                    .and_then(|_| buf.write_to(&mut file))
            } else {
                buf.write_to(&mut file)
            };
            Operation::Write(result)
        });
        Ok(n)
    }

    fn poll_write_with(
        &mut self,
        cx: &mut Context<'_>,
        fill: impl FnOnce(&mut Buf, usize) -> usize,
    ) -> Poll<io::Result<usize>> {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        let inner = self.inner.get_mut();
        if let Some(kind) = inner.last_write_err.take() {
            return Poll::Ready(Err(kind.into()));
        }
        loop {
            let inner = self.inner.get_mut();
            if let State::Idle(_) = inner.state {
                coop.made_progress();
                return Poll::Ready(self.start_write(fill));
            }
            if let Operation::Write(Err(e)) = ready!(inner.poll_done(cx))? {
                return Poll::Ready(Err(e));
            }
        }
    }
}

impl AsyncRead for File {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, dst: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        let me = self.get_mut();
        let inner = me.inner.get_mut();
        loop {
            if let State::Busy(_) = inner.state {
                match ready!(inner.poll_done(cx))? {
                    Operation::Read(Ok(_)) => {
                        inner.idle_buf().copy_to(dst);
                        coop.made_progress();
                        return Poll::Ready(Ok(()));
                    }
                    Operation::Read(Err(e)) => return Poll::Ready(Err(e)),
                    Operation::Write(Err(e)) => inner.last_write_err = Some(e.kind()),
                    Operation::Seek(Ok(pos)) => inner.pos = pos,
                    Operation::Write(Ok(())) | Operation::Seek(Err(_)) => {}
                }
                continue;
            }
            let buf = inner.idle_buf();
            if !buf.is_empty() || dst.remaining() == 0 {
                buf.copy_to(dst);
                coop.made_progress();
                return Poll::Ready(Ok(()));
            }
            let buf = std::mem::take(buf);
            let len = dst.remaining().min(me.max_buf_size);
            inner.start(&me.std, buf, move |mut file, buf| {
                Operation::Read(buf.read_from(&mut file, len))
            });
        }
    }
}

impl AsyncSeek for File {
    fn start_seek(self: Pin<&mut Self>, mut pos: SeekFrom) -> io::Result<()> {
        let me = self.get_mut();
        let inner = me.inner.get_mut();
        let Some(mut buf) = inner.take_idle_buf() else {
            return Err(io::Error::other(
                "other file operation is pending, call poll_complete before start_seek",
            ));
        };
        // The OS position is past the unread bytes; a relative seek starts before them.
        let unread = buf.discard_read();
        if let SeekFrom::Current(offset) = &mut pos {
            *offset += unread;
        }
        inner.start(&me.std, buf, move |mut file, _| Operation::Seek(file.seek(pos)));
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        let inner = self.get_mut().inner.get_mut();
        loop {
            if let State::Idle(_) = inner.state {
                coop.made_progress();
                return Poll::Ready(Ok(inner.pos));
            }
            match ready!(inner.poll_done(cx))? {
                Operation::Read(_) | Operation::Write(Ok(())) => {}
                Operation::Write(Err(e)) => inner.last_write_err = Some(e.kind()),
                Operation::Seek(result) => {
                    if let Ok(pos) = result {
                        inner.pos = pos;
                    }
                    coop.made_progress();
                    return Poll::Ready(result);
                }
            }
        }
    }
}

impl AsyncWrite for File {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, src: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_with(cx, |buf, max| buf.copy_from(src, max))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .poll_write_with(cx, |buf, max| buf.copy_from_bufs(bufs, max))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().inner.get_mut().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

#[cfg(feature = "tokio-io")]
netloop_io::impl_tokio_io! {
    impl AsyncRead for [] File;
    impl AsyncWrite for [] File;
    impl AsyncSeek for [] File;
}

impl From<std::fs::File> for File {
    fn from(std: std::fs::File) -> File {
        File::from_std(std)
    }
}

impl From<std::os::fd::OwnedFd> for File {
    fn from(fd: std::os::fd::OwnedFd) -> File {
        File::from_std(std::fs::File::from(fd))
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The path the user names it by: under the `tokio` crate in patch mode.
        let name = if cfg!(feature = "tokio-names") {
            "tokio::fs::File"
        } else {
            "netloop::fs::File"
        };
        f.debug_struct(name).field("std", &self.std).finish()
    }
}

impl std::os::fd::AsRawFd for File {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.std.as_raw_fd()
    }
}

impl std::os::fd::AsFd for File {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.std.as_fd()
    }
}

impl std::os::fd::FromRawFd for File {
    /// # Safety
    ///
    /// `fd` must be an open file descriptor that nothing else owns.
    unsafe fn from_raw_fd(fd: std::os::fd::RawFd) -> File {
        // SAFETY: the caller hands over ownership of an open descriptor.
        File::from_std(unsafe { std::fs::File::from_raw_fd(fd) })
    }
}
