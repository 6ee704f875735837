//! The entries a loop's ring is given, one builder per operation, and the `user_data`
//! values the loop keeps for itself.
//!
//! A builder only describes an operation: nothing reaches the kernel until the entry
//! is pushed ([`Ring::push`](super::ring::Ring::push), which is where the promise that
//! every descriptor and byte it names outlives the operation is made).

use std::os::fd::RawFd;

use io_uring::{opcode, types};

use super::ring::BUF_GROUP;

/// A submission-queue entry, built here and pushed by the ring.
pub(crate) use io_uring::squeue::Entry;

/// `user_data` of the loop's own poll of its epoll instance.
pub(crate) const EPOLL_POLL: u64 = u64::MAX;
/// `user_data` of cancel requests, whose completions say nothing anyone waits for.
pub(crate) const CANCEL: u64 = u64::MAX - 1;

/// A multishot receive on `fd` into the pool's buffer group.
pub(crate) fn recv_multi(fd: RawFd) -> Entry {
    opcode::RecvMulti::new(types::Fd(fd), BUF_GROUP).build()
}

/// A one-shot poll for `fd` becoming readable.
pub(crate) fn poll_readable(fd: RawFd) -> Entry {
    opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32).build()
}

/// A one-shot poll for `fd` becoming writable.
pub(crate) fn poll_writable(fd: RawFd) -> Entry {
    opcode::PollAdd::new(types::Fd(fd), libc::POLLOUT as u32).build()
}

/// A multishot poll for `fd` (the loop's epoll instance) becoming readable.
pub(crate) fn poll_readable_multi(fd: RawFd) -> Entry {
    opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
        .multi(true)
        .build()
}

/// A send of `bytes` on `fd` (at most `u32::MAX` of them) that raises no `SIGPIPE`.
pub(crate) fn send(fd: RawFd, bytes: &[u8]) -> Entry {
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    opcode::Send::new(types::Fd(fd), bytes.as_ptr(), len)
        .flags(libc::MSG_NOSIGNAL)
        .build()
}

/// A multishot accept on the listening `fd`; each connection's descriptor is
/// non-blocking and close-on-exec.
pub(crate) fn accept_multi(fd: RawFd) -> Entry {
    opcode::AcceptMulti::new(types::Fd(fd))
        .flags(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
        .build()
}

/// A one-shot `recvmsg` on `fd` into the header `msg` points to.
pub(crate) fn recv_msg(fd: RawFd, msg: *mut libc::msghdr) -> Entry {
    opcode::RecvMsg::new(types::Fd(fd), msg).build()
}

/// A request to cancel the operation whose `user_data` is `target`; its own
/// `user_data` is [`CANCEL`].
pub(crate) fn cancel(target: u64) -> Entry {
    opcode::AsyncCancel::new(target).build().user_data(CANCEL)
}
