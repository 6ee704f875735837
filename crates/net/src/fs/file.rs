//! [`File`]: an open file whose reads, writes and seeks run on the blocking pool.
//!
//! A file is in one of two states. `Idle` holds its buffer: unread bytes of the last
//! read, or nothing. `Busy` means one operation (read, write or seek) runs on the pool,
//! holding the buffer; polling the state's join handle gives both back. Invariants:
//! - at most one operation is in flight, and the buffer goes with it;
//! - the OS file position is past any unread bytes in the buffer, so anything that
//!   moves the position (a write, a seek) first seeks back over them;
//! - a failed background write is reported by the next write, flush or seek.

use std::fmt;
use std::fs::{Metadata, Permissions};
use std::future::Future;
use std::io::{self, IoSlice, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use netloop_scheduler::task::JoinHandle;
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use tokio::sync::Mutex;

use super::{OpenOptions, asyncify, join_error};

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

struct Inner {
    state: State,
    /// The kind of a background write's error, not yet reported.
    last_write_err: Option<io::ErrorKind>,
    /// The position after the last completed seek.
    pos: u64,
}

enum State {
    /// `None` only while an operation is being started.
    Idle(Option<Buf>),
    Busy(JoinHandle<(Operation, Buf)>),
}

enum Operation {
    Read(io::Result<usize>),
    Write(io::Result<()>),
    Seek(io::Result<u64>),
}

impl File {
    /// Opens `path` for reading.
    ///
    /// # Errors
    ///
    /// The OS's: a missing file, a permission error...
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Opens `path` for writing, creating it or truncating it.
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Creates `path` for reading and writing, failing if it exists.
    pub async fn create_new(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .await
    }

    /// Options to open a file with ([`OpenOptions::new`]).
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Wraps an open standard-library file.
    pub fn from_std(std: std::fs::File) -> File {
        File {
            std: Arc::new(std),
            inner: Mutex::new(Inner {
                state: State::Idle(Some(Buf::default())),
                last_write_err: None,
                pos: 0,
            }),
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
        let State::Idle(slot) = &mut inner.state else {
            unreachable!("complete_inflight leaves the file idle")
        };
        let mut buf = slot.take().unwrap_or_default();
        let seek_back = buf.discard_read();
        let std = self.std.clone();
        inner.state = State::Busy(netloop_scheduler::task::spawn_blocking(move || {
            let result = (|| {
                if seek_back != 0 {
                    (&*std).seek(SeekFrom::Current(seek_back))?;
                }
                std.set_len(size)?;
                (&*std).stream_position()
            })();
            (Operation::Seek(result), buf)
        }));
        let State::Busy(handle) = &mut inner.state else {
            unreachable!()
        };
        let done = handle.await;
        let (op, buf) = match done {
            Ok(done) => done,
            Err(e) => {
                inner.state = State::Idle(Some(Buf::default()));
                return Err(join_error(e));
            }
        };
        inner.state = State::Idle(Some(buf));
        match op {
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
        let State::Idle(slot) = &mut inner.state else {
            unreachable!("start_write on a busy file")
        };
        let mut buf = slot.take().unwrap_or_default();
        // Unread bytes are ahead of the OS position: write where the reader stands.
        let seek_back = buf.discard_read();
        let n = fill(&mut buf, self.max_buf_size);
        let std = self.std.clone();
        inner.state = State::Busy(netloop_scheduler::task::spawn_blocking(move || {
            let result = if seek_back != 0 {
                (&*std)
                    .seek(SeekFrom::Current(seek_back))
                    .and_then(|_| buf.write_to(&mut &*std))
            } else {
                buf.write_to(&mut &*std)
            };
            (Operation::Write(result), buf)
        }));
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
            let (op, buf) = ready!(inner.poll_busy(cx))?;
            inner.state = State::Idle(Some(buf));
            if let Operation::Write(Err(e)) = op {
                return Poll::Ready(Err(e));
            }
        }
    }
}

impl Inner {
    /// Waits for the operation in flight; puts the buffer back. A write's error is
    /// kept for the next write, flush or seek to report.
    fn poll_busy(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<(Operation, Buf)>> {
        let State::Busy(handle) = &mut self.state else {
            unreachable!("poll_busy on an idle file")
        };
        match ready!(Pin::new(handle).poll(cx)) {
            Ok(done) => Poll::Ready(Ok(done)),
            Err(e) => {
                // The pool could not run it (shut down) or it panicked: the buffer is
                // gone with it; start over with an empty one.
                self.state = State::Idle(Some(Buf::default()));
                Poll::Ready(Err(join_error(e)))
            }
        }
    }

    /// `poll_flush`: waits for the operation in flight, reporting a write's error.
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(kind) = self.last_write_err.take() {
            return Poll::Ready(Err(kind.into()));
        }
        if let State::Idle(_) = self.state {
            return Poll::Ready(Ok(()));
        }
        let (op, buf) = ready!(self.poll_busy(cx))?;
        self.state = State::Idle(Some(buf));
        match op {
            Operation::Write(Err(e)) => Poll::Ready(Err(e)),
            Operation::Seek(Ok(pos)) => {
                self.pos = pos;
                Poll::Ready(Ok(()))
            }
            _ => Poll::Ready(Ok(())),
        }
    }

    /// Waits for the operation in flight; any write error is kept for later.
    async fn complete_inflight(&mut self) {
        std::future::poll_fn(|cx| match ready!(self.poll_flush(cx)) {
            Err(e) => {
                self.last_write_err = Some(e.kind());
                Poll::Ready(())
            }
            Ok(()) => Poll::Ready(()),
        })
        .await
    }
}

impl AsyncRead for File {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, dst: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        let me = self.get_mut();
        let max_buf_size = me.max_buf_size;
        let inner = me.inner.get_mut();
        loop {
            match &mut inner.state {
                State::Idle(slot) => {
                    let buf = slot.get_or_insert_with(Buf::default);
                    if !buf.is_empty() || dst.remaining() == 0 {
                        buf.copy_to(dst);
                        coop.made_progress();
                        return Poll::Ready(Ok(()));
                    }
                    let mut buf = slot.take().expect("just filled");
                    let len = dst.remaining().min(max_buf_size);
                    let std = me.std.clone();
                    inner.state = State::Busy(netloop_scheduler::task::spawn_blocking(move || {
                        let result = buf.read_from(&mut &*std, len);
                        (Operation::Read(result), buf)
                    }));
                }
                State::Busy(_) => {
                    let (op, mut buf) = ready!(inner.poll_busy(cx))?;
                    match op {
                        Operation::Read(Ok(_)) => {
                            buf.copy_to(dst);
                            inner.state = State::Idle(Some(buf));
                            coop.made_progress();
                            return Poll::Ready(Ok(()));
                        }
                        Operation::Read(Err(e)) => {
                            inner.state = State::Idle(Some(buf));
                            return Poll::Ready(Err(e));
                        }
                        Operation::Write(result) => {
                            if let Err(e) = result {
                                inner.last_write_err = Some(e.kind());
                            }
                            inner.state = State::Idle(Some(buf));
                        }
                        Operation::Seek(result) => {
                            if let Ok(pos) = result {
                                inner.pos = pos;
                            }
                            inner.state = State::Idle(Some(buf));
                        }
                    }
                }
            }
        }
    }
}

impl AsyncSeek for File {
    fn start_seek(self: Pin<&mut Self>, mut pos: SeekFrom) -> io::Result<()> {
        let me = self.get_mut();
        let inner = me.inner.get_mut();
        let State::Idle(slot) = &mut inner.state else {
            return Err(io::Error::other(
                "other file operation is pending, call poll_complete before start_seek",
            ));
        };
        let mut buf = slot.take().unwrap_or_default();
        // The OS position is past the unread bytes; a relative seek starts before them.
        let unread = buf.discard_read();
        if let SeekFrom::Current(offset) = &mut pos {
            *offset += unread;
        }
        let std = me.std.clone();
        inner.state = State::Busy(netloop_scheduler::task::spawn_blocking(move || {
            (Operation::Seek((&*std).seek(pos)), buf)
        }));
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
            let (op, buf) = ready!(inner.poll_busy(cx))?;
            inner.state = State::Idle(Some(buf));
            match op {
                Operation::Read(_) => {}
                Operation::Write(Err(e)) => inner.last_write_err = Some(e.kind()),
                Operation::Write(Ok(())) => {}
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
        f.debug_struct("netloop::fs::File").field("std", &self.std).finish()
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

/// Bytes between the task and the pool: read ahead but not yet consumed, or to write.
#[derive(Default)]
struct Buf {
    bytes: Vec<u8>,
    /// Bytes before this were consumed.
    pos: usize,
}

impl Buf {
    fn len(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.pos = 0;
    }

    /// Copies as much as fits into `dst`.
    fn copy_to(&mut self, dst: &mut ReadBuf<'_>) -> usize {
        let n = self.len().min(dst.remaining());
        dst.put_slice(&self.bytes[self.pos..self.pos + n]);
        self.pos += n;
        if self.pos == self.bytes.len() {
            self.clear();
        }
        n
    }

    /// Takes up to `max` bytes of `src` to write; the buffer must be empty.
    fn copy_from(&mut self, src: &[u8], max: usize) -> usize {
        debug_assert!(self.is_empty());
        let n = src.len().min(max);
        self.bytes.extend_from_slice(&src[..n]);
        n
    }

    /// Takes up to `max` bytes of `bufs`, in order, to write.
    fn copy_from_bufs(&mut self, bufs: &[IoSlice<'_>], max: usize) -> usize {
        debug_assert!(self.is_empty());
        for src in bufs {
            let room = max - self.bytes.len();
            if room == 0 {
                break;
            }
            self.bytes.extend_from_slice(&src[..src.len().min(room)]);
        }
        self.bytes.len()
    }

    /// Drops the unread bytes; returns how far to seek back to stand before them.
    fn discard_read(&mut self) -> i64 {
        let back = -i64::try_from(self.len()).unwrap_or(i64::MAX);
        self.clear();
        back
    }

    /// Reads up to `len` bytes from `rd` into the (empty) buffer.
    fn read_from(&mut self, rd: &mut impl Read, len: usize) -> io::Result<usize> {
        debug_assert!(self.is_empty());
        self.bytes.resize(len, 0);
        let result = loop {
            match rd.read(&mut self.bytes) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                result => break result,
            }
        };
        self.bytes.truncate(*result.as_ref().unwrap_or(&0));
        self.pos = 0;
        result
    }

    /// Writes the whole buffer to `wr`, leaving it empty whatever happens.
    fn write_to(&mut self, wr: &mut impl Write) -> io::Result<()> {
        debug_assert_eq!(self.pos, 0);
        let result = wr.write_all(&self.bytes);
        self.clear();
        result
    }
}
