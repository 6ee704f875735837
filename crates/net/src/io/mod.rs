//! tokio-shaped I/O: netloop-io's traits, extension traits and utilities (re-exported
//! here, in `tokio::io`'s layout), plus what needs the reactor: [`Interest`],
//! [`Ready`], the standard streams ([`stdin`], [`stdout`], [`stderr`]) and
//! [`AsyncFd`](unix::AsyncFd).
//!
//! The traits are netloop's own ([`netloop_io`]), and every I/O type of this crate
//! implements them. With the feature `tokio-io` (on by default) each also implements
//! the registry tokio's `AsyncRead`/`AsyncWrite` (and `AsyncSeek` where it seeks), so
//! hyper-util's `TokioIo`, tokio-util's codecs and friends take netloop's sockets
//! as they are.

pub use netloop_io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncSeek, AsyncSeekExt, AsyncWrite, AsyncWriteExt,
    BufReader, BufStream, BufWriter, Chain, DuplexStream, Empty, Error, ErrorKind, Join, Lines, ReadBuf, ReadHalf,
    Repeat, Result, SeekFrom, SimplexStream, Sink, Split, Take, WriteHalf, copy, copy_bidirectional,
    copy_bidirectional_with_sizes, copy_buf, duplex, empty, join, repeat, simplex, sink, split,
};

mod async_fd;
mod stdio;

pub use stdio::{Stderr, Stdin, Stdout, stderr, stdin, stdout};

/// Unix-only I/O: [`AsyncFd`](unix::AsyncFd), readiness for any file descriptor.
pub mod unix {
    #[doc(hidden)]
    #[allow(deprecated)]
    pub use super::async_fd::AsyncFdTryNewError;
    pub use super::async_fd::{AsyncFd, AsyncFdReadyGuard, AsyncFdReadyMutGuard, AsyncFdRegisterError, TryIoError};
}

pub use netloop_reactor::io::Ready;

use std::fmt;
use std::io::Read;
use std::ops;

/// Readiness to wait for (tokio's `io::Interest`): what a registration asks the OS to
/// report, and what a readiness wait waits for.
///
/// Interests combine with `|`. A wait for several returns as soon as any is ready,
/// with the [`Ready`] set saying which:
///
/// ```
/// use netloop_net::io::Interest;
/// use netloop_net::unix::UnixStream;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let (a, b) = UnixStream::pair()?;
/// let ready = a.ready(Interest::READABLE | Interest::WRITABLE).await?;
/// assert!(ready.is_writable() && !ready.is_readable()); // room to write, nothing to read
///
/// b.try_write(b"ping")?;
/// let ready = a.ready(Interest::READABLE).await?;
/// assert!(ready.is_readable());
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Interest(u8);

impl Interest {
    /// Readable (data, end of file, a connection to accept).
    pub const READABLE: Interest = Interest(0b0001);
    /// Writable.
    pub const WRITABLE: Interest = Interest(0b0010);
    /// Priority data (`EPOLLPRI`: TCP out-of-band data, a change on a `/proc` or sysfs
    /// file). Linux and Android.
    pub const PRIORITY: Interest = Interest(0b0100);
    /// Errors (the OS always reports them; with this interest alone a wait returns
    /// only for an error, such as one queued by `MSG_ERRQUEUE` timestamping).
    pub const ERROR: Interest = Interest(0b1000);

    /// True if readable interest is included.
    pub const fn is_readable(self) -> bool {
        self.0 & Interest::READABLE.0 != 0
    }

    /// True if writable interest is included.
    pub const fn is_writable(self) -> bool {
        self.0 & Interest::WRITABLE.0 != 0
    }

    /// True if priority interest is included.
    pub const fn is_priority(self) -> bool {
        self.0 & Interest::PRIORITY.0 != 0
    }

    /// True if error interest is included.
    pub const fn is_error(self) -> bool {
        self.0 & Interest::ERROR.0 != 0
    }

    /// Both interests.
    pub const fn add(self, other: Interest) -> Interest {
        Interest(self.0 | other.0)
    }

    /// `self` without `other`; `None` if nothing is left (an interest is never empty).
    pub fn remove(self, other: Interest) -> Option<Interest> {
        let left = self.0 & !other.0;
        (left != 0).then_some(Interest(left))
    }

    /// The mio interest to register with. mio has no error interest (errors are
    /// always reported) and no empty one, so error alone registers as readable; the
    /// readable events are then filtered out by [`ready_mask`](Self::ready_mask).
    pub(crate) fn to_mio(self) -> mio::Interest {
        let mut mio: Option<mio::Interest> = None;
        let mut add = |i: mio::Interest| mio = Some(mio.map_or(i, |m| m | i));
        if self.is_readable() || self.is_error() {
            add(mio::Interest::READABLE);
        }
        if self.is_writable() {
            add(mio::Interest::WRITABLE);
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if self.is_priority() {
            add(mio::Interest::PRIORITY);
        }
        mio.unwrap_or(mio::Interest::READABLE)
    }

    /// The side of a registration an operation of this interest waits on: the read
    /// side if it reads at all (priority data and errors are reported there too).
    pub(crate) fn direction(self) -> netloop_reactor::io::Direction {
        if self.is_readable() || self.is_priority() || self.is_error() {
            netloop_reactor::io::Direction::Read
        } else {
            netloop_reactor::io::Direction::Write
        }
    }

    /// The readiness bits that answer this interest.
    pub(crate) fn ready_mask(self) -> Ready {
        let mut mask = Ready::EMPTY;
        if self.is_readable() {
            mask |= Ready::READABLE | Ready::READ_CLOSED;
        }
        if self.is_writable() {
            mask |= Ready::WRITABLE | Ready::WRITE_CLOSED;
        }
        if self.is_priority() {
            mask |= Ready::PRIORITY | Ready::READ_CLOSED;
        }
        if self.is_error() {
            mask |= Ready::ERROR;
        }
        mask
    }
}

impl fmt::Debug for Interest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (self.is_readable(), "READABLE"),
            (self.is_writable(), "WRITABLE"),
            (self.is_priority(), "PRIORITY"),
            (self.is_error(), "ERROR"),
        ];
        let mut first = true;
        for (_, name) in names.iter().filter(|(set, _)| *set) {
            if !first {
                f.write_str(" | ")?;
            }
            f.write_str(name)?;
            first = false;
        }
        Ok(())
    }
}

impl ops::BitOr for Interest {
    type Output = Interest;
    fn bitor(self, rhs: Interest) -> Interest {
        self.add(rhs)
    }
}

impl ops::BitOrAssign for Interest {
    fn bitor_assign(&mut self, rhs: Interest) {
        *self = self.add(rhs);
    }
}

/// Replaces `buf`'s contents with what one read of at most `len` bytes from `rd` gives,
/// retried across `Interrupted`; leaves `buf` empty on an error. A blocking read, for
/// the blocking pool (`File`, the standard streams).
pub(crate) fn read_to_vec(rd: &mut impl Read, buf: &mut Vec<u8>, len: usize) -> std::io::Result<usize> {
    buf.clear();
    buf.resize(len, 0);
    let result = loop {
        match rd.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            result => break result,
        }
    };
    buf.truncate(*result.as_ref().unwrap_or(&0));
    result
}
