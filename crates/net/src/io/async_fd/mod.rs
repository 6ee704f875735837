//! `AsyncFd`: readiness for any file descriptor, from the loop it is registered with.

mod error;
mod guard;
mod waits;

use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::task::{Context, Poll, ready};

use mio::event::Source;
use mio::unix::SourceFd;
use netloop_reactor::io::{Direction, PollEvented, Ready, ReadyEvent};

pub use error::AsyncFdRegisterError;
#[allow(deprecated)]
pub use error::AsyncFdTryNewError;
pub use guard::{AsyncFdReadyGuard, AsyncFdReadyMutGuard, TryIoError};

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

    /// Readiness in `direction` as its wait reports it (see [`masked`]). Only the last
    /// task to poll is woken.
    fn poll_direction(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<io::Result<ReadyEvent>> {
        let event = match direction {
            Direction::Read => ready!(self.io.poll_read_ready(cx))?,
            Direction::Write => ready!(self.io.poll_write_ready(cx))?,
        };
        Poll::Ready(Ok(masked(event, direction)))
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
                let polled = if interest.is_error() && direction == Direction::Read {
                    self.io.poll_ready_shared_or_error(cx, direction)
                } else {
                    self.io.poll_ready_shared(cx, direction)
                };
                let Poll::Ready(event) = polled else {
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
