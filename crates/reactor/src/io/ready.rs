//! `Ready`: the readiness a registration has seen, as tokio's `io::Ready`.

use std::fmt;
use std::ops;

/// A set of readiness events, as reported by the OS and cached by a registration.
///
/// What a readiness wait (a socket's `ready`, an `AsyncFd` guard) returns. A closed
/// half counts as ready for its direction: the next operation will not wait (a read
/// gives 0 bytes, the end of the stream).
///
/// ```
/// use netloop_reactor::io::Ready;
///
/// let ready = Ready::READABLE | Ready::READ_CLOSED; // data, then the peer's EOF
/// assert!(ready.is_readable() && ready.is_read_closed());
/// assert!(!ready.is_writable());
/// assert!(Ready::READ_CLOSED.is_readable());
/// assert_eq!(ready - Ready::READABLE, Ready::READ_CLOSED);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Ready(u8);

impl Ready {
    /// No readiness.
    pub const EMPTY: Ready = Ready(0);
    /// Readable.
    pub const READABLE: Ready = Ready(0b0_0001);
    /// Writable.
    pub const WRITABLE: Ready = Ready(0b0_0010);
    /// The read half is closed (the peer shut down its write side, or hung up).
    pub const READ_CLOSED: Ready = Ready(0b0_0100);
    /// The write half is closed.
    pub const WRITE_CLOSED: Ready = Ready(0b0_1000);
    /// An error is pending on the socket.
    pub const ERROR: Ready = Ready(0b1_0000);
    /// Priority data is waiting (`EPOLLPRI`: TCP out-of-band data, a change on a
    /// `/proc` or sysfs file); only reported to a registration with priority interest.
    pub const PRIORITY: Ready = Ready(0b10_0000);
    /// Every readiness bit.
    pub const ALL: Ready = Ready(0b11_1111);

    pub(crate) const fn from_bits(bits: u8) -> Ready {
        Ready(bits & Ready::ALL.0)
    }

    pub(crate) const fn bits(self) -> u8 {
        self.0
    }

    pub(crate) fn from_mio(event: &mio::event::Event) -> Ready {
        let mut r = Ready::EMPTY;
        if event.is_readable() {
            r |= Ready::READABLE;
        }
        if event.is_writable() {
            r |= Ready::WRITABLE;
        }
        if event.is_read_closed() {
            r |= Ready::READ_CLOSED;
        }
        if event.is_write_closed() {
            r |= Ready::WRITE_CLOSED;
        }
        if event.is_error() {
            r |= Ready::ERROR;
        }
        if event.is_priority() {
            r |= Ready::PRIORITY;
        }
        r
    }

    /// True if no bit is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// True if readable.
    pub fn is_readable(self) -> bool {
        self.contains(Ready::READABLE) || self.is_read_closed()
    }
    /// True if writable.
    pub fn is_writable(self) -> bool {
        self.contains(Ready::WRITABLE) || self.is_write_closed()
    }
    /// True if the read half is closed.
    pub fn is_read_closed(self) -> bool {
        self.contains(Ready::READ_CLOSED)
    }
    /// True if the write half is closed.
    pub fn is_write_closed(self) -> bool {
        self.contains(Ready::WRITE_CLOSED)
    }
    /// True if an error is pending.
    pub fn is_error(self) -> bool {
        self.contains(Ready::ERROR)
    }
    /// True if priority data is waiting.
    pub fn is_priority(self) -> bool {
        self.contains(Ready::PRIORITY)
    }
    /// True if every bit of `other` is set in `self`.
    pub fn contains(self, other: Ready) -> bool {
        self.0 & other.0 == other.0
    }
}

impl ops::BitOr for Ready {
    type Output = Ready;
    fn bitor(self, rhs: Ready) -> Ready {
        Ready(self.0 | rhs.0)
    }
}
impl ops::BitOrAssign for Ready {
    fn bitor_assign(&mut self, rhs: Ready) {
        self.0 |= rhs.0;
    }
}
impl ops::BitAnd for Ready {
    type Output = Ready;
    fn bitand(self, rhs: Ready) -> Ready {
        Ready(self.0 & rhs.0)
    }
}
impl ops::Sub for Ready {
    type Output = Ready;
    fn sub(self, rhs: Ready) -> Ready {
        Ready(self.0 & !rhs.0)
    }
}

impl fmt::Debug for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ready")
            .field("readable", &self.contains(Ready::READABLE))
            .field("writable", &self.contains(Ready::WRITABLE))
            .field("read_closed", &self.is_read_closed())
            .field("write_closed", &self.is_write_closed())
            .field("error", &self.is_error())
            .field("priority", &self.is_priority())
            .finish()
    }
}

/// Which half of a registration an operation waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Reads (and accepts), and priority data.
    Read,
    /// Writes (and connects).
    Write,
}

impl Direction {
    /// The readiness bits that let an operation in this direction make progress, as
    /// tokio's `Interest::READABLE` and `WRITABLE` count them. An error alone is in
    /// neither: a UDP socket's ICMP error (`EPOLLERR` and nothing else) wakes no
    /// receive, and the next operation that runs for its own reason (a send, a receive
    /// of a datagram) reports it. Waits for `Interest::ERROR` add it
    /// ([`wake_mask`](Self::wake_mask)).
    pub(crate) fn mask(self) -> Ready {
        match self {
            Direction::Read => Ready::READABLE | Ready::READ_CLOSED | Ready::PRIORITY,
            Direction::Write => Ready::WRITABLE | Ready::WRITE_CLOSED,
        }
    }

    /// What wakes this direction's waiters: its [`mask`](Self::mask) and an error, for
    /// the waits on `Interest::ERROR` (they wait on the read side). A woken operation
    /// that finds only the error looks at its mask again and waits on.
    pub(crate) fn wake_mask(self) -> Ready {
        self.mask() | Ready::ERROR
    }
}
