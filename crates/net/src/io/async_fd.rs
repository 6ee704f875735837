//! `AsyncFd`: readiness for any file descriptor, from the loop it is registered with.

use std::error::Error;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::task::{Context, Poll, ready};

use mio::event::Source;
use mio::unix::SourceFd;
use netloop_reactor::io::{Direction, PollEvented, Ready, ReadyEvent};

use super::Interest;
use crate::registration::register;

/// The raw descriptor as a mio source: `AsyncFd` keeps the object that owns it apart.
#[derive(Debug)]
struct FdSource(RawFd);

impl Source for FdSource {
    fn register(&mut self, registry: &mio::Registry, token: mio::Token, interests: mio::Interest) -> io::Result<()> {
        SourceFd(&self.0).register(registry, token, interests)
    }

    fn reregister(&mut self, registry: &mio::Registry, token: mio::Token, interests: mio::Interest) -> io::Result<()> {
        SourceFd(&self.0).reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &mio::Registry) -> io::Result<()> {
        SourceFd(&self.0).deregister(registry)
    }
}

/// An object that owns a file descriptor (a socket, a pipe, an eventfd, a device),
/// registered with a netloop loop so that tasks can wait for it to be readable or
/// writable (tokio's `io::unix::AsyncFd`).
///
/// `AsyncFd` does no I/O itself: it reports readiness, and the caller does the
/// non-blocking operation, telling `AsyncFd` when it found the descriptor not ready
/// after all (`WouldBlock`), through a guard's [`clear_ready`](AsyncFdReadyGuard::clear_ready)
/// or [`try_io`](AsyncFdReadyGuard::try_io). The descriptor must be in non-blocking
/// mode. Readiness is edge-triggered underneath: a readiness that was not cleared
/// stays reported, and one that was cleared comes back only with the next event.
///
/// The descriptor is registered with the loop of the thread that creates the
/// `AsyncFd` (or the runtime's next loop off the loops), and woken there. Dropping the
/// `AsyncFd` deregisters it first, then drops the object (which closes it).
///
/// ```
/// use std::io::{Read, Write};
/// use std::os::unix::net::UnixStream;
/// use netloop_net::io::unix::AsyncFd;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (a, mut b) = UnixStream::pair()?;
/// a.set_nonblocking(true)?;
/// // SAFETY: `a` owns its descriptor for as long as the AsyncFd holds it.
/// let a = unsafe { AsyncFd::register(a) }.map_err(std::io::Error::from)?;
/// b.write_all(b"ping")?;
/// let mut buf = [0u8; 4];
/// let n = loop {
///     let mut guard = a.readable().await?;
///     match guard.try_io(|fd| fd.get_ref().read(&mut buf)) {
///         Ok(result) => break result?,
///         Err(_would_block) => continue,
///     }
/// };
/// assert_eq!(&buf[..n], b"ping");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct AsyncFd<T: AsRawFd> {
    // Declared first, so dropped first: deregistered while the descriptor is open.
    io: PollEvented<FdSource>,
    inner: Option<T>,
}

/// Readiness of an [`AsyncFd`] seen by a task, until it is cleared (tokio's
/// `AsyncFdReadyGuard`). Dropping the guard without clearing keeps the readiness.
///
/// Readiness can be stale: do the operation, and if the OS says `WouldBlock` after
/// all, clear the readiness so that the next wait waits for a new event (a guard's
/// [`try_io`](Self::try_io) does both):
///
/// ```
/// use std::io::{ErrorKind, Read, Write};
/// use std::os::unix::net::UnixStream;
/// use netloop_net::io::unix::AsyncFd;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (a, mut b) = UnixStream::pair()?;
/// a.set_nonblocking(true)?;
/// // SAFETY: `a` owns its descriptor for as long as the AsyncFd holds it.
/// let a = unsafe { AsyncFd::register(a) }.map_err(std::io::Error::from)?;
/// b.write_all(b"ping")?;
///
/// let mut buf = [0u8; 16];
/// let n = loop {
///     let mut guard = a.readable().await?;
///     match guard.get_inner().read(&mut buf) {
///         Err(e) if e.kind() == ErrorKind::WouldBlock => guard.clear_ready(),
///         result => break result?,
///     }
/// };
/// assert_eq!(&buf[..n], b"ping");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct AsyncFdReadyGuard<'a, T: AsRawFd> {
    async_fd: &'a AsyncFd<T>,
    event: Option<ReadyEvent>,
}

/// [`AsyncFdReadyGuard`] with mutable access to the `AsyncFd` (tokio's
/// `AsyncFdReadyMutGuard`).
///
/// For objects whose I/O methods take `&mut self`:
///
/// ```
/// use std::io::{Read, Write};
/// use std::os::unix::net::UnixStream;
/// use netloop_net::io::unix::AsyncFd;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (a, mut b) = UnixStream::pair()?;
/// a.set_nonblocking(true)?;
/// // SAFETY: `a` owns its descriptor for as long as the AsyncFd holds it.
/// let mut a = unsafe { AsyncFd::register(a) }.map_err(std::io::Error::from)?;
/// b.write_all(b"ping")?;
///
/// let mut buf = [0u8; 16];
/// let n = loop {
///     let mut guard = a.readable_mut().await?;
///     if let Ok(result) = guard.try_io(|fd| fd.get_mut().read(&mut buf)) {
///         break result?;
///     }
/// };
/// assert_eq!(&buf[..n], b"ping");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct AsyncFdReadyMutGuard<'a, T: AsRawFd> {
    async_fd: &'a mut AsyncFd<T>,
    event: Option<ReadyEvent>,
}

/// The operation given to a guard's `try_io` found the descriptor not ready: the
/// readiness was cleared; wait for it again.
///
/// ```
/// use std::io::Read;
/// use std::os::unix::net::UnixStream;
/// use netloop_net::io::unix::AsyncFd;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (a, _b) = UnixStream::pair()?;
/// a.set_nonblocking(true)?;
/// // SAFETY: `a` owns its descriptor for as long as the AsyncFd holds it.
/// let a = unsafe { AsyncFd::register(a) }.map_err(std::io::Error::from)?;
///
/// // Writable, but a read finds nothing: the operation would block.
/// let mut guard = a.writable().await?;
/// let result = guard.try_io(|fd| fd.get_ref().read(&mut [0u8; 16]));
/// assert!(result.is_err()); // Err(TryIoError): wait again
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TryIoError(());

/// Registering an [`AsyncFd`] failed; the object comes back with the cause (tokio's
/// `AsyncFdRegisterError`), so nothing is lost.
///
/// epoll cannot wait on a regular file (it is always ready): registering one fails
/// with `EPERM`, and the file comes back, to be read with blocking calls instead (on
/// the blocking pool, as [`fs`](crate::fs) does).
///
/// ```
/// use std::fs::File;
/// use netloop_net::io::unix::AsyncFd;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let file = File::open(std::env::current_exe()?)?;
/// // SAFETY: `file` owns its descriptor for as long as the AsyncFd would hold it.
/// let err = unsafe { AsyncFd::register(file) }.unwrap_err();
/// let (file, cause) = err.into_parts();
/// assert_eq!(cause.raw_os_error(), Some(libc::EPERM));
/// assert!(file.metadata()?.is_file());
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct AsyncFdRegisterError<T> {
    inner: T,
    cause: io::Error,
}

impl<T: AsRawFd> AsyncFd<T> {
    /// Registers `inner`'s descriptor for readable and writable readiness.
    ///
    /// # Safety
    ///
    /// `inner.as_raw_fd()` must be an open descriptor that stays open, and names the
    /// same open file, for as long as the `AsyncFd` holds `inner` (until it is
    /// dropped, [`into_inner`](Self::into_inner) is called, or it is forgotten); every
    /// call to `inner.as_raw_fd()` meanwhile must return that descriptor. The loop
    /// registers and deregisters that number: were it closed and reused meanwhile,
    /// another file's events would be changed.
    ///
    /// # Panics
    ///
    /// Outside a runtime, as tokio's does.
    #[track_caller]
    pub unsafe fn register(inner: T) -> Result<Self, AsyncFdRegisterError<T>> {
        // SAFETY: the caller's contract is this function's.
        unsafe { Self::register_with_interest(inner, Interest::READABLE | Interest::WRITABLE) }
    }

    /// Registers `inner`'s descriptor for the readiness in `interest`.
    ///
    /// # Safety
    ///
    /// As for [`register`](Self::register).
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub unsafe fn register_with_interest(inner: T, interest: Interest) -> Result<Self, AsyncFdRegisterError<T>> {
        match register(FdSource(inner.as_raw_fd()), interest.to_mio()) {
            Ok(io) => Ok(AsyncFd { io, inner: Some(inner) }),
            Err(cause) => Err(AsyncFdRegisterError { inner, cause }),
        }
    }

    /// [`register`](Self::register) without `unsafe`, as tokio before 1.52 had it.
    #[deprecated(note = "unsound without I/O safety: nothing keeps the descriptor open; use `AsyncFd::register`")]
    #[track_caller]
    pub fn new(inner: T) -> io::Result<Self> {
        // SAFETY: not upheld by the type system; the deprecation says so.
        unsafe { Ok(Self::register(inner)?) }
    }

    /// [`register_with_interest`](Self::register_with_interest) without `unsafe`.
    #[deprecated(
        note = "unsound without I/O safety: nothing keeps the descriptor open; use `AsyncFd::register_with_interest`"
    )]
    #[track_caller]
    pub fn with_interest(inner: T, interest: Interest) -> io::Result<Self> {
        // SAFETY: not upheld by the type system; the deprecation says so.
        unsafe { Ok(Self::register_with_interest(inner, interest)?) }
    }

    /// [`register`](Self::register) without `unsafe`, giving the object back on failure.
    #[deprecated(note = "unsound without I/O safety: nothing keeps the descriptor open; use `AsyncFd::register`")]
    #[track_caller]
    pub fn try_new(inner: T) -> Result<Self, AsyncFdRegisterError<T>> {
        // SAFETY: not upheld by the type system; the deprecation says so.
        unsafe { Self::register(inner) }
    }

    /// [`register_with_interest`](Self::register_with_interest) without `unsafe`,
    /// giving the object back on failure.
    #[deprecated(
        note = "unsound without I/O safety: nothing keeps the descriptor open; use `AsyncFd::register_with_interest`"
    )]
    #[track_caller]
    pub fn try_with_interest(inner: T, interest: Interest) -> Result<Self, AsyncFdRegisterError<T>> {
        // SAFETY: not upheld by the type system; the deprecation says so.
        unsafe { Self::register_with_interest(inner, interest) }
    }

    /// The object.
    pub fn get_ref(&self) -> &T {
        self.inner.as_ref().expect("present until into_inner")
    }

    /// The object, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.as_mut().expect("present until into_inner")
    }

    /// Deregisters the descriptor and gives the object back.
    pub fn into_inner(mut self) -> T {
        // Deregister first, while the descriptor is still open: dropping `io` does it.
        let inner = self.inner.take().expect("present until into_inner");
        drop(self);
        inner
    }

    /// Polls for read readiness. Only the last task to poll is woken (use
    /// [`readable`](Self::readable) to wait from several tasks).
    pub fn poll_read_ready<'a>(&'a self, cx: &mut Context<'_>) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        let event = ready!(self.io.poll_read_ready(cx))?;
        Poll::Ready(Ok(AsyncFdReadyGuard {
            async_fd: self,
            event: Some(masked(event, Direction::Read)),
        }))
    }

    /// [`poll_read_ready`](Self::poll_read_ready) with a guard that gives mutable access.
    pub fn poll_read_ready_mut<'a>(
        &'a mut self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyMutGuard<'a, T>>> {
        let event = ready!(self.io.poll_read_ready(cx))?;
        let event = Some(masked(event, Direction::Read));
        Poll::Ready(Ok(AsyncFdReadyMutGuard { async_fd: self, event }))
    }

    /// Polls for write readiness. Only the last task to poll is woken.
    pub fn poll_write_ready<'a>(&'a self, cx: &mut Context<'_>) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        let event = ready!(self.io.poll_write_ready(cx))?;
        Poll::Ready(Ok(AsyncFdReadyGuard {
            async_fd: self,
            event: Some(masked(event, Direction::Write)),
        }))
    }

    /// [`poll_write_ready`](Self::poll_write_ready) with a guard that gives mutable access.
    pub fn poll_write_ready_mut<'a>(
        &'a mut self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyMutGuard<'a, T>>> {
        let event = ready!(self.io.poll_write_ready(cx))?;
        let event = Some(masked(event, Direction::Write));
        Poll::Ready(Ok(AsyncFdReadyMutGuard { async_fd: self, event }))
    }

    /// Waits until any readiness in `interest` is there. Several tasks may wait at
    /// once; each is woken. Readiness outside `interest` (say, readable while waiting
    /// for priority data or an error) does not end the wait.
    pub async fn ready(&self, interest: Interest) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        let event = poll_fn(|cx| self.poll_interest(cx, interest)).await?;
        Ok(AsyncFdReadyGuard {
            async_fd: self,
            event: Some(event),
        })
    }

    /// [`ready`](Self::ready) with a guard that gives mutable access.
    pub async fn ready_mut(&mut self, interest: Interest) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        let event = poll_fn(|cx| self.poll_interest(cx, interest)).await?;
        Ok(AsyncFdReadyMutGuard {
            async_fd: self,
            event: Some(event),
        })
    }

    /// Waits until the descriptor is readable.
    pub async fn readable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        self.ready(Interest::READABLE).await
    }

    /// Waits until the descriptor is readable; the guard gives mutable access.
    pub async fn readable_mut(&mut self) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        self.ready_mut(Interest::READABLE).await
    }

    /// Waits until the descriptor is writable.
    pub async fn writable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        self.ready(Interest::WRITABLE).await
    }

    /// Waits until the descriptor is writable; the guard gives mutable access.
    pub async fn writable_mut(&mut self) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        self.ready_mut(Interest::WRITABLE).await
    }

    /// Runs `f` each time the descriptor is ready for `interest`, until it returns
    /// something other than `WouldBlock` (which clears the readiness and waits again).
    pub async fn async_io<R>(&self, interest: Interest, mut f: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        loop {
            let mut guard = self.ready(interest).await?;
            match guard.try_io(|fd| f(fd.get_ref())) {
                Ok(result) => return result,
                Err(TryIoError(())) => continue,
            }
        }
    }

    /// [`async_io`](Self::async_io) with mutable access to the object.
    pub async fn async_io_mut<R>(
        &mut self,
        interest: Interest,
        mut f: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        loop {
            let mut guard = self.ready_mut(interest).await?;
            match guard.try_io(|fd| f(fd.get_mut())) {
                Ok(result) => return result,
                Err(TryIoError(())) => continue,
            }
        }
    }

    /// Runs `f` once if the descriptor was last seen ready for `interest`; otherwise,
    /// or if `f` returns `WouldBlock` (which clears the readiness), `WouldBlock`.
    pub fn try_io<R>(&self, interest: Interest, f: impl FnOnce(&T) -> io::Result<R>) -> io::Result<R> {
        self.io.try_io(interest.direction(), |_| f(self.get_ref()))
    }

    /// [`try_io`](Self::try_io) with mutable access to the object.
    pub fn try_io_mut<R>(&mut self, interest: Interest, f: impl FnOnce(&mut T) -> io::Result<R>) -> io::Result<R> {
        let inner = self.inner.as_mut().expect("present until into_inner");
        self.io.try_io(interest.direction(), |_| f(inner))
    }

    /// Ready when a readiness in `interest` is there, masked to `interest`. An event
    /// with none of it (readable while only errors are wanted) is cleared, so the wait
    /// goes on until a new event instead of returning at once forever.
    fn poll_interest(&self, cx: &mut Context<'_>, interest: Interest) -> Poll<io::Result<ReadyEvent>> {
        let mask = interest.ready_mask();
        let waits_read = interest.is_readable() || interest.is_priority() || interest.is_error();
        let directions = [
            (waits_read, Direction::Read),
            (interest.is_writable(), Direction::Write),
        ];
        loop {
            let mut found: Option<ReadyEvent> = None;
            let mut uninteresting: [Option<ReadyEvent>; 2] = [None, None];
            for (slot, (wanted, direction)) in uninteresting.iter_mut().zip(directions) {
                if !wanted {
                    continue;
                }
                let Poll::Ready(event) = self.io.poll_ready_shared(cx, direction) else {
                    continue;
                };
                let event = event?;
                if (event.ready & mask).is_empty() {
                    *slot = Some(event);
                    continue;
                }
                let mut kept = event;
                kept.ready = event.ready & mask;
                if let Some(earlier) = found {
                    kept.ready |= earlier.ready;
                }
                found = Some(kept);
            }
            if let Some(event) = found {
                return Poll::Ready(Ok(event));
            }
            if uninteresting.iter().all(Option::is_none) {
                return Poll::Pending;
            }
            for event in uninteresting.into_iter().flatten() {
                self.io.clear_readiness(event);
            }
        }
    }
}

/// `event` reduced to the readiness a wait on `direction` reports: its own bits, and
/// an error (which ends waits in both directions).
fn masked(mut event: ReadyEvent, direction: Direction) -> ReadyEvent {
    let mask = match direction {
        Direction::Read => Ready::READABLE | Ready::READ_CLOSED | Ready::PRIORITY,
        Direction::Write => Ready::WRITABLE | Ready::WRITE_CLOSED,
    };
    event.ready = event.ready & (mask | Ready::ERROR);
    event
}

impl<T: AsRawFd> AsRawFd for AsyncFd<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.get_ref().as_raw_fd()
    }
}

impl<T: AsRawFd> AsFd for AsyncFd<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: `register`'s contract keeps the descriptor open while the AsyncFd
        // holds the object, which outlives this borrow.
        unsafe { BorrowedFd::borrow_raw(self.as_raw_fd()) }
    }
}

impl<T: AsRawFd + fmt::Debug> fmt::Debug for AsyncFd<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncFd").field("inner", &self.inner).finish()
    }
}

impl<'a, T: AsRawFd> AsyncFdReadyGuard<'a, T> {
    /// Forgets the readiness (an operation found `WouldBlock`): the next wait waits
    /// for a new event. A newer event that arrived meanwhile is kept.
    pub fn clear_ready(&mut self) {
        if let Some(event) = self.event.take() {
            self.async_fd.io.clear_readiness(event);
        }
    }

    /// Forgets only the readiness in `ready` (say, writable, after a write found
    /// `WouldBlock`, while readable stays).
    pub fn clear_ready_matching(&mut self, ready: Ready) {
        self.event = clear_matching(&self.async_fd.io, self.event.take(), ready);
    }

    /// Keeps the readiness when the guard is dropped (what dropping does anyway).
    pub fn retain_ready(&mut self) {
        self.event = None;
    }

    /// The readiness this guard saw.
    pub fn ready(&self) -> Ready {
        self.event.map_or(Ready::EMPTY, |e| e.ready)
    }

    /// Runs `f`; if it returns `WouldBlock`, clears the readiness and returns
    /// `Err(TryIoError)`, else `Ok` of its result.
    pub fn try_io<R>(&mut self, f: impl FnOnce(&'a AsyncFd<T>) -> io::Result<R>) -> Result<io::Result<R>, TryIoError> {
        match f(self.async_fd) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.clear_ready();
                Err(TryIoError(()))
            }
            result => Ok(result),
        }
    }

    /// The `AsyncFd`.
    pub fn get_ref(&self) -> &'a AsyncFd<T> {
        self.async_fd
    }

    /// The object inside the `AsyncFd`.
    pub fn get_inner(&self) -> &'a T {
        self.async_fd.get_ref()
    }
}

impl<T: AsRawFd> AsyncFdReadyMutGuard<'_, T> {
    /// See [`AsyncFdReadyGuard::clear_ready`].
    pub fn clear_ready(&mut self) {
        if let Some(event) = self.event.take() {
            self.async_fd.io.clear_readiness(event);
        }
    }

    /// See [`AsyncFdReadyGuard::clear_ready_matching`].
    pub fn clear_ready_matching(&mut self, ready: Ready) {
        self.event = clear_matching(&self.async_fd.io, self.event.take(), ready);
    }

    /// See [`AsyncFdReadyGuard::retain_ready`].
    pub fn retain_ready(&mut self) {
        self.event = None;
    }

    /// The readiness this guard saw.
    pub fn ready(&self) -> Ready {
        self.event.map_or(Ready::EMPTY, |e| e.ready)
    }

    /// Runs `f` with the `AsyncFd`; on `WouldBlock`, clears the readiness and returns
    /// `Err(TryIoError)`.
    pub fn try_io<R>(&mut self, f: impl FnOnce(&mut AsyncFd<T>) -> io::Result<R>) -> Result<io::Result<R>, TryIoError> {
        match f(self.async_fd) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.clear_ready();
                Err(TryIoError(()))
            }
            result => Ok(result),
        }
    }

    /// The `AsyncFd`.
    pub fn get_ref(&self) -> &AsyncFd<T> {
        self.async_fd
    }

    /// The `AsyncFd`, mutably.
    pub fn get_mut(&mut self) -> &mut AsyncFd<T> {
        self.async_fd
    }

    /// The object inside the `AsyncFd`.
    pub fn get_inner(&self) -> &T {
        self.async_fd.get_ref()
    }

    /// The object inside the `AsyncFd`, mutably.
    pub fn get_inner_mut(&mut self) -> &mut T {
        self.async_fd.get_mut()
    }
}

/// Clears the `ready` part of `event`; returns what is left of it, if anything.
fn clear_matching(io: &PollEvented<FdSource>, event: Option<ReadyEvent>, ready: Ready) -> Option<ReadyEvent> {
    let mut event = event?;
    let mut cleared = event;
    cleared.ready = event.ready & ready;
    io.clear_readiness(cleared);
    event.ready = event.ready - ready;
    (!event.ready.is_empty()).then_some(event)
}

impl<T: AsRawFd + fmt::Debug> fmt::Debug for AsyncFdReadyGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadyGuard").field("async_fd", self.async_fd).finish()
    }
}

impl<T: AsRawFd + fmt::Debug> fmt::Debug for AsyncFdReadyMutGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutReadyGuard")
            .field("async_fd", &self.async_fd)
            .finish()
    }
}

impl fmt::Display for TryIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the operation would block; wait for readiness again")
    }
}

impl Error for TryIoError {}

/// The name [`AsyncFdRegisterError`] had before tokio 1.52.
#[deprecated(note = "renamed `AsyncFdRegisterError`")]
pub type AsyncFdTryNewError<T> = AsyncFdRegisterError<T>;

impl<T> AsyncFdRegisterError<T> {
    /// The object given to register, and why registering failed.
    pub fn into_parts(self) -> (T, io::Error) {
        (self.inner, self.cause)
    }
}

impl<T> fmt::Display for AsyncFdRegisterError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.cause, f)
    }
}

impl<T> fmt::Debug for AsyncFdRegisterError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.cause, f)
    }
}

impl<T> Error for AsyncFdRegisterError<T> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.cause)
    }
}

impl<T> From<AsyncFdRegisterError<T>> for io::Error {
    fn from(e: AsyncFdRegisterError<T>) -> io::Error {
        e.cause
    }
}
