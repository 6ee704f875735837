//! `AsyncFdRegisterError`: a registration that failed, with the object given back.

use std::error::Error;
use std::fmt;
use std::io;

/// Registering an [`AsyncFd`](super::AsyncFd) failed; the object comes back with the cause (tokio's
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
    pub(super) inner: T,
    pub(super) cause: io::Error,
}

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
