//! The descriptor a ring socket's operations name.
//!
//! Invariant: every operation a ring socket submits names its [`RingFd`], a
//! close-on-exec duplicate of the socket's own descriptor, which the ring socket owns.
//! Each operation holds the ring socket (`Arc`) until its last completion, so that
//! number stays this socket's for as long as the kernel may act on it, however early
//! the stream, datagram socket or listener closes its own descriptor: nothing the ring
//! does can reach another file through a reused number.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use crate::sys::socket;

/// A ring socket's own descriptor, closed with the last holder of the ring socket.
#[derive(Debug)]
pub(crate) struct RingFd(OwnedFd);

impl RingFd {
    /// A duplicate of `socket`'s descriptor; `None` if no descriptor is left for it
    /// (the socket then stays on readiness).
    pub(crate) fn duplicate(socket: &impl AsRawFd) -> Option<RingFd> {
        // SAFETY: `socket` is borrowed for this call, and its descriptor is open while
        // it lives.
        let fd = unsafe { BorrowedFd::borrow_raw(socket.as_raw_fd()) };
        socket::duplicate(fd).ok().map(RingFd)
    }

    /// The number operations name.
    pub(crate) fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// The descriptor, for a call on the socket.
    pub(crate) fn borrow(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}
