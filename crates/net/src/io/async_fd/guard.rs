//! The guards of a readiness an `AsyncFd` reported, until it is cleared.

use std::error::Error;
use std::fmt;
use std::io;
use std::os::fd::AsRawFd;

use netloop_reactor::io::{PollEvented, Ready, ReadyEvent};

use super::{AsyncFd, FdSource};

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
    pub(super) async_fd: &'a AsyncFd<T>,
    pub(super) event: Option<ReadyEvent>,
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
    pub(super) async_fd: &'a mut AsyncFd<T>,
    pub(super) event: Option<ReadyEvent>,
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

/// What both guards do with the readiness they hold: they have the fields `async_fd`
/// (the `AsyncFd`, by shared or mutable reference) and `event` (the readiness, `None`
/// once cleared or retained).
macro_rules! readiness_guard_methods {
    () => {
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

        /// What `try_io` returns for `result`: `Err(TryIoError)` after clearing the
        /// readiness if it is `WouldBlock`, else `Ok(result)`.
        fn unless_would_block<R>(&mut self, result: io::Result<R>) -> Result<io::Result<R>, TryIoError> {
            match result {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.clear_ready();
                    Err(TryIoError(()))
                }
                result => Ok(result),
            }
        }
    };
}

impl<'a, T: AsRawFd> AsyncFdReadyGuard<'a, T> {
    readiness_guard_methods!();

    /// Runs `f`; if it returns `WouldBlock`, clears the readiness and returns
    /// `Err(TryIoError)`, else `Ok` of its result.
    pub fn try_io<R>(&mut self, f: impl FnOnce(&'a AsyncFd<T>) -> io::Result<R>) -> Result<io::Result<R>, TryIoError> {
        let result = f(self.async_fd);
        self.unless_would_block(result)
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
    readiness_guard_methods!();

    /// Runs `f` with the `AsyncFd`; on `WouldBlock`, clears the readiness and returns
    /// `Err(TryIoError)`.
    pub fn try_io<R>(&mut self, f: impl FnOnce(&mut AsyncFd<T>) -> io::Result<R>) -> Result<io::Result<R>, TryIoError> {
        let result = f(self.async_fd);
        self.unless_would_block(result)
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
