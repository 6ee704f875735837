//! tokio-shaped I/O: the traits, extension traits and utilities of `tokio::io`, plus
//! netloop's `Interest` and `Ready`.
//!
//! The traits *are* tokio's (`tokio::io::AsyncRead`, ...), re-exported from tokio built
//! with only its `io-util` feature (no tokio runtime, net or time code is compiled in).
//! netloop's sockets implement them, so hyper, tokio-util codecs and friends run on
//! netloop unchanged. The utilities that never wait on a socket (`repeat`, `sink`,
//! `empty`, `duplex`, `simplex`, the `copy` family) are netloop's own, so that they
//! spend netloop's cooperative budget (see `util`).

pub use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncSeek, AsyncSeekExt, AsyncWrite, AsyncWriteExt,
    BufReader, BufStream, BufWriter, Error, ErrorKind, Join, Lines, ReadBuf, ReadHalf, Result, SeekFrom, Split, Take,
    WriteHalf, join, split,
};

mod util;

pub use util::{
    DuplexStream, Empty, Repeat, SimplexStream, Sink, copy, copy_bidirectional, copy_bidirectional_with_sizes,
    copy_buf, duplex, empty, repeat, simplex, sink,
};

pub use netloop_reactor::io::Ready;

use std::ops;

/// Readiness to wait for (tokio's `io::Interest`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Interest(u8);

impl Interest {
    /// Readable.
    pub const READABLE: Interest = Interest(0b01);
    /// Writable.
    pub const WRITABLE: Interest = Interest(0b10);

    /// True if readable interest is included.
    pub const fn is_readable(self) -> bool {
        self.0 & Interest::READABLE.0 != 0
    }

    /// True if writable interest is included.
    pub const fn is_writable(self) -> bool {
        self.0 & Interest::WRITABLE.0 != 0
    }

    /// Both interests.
    pub const fn add(self, other: Interest) -> Interest {
        Interest(self.0 | other.0)
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
