//! Unix pipes on the loop (tokio's `net::unix::pipe`): the two ends of an anonymous
//! pipe ([`pipe`]), or of a named one, a FIFO opened with [`OpenOptions`].
//!
//! A [`Sender`] writes and a [`Receiver`] reads; each is registered with one loop, as a
//! socket is, and has a socket's surface for its one direction: readiness waits, the
//! `try_` operations and `AsyncWrite` or `AsyncRead`.
//!
//! A pipe has no shutdown of its own: a receiver reads end of file (a read of 0 bytes)
//! once every sender is closed, and a sender's writes fail with `BrokenPipe` once every
//! receiver is closed.
//!
//! ```
//! use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
//! use netloop_net::unix::pipe;
//!
//! # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
//! # rt.block_on(async {
//! let (mut tx, mut rx) = pipe::pipe()?;
//! tx.write_all(b"hello").await?;
//! drop(tx); // the receiver reads to the end of file
//!
//! let mut got = String::new();
//! rx.read_to_string(&mut got).await?;
//! assert_eq!(got, "hello");
//! # Ok::<(), std::io::Error>(())
//! # })?;
//! # Ok::<(), std::io::Error>(())
//! ```

mod sys;

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use netloop_io::{AsyncRead, AsyncWrite, ReadBuf};
use netloop_reactor::io::{Direction, PollEvented, Ready};

use crate::io::Interest;
use crate::registration::{self, register};

/// Creates an anonymous pipe, both ends non-blocking, close-on-exec and registered
/// with this thread's loop (else the runtime's next).
///
/// What `tx` writes, `rx` reads, in order. The sender is taken as writable at once
/// (a new pipe's buffer is empty), the receiver as readable only once there is data.
///
/// # Panics
///
/// Outside a runtime, as tokio's does: there is no loop to register with.
#[track_caller]
pub fn pipe() -> io::Result<(Sender, Receiver)> {
    let (tx, rx) = mio::unix::pipe::new()?;
    let tx = Sender::register(tx)?;
    let rx = Receiver::register(rx)?;
    tx.io.registration()?.assume_ready(Ready::WRITABLE);
    Ok((tx, rx))
}

/// How to open a FIFO (a named pipe) as a [`Sender`] or a [`Receiver`].
///
/// By default the file must be a FIFO (anything else fails with `InvalidInput`) and is
/// opened for the end's one direction. Opening a FIFO does not wait for the other side
/// (the file is opened non-blocking): a receiver opens at once, and reads end of file
/// until some sender has opened and closed it; a sender fails with `ENXIO` while no
/// receiver has the FIFO open, unless [`read_write`](Self::read_write) is set.
///
/// ```
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
/// use netloop_net::unix::pipe;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let dir = std::env::temp_dir().join(format!("netloop-fifo-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("fifo");
/// # let _ = std::fs::remove_file(&path);
/// assert!(std::process::Command::new("mkfifo").arg(&path).status()?.success());
///
/// // No receiver yet: a sender cannot open it.
/// let err = pipe::OpenOptions::new().open_sender(&path).unwrap_err();
/// assert_eq!(err.raw_os_error(), Some(libc::ENXIO));
///
/// let mut rx = pipe::OpenOptions::new().open_receiver(&path)?;
/// let mut tx = pipe::OpenOptions::new().open_sender(&path)?;
/// tx.write_all(b"through the file system").await?;
/// drop(tx);
/// let mut got = String::new();
/// rx.read_to_string(&mut got).await?;
/// assert_eq!(got, "through the file system");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    read_write: bool,
    unchecked: bool,
}

/// Which end of a pipe is wanted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Sender,
    Receiver,
}

impl OpenOptions {
    /// Options with everything off: a checked FIFO, opened for one direction.
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }

    /// Opens the FIFO for reading and writing both (`O_RDWR`; Linux defines what that
    /// does to a FIFO, POSIX does not).
    ///
    /// The end then counts as a reader and as a writer of the FIFO itself: a sender
    /// opens even with no receiver there (what it writes waits in the FIFO's buffer),
    /// and a receiver never reads end of file when the senders come and go: it waits
    /// for the next one instead.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn read_write(&mut self, value: bool) -> &mut Self {
        self.read_write = value;
        self
    }

    /// Skips the check that the opened file is a FIFO, for a caller that knows it is
    /// (saving an `fstat`). Opening something else then gives an end over that file,
    /// whose readiness means whatever the file's polling says.
    pub fn unchecked(&mut self, value: bool) -> &mut Self {
        self.unchecked = value;
        self
    }

    /// Opens the FIFO at `path` as a [`Receiver`], registered with this thread's loop
    /// (else the runtime's next).
    ///
    /// # Errors
    ///
    /// `InvalidInput` if the file is not a FIFO (unless [`unchecked`](Self::unchecked)),
    /// `NotFound` if there is no file, or any other error of `open`.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn open_receiver<P: AsRef<Path>>(&self, path: P) -> io::Result<Receiver> {
        Receiver::from_file_unchecked(self.open(path.as_ref(), End::Receiver)?)
    }

    /// Opens the FIFO at `path` as a [`Sender`], registered with this thread's loop
    /// (else the runtime's next).
    ///
    /// # Errors
    ///
    /// `ENXIO` (`raw_os_error`) if no receiver has the FIFO open and
    /// [`read_write`](Self::read_write) is not set: the open does not wait for one, so
    /// a caller that wants to wait retries later. `InvalidInput` if the file is not a
    /// FIFO (unless [`unchecked`](Self::unchecked)), or any other error of `open`.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn open_sender<P: AsRef<Path>>(&self, path: P) -> io::Result<Sender> {
        Sender::from_file_unchecked(self.open(path.as_ref(), End::Sender)?)
    }

    fn open(&self, path: &Path, end: End) -> io::Result<File> {
        let mut options = std::fs::OpenOptions::new();
        options
            .read(end == End::Receiver)
            .write(end == End::Sender)
            // Opening a FIFO blocks until the other side opens it, unless non-blocking:
            // a receiver then opens at once and a sender fails with ENXIO.
            .custom_flags(libc::O_NONBLOCK);
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if self.read_write {
            options.read(true).write(true);
        }
        let file = options.open(path)?;
        if !self.unchecked && !is_pipe(&file)? {
            return Err(not_a_pipe());
        }
        Ok(file)
    }
}

fn not_a_pipe() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "not a pipe or FIFO")
}

/// Whether `file` is a pipe: a FIFO or either end of an anonymous pipe (`S_IFIFO`).
fn is_pipe(file: &File) -> io::Result<bool> {
    Ok(file.metadata()?.file_type().is_fifo())
}

/// Checks that `fd` is a pipe open for `end`'s direction (what the checked
/// constructors do before making it non-blocking and registering it).
fn checked(fd: OwnedFd, end: End) -> io::Result<OwnedFd> {
    let file = File::from(fd);
    if !is_pipe(&file)? {
        return Err(not_a_pipe());
    }
    let mode = sys::access_mode(file.as_fd())?;
    let (allowed, message) = match end {
        End::Sender => (
            mode.write,
            "a pipe's sender must be open for writing (O_WRONLY or O_RDWR)",
        ),
        End::Receiver => (
            mode.read,
            "a pipe's receiver must be open for reading (O_RDONLY or O_RDWR)",
        ),
    };
    if !allowed {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
    }
    Ok(file.into())
}

/// The writing end of a pipe (tokio's `pipe::Sender`): an anonymous pipe's from
/// [`pipe`], a FIFO's from [`OpenOptions::open_sender`], or any pipe descriptor's
/// from [`from_owned_fd`](Self::from_owned_fd).
///
/// Write it with [`AsyncWriteExt`](crate::io::AsyncWriteExt), or with
/// [`writable`](Self::writable) and [`try_write`](Self::try_write). Dropping it closes
/// it: once every sender of the pipe is closed, its receiver reads end of file.
/// Writes fail with `BrokenPipe` once every receiver is closed.
#[derive(Debug)]
pub struct Sender {
    io: PollEvented<mio::unix::pipe::Sender>,
}

impl Sender {
    #[track_caller]
    fn register(tx: mio::unix::pipe::Sender) -> io::Result<Sender> {
        Ok(Sender {
            io: register(tx, mio::Interest::WRITABLE)?,
        })
    }

    /// A sender over `file`, which must be a pipe (a FIFO, say) open for writing; it is
    /// made non-blocking and registered with this thread's loop (else the runtime's
    /// next).
    ///
    /// # Errors
    ///
    /// `InvalidInput` if `file` is not a pipe or was not opened for writing.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn from_file(file: File) -> io::Result<Sender> {
        Sender::from_owned_fd(file.into())
    }

    /// [`from_file`](Self::from_file) for a descriptor: an anonymous pipe's write end,
    /// or a FIFO opened for writing.
    ///
    /// # Errors
    ///
    /// `InvalidInput` if `owned_fd` is not a pipe or was not opened for writing.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn from_owned_fd(owned_fd: OwnedFd) -> io::Result<Sender> {
        let tx = mio::unix::pipe::Sender::from(checked(owned_fd, End::Sender)?);
        tx.set_nonblocking(true)?;
        Sender::register(tx)
    }

    /// A sender over `file` as it is: no check that it is a pipe open for writing,
    /// and no change to its blocking mode. The caller makes sure of both; a blocking
    /// descriptor would block the loop's thread on a full pipe.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn from_file_unchecked(file: File) -> io::Result<Sender> {
        Sender::from_owned_fd_unchecked(file.into())
    }

    /// [`from_file_unchecked`](Self::from_file_unchecked) for a descriptor.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn from_owned_fd_unchecked(owned_fd: OwnedFd) -> io::Result<Sender> {
        Sender::register(owned_fd.into())
    }

    /// Waits for any of `interest` and returns everything of it that is ready: for a
    /// sender, `WRITABLE`, and `WRITE_CLOSED` once every receiver is gone. It may be
    /// spurious (a `try_write` may still say `WouldBlock`) and may return a set without
    /// the wanted bit; check it. Several tasks may wait at once.
    pub async fn ready(&self, interest: Interest) -> io::Result<crate::io::Ready> {
        registration::ready(&self.io, interest).await
    }

    /// Waits until the pipe has room to write (may be spurious); the usual partner of
    /// [`try_write`](Self::try_write). Several tasks may wait at once.
    pub async fn writable(&self) -> io::Result<()> {
        registration::ready_for(&self.io, Direction::Write).await
    }

    /// Polls for room to write: `Ready` when the pipe was last seen writable (or
    /// broken), otherwise `Pending`, and the task of `cx` is woken at the next change
    /// (only the last task to poll is woken).
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_write_ready(cx).map_ok(drop)
    }

    /// Writes without waiting: how many bytes of `buf` went in, or `WouldBlock` if the
    /// pipe is full (which clears the writability, so a later `writable` waits).
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |tx| (&*tx).write(buf))
    }

    /// Vectored [`try_write`](Self::try_write) (one `writev`).
    pub fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |tx| (&*tx).write_vectored(bufs))
    }

    /// Runs `f`, a custom write on the descriptor, if the pipe was last seen writable;
    /// `WouldBlock` otherwise. If `f` returns `WouldBlock` the writability is cleared,
    /// so `f` should return it only when the descriptor said so.
    pub fn try_io<R>(&self, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        self.io.try_io(Direction::Write, |_| f())
    }

    /// Deregisters the sender and returns its descriptor in blocking mode: what a
    /// child process's standard output or input wants.
    pub fn into_blocking_fd(self) -> io::Result<OwnedFd> {
        let tx = self.io.into_inner()?;
        tx.set_nonblocking(false)?;
        Ok(tx.into())
    }

    /// Deregisters the sender and returns its descriptor, still non-blocking.
    pub fn into_nonblocking_fd(self) -> io::Result<OwnedFd> {
        Ok(self.io.into_inner()?.into())
    }

    fn poll_write_with(
        &self,
        cx: &mut Context<'_>,
        short_write_means_full: Option<usize>,
        mut op: impl FnMut(&mio::unix::pipe::Sender) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        self.io.poll_io_draining(cx, Direction::Write, |tx| {
            // A plain write that took only part of the buffer found the pipe full.
            op(tx).map(|n| (n, short_write_means_full.is_some_and(|len| n > 0 && n < len)))
        })
    }
}

impl AsyncWrite for Sender {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, Some(buf.len()), |tx| (&*tx).write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // A short `writev` may be IOV_MAX's doing, not a full pipe: no shortcut.
        self.poll_write_with(cx, None, |tx| (&*tx).write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Does nothing: a pipe end has no half-close. Drop the sender to close it.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The reading end of a pipe (tokio's `pipe::Receiver`): an anonymous pipe's from
/// [`pipe`], a FIFO's from [`OpenOptions::open_receiver`], or any pipe descriptor's
/// from [`from_owned_fd`](Self::from_owned_fd).
///
/// Read it with [`AsyncReadExt`](crate::io::AsyncReadExt), or with
/// [`readable`](Self::readable) and [`try_read`](Self::try_read). A read of 0 bytes
/// (into a non-empty buffer) is the end of file: every sender is closed. A FIFO can
/// be opened by a new sender after that, and its data is read as before; a receiver
/// opened with [`OpenOptions::read_write`] never sees the end of file at all.
///
/// ```
/// use netloop_net::unix::pipe;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (tx, rx) = pipe::pipe()?;
/// tx.try_write(b"ping")?;
/// let mut buf = [0u8; 16];
/// let n = loop {
///     rx.readable().await?;
///     match rx.try_read(&mut buf) {
///         Ok(n) => break n,
///         Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
///         Err(e) => return Err(e),
///     }
/// };
/// assert_eq!(&buf[..n], b"ping");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Receiver {
    io: PollEvented<mio::unix::pipe::Receiver>,
}

impl Receiver {
    #[track_caller]
    fn register(rx: mio::unix::pipe::Receiver) -> io::Result<Receiver> {
        Ok(Receiver {
            io: register(rx, mio::Interest::READABLE)?,
        })
    }

    /// A receiver over `file`, which must be a pipe (a FIFO, say) open for reading; it
    /// is made non-blocking and registered with this thread's loop (else the runtime's
    /// next).
    ///
    /// # Errors
    ///
    /// `InvalidInput` if `file` is not a pipe or was not opened for reading.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn from_file(file: File) -> io::Result<Receiver> {
        Receiver::from_owned_fd(file.into())
    }

    /// [`from_file`](Self::from_file) for a descriptor: an anonymous pipe's read end,
    /// or a FIFO opened for reading.
    ///
    /// # Errors
    ///
    /// `InvalidInput` if `owned_fd` is not a pipe or was not opened for reading.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn from_owned_fd(owned_fd: OwnedFd) -> io::Result<Receiver> {
        let rx = mio::unix::pipe::Receiver::from(checked(owned_fd, End::Receiver)?);
        rx.set_nonblocking(true)?;
        Receiver::register(rx)
    }

    /// A receiver over `file` as it is: no check that it is a pipe open for reading,
    /// and no change to its blocking mode. The caller makes sure of both; a blocking
    /// descriptor would block the loop's thread on an empty pipe.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn from_file_unchecked(file: File) -> io::Result<Receiver> {
        Receiver::from_owned_fd_unchecked(file.into())
    }

    /// [`from_file_unchecked`](Self::from_file_unchecked) for a descriptor.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn from_owned_fd_unchecked(owned_fd: OwnedFd) -> io::Result<Receiver> {
        Receiver::register(owned_fd.into())
    }

    /// Waits for any of `interest` and returns everything of it that is ready: for a
    /// receiver, `READABLE`, and `READ_CLOSED` once every sender is gone. It may be
    /// spurious (a `try_read` may still say `WouldBlock`) and may return a set without
    /// the wanted bit; check it. Several tasks may wait at once.
    pub async fn ready(&self, interest: Interest) -> io::Result<crate::io::Ready> {
        registration::ready(&self.io, interest).await
    }

    /// Waits until the pipe has data or is closed (may be spurious); the usual partner
    /// of [`try_read`](Self::try_read). Several tasks may wait at once.
    pub async fn readable(&self) -> io::Result<()> {
        registration::ready_for(&self.io, Direction::Read).await
    }

    /// Polls for data: `Ready` when the pipe was last seen readable (or closed),
    /// otherwise `Pending`, and the task of `cx` is woken at the next change (only the
    /// last task to poll is woken).
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_read_ready(cx).map_ok(drop)
    }

    /// Reads without waiting: how many bytes came into `buf` (0 at the end of file, or
    /// if `buf` is empty), or `WouldBlock` if the pipe is empty (which clears the
    /// readability, so a later `readable` waits).
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Read, |rx| (&*rx).read(buf))
    }

    /// Vectored [`try_read`](Self::try_read) (one `readv`).
    pub fn try_read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        self.io.try_io(Direction::Read, |rx| (&*rx).read_vectored(bufs))
    }

    /// [`try_read`](Self::try_read) appending to `buf`'s spare capacity (a `Vec`
    /// grows). It reads at most 16 KiB at a time, through a buffer on the stack, so no
    /// uninitialized memory is handed to the OS.
    pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let want = buf.remaining_mut().min(chunk.len());
        let n = self.try_read(&mut chunk[..want])?;
        buf.put_slice(&chunk[..n]);
        Ok(n)
    }

    /// Runs `f`, a custom read on the descriptor, if the pipe was last seen readable;
    /// `WouldBlock` otherwise. If `f` returns `WouldBlock` the readability is cleared,
    /// so `f` should return it only when the descriptor said so.
    pub fn try_io<R>(&self, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        self.io.try_io(Direction::Read, |_| f())
    }

    /// Deregisters the receiver and returns its descriptor in blocking mode: what a
    /// child process's standard input wants.
    pub fn into_blocking_fd(self) -> io::Result<OwnedFd> {
        let rx = self.io.into_inner()?;
        rx.set_nonblocking(false)?;
        Ok(rx.into())
    }

    /// Deregisters the receiver and returns its descriptor, still non-blocking.
    pub fn into_nonblocking_fd(self) -> io::Result<OwnedFd> {
        Ok(self.io.into_inner()?.into())
    }
}

impl AsyncRead for Receiver {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let n = std::task::ready!(self.io.poll_io_draining(cx, Direction::Read, |rx| {
            let unfilled = buf.initialize_unfilled();
            let len = unfilled.len();
            // A short read emptied the pipe: its readability is forgotten now rather
            // than after a read that would block.
            (&*rx).read(unfilled).map(|n| (n, n > 0 && n < len))
        }))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

macro_rules! pipe_fd_traits {
    ($($End:ty),*) => {
        $(
            impl AsRawFd for $End {
                fn as_raw_fd(&self) -> RawFd {
                    self.io.get_ref().as_raw_fd()
                }
            }

            impl AsFd for $End {
                fn as_fd(&self) -> BorrowedFd<'_> {
                    self.io.get_ref().as_fd()
                }
            }
        )*
    };
}

pipe_fd_traits!(Sender, Receiver);

#[cfg(feature = "tokio-io")]
netloop_io::impl_tokio_io! {
    impl AsyncWrite for [] Sender;
    impl AsyncRead for [] Receiver;
}
