//! A UDP socket on io_uring: a one-shot `recvmsg` that owns its memory is armed when a
//! receive finds nothing, and its datagram waits here for the next receive; while
//! datagrams keep coming, receives take them with `recvfrom(2)` at once. Sends are the
//! caller's own `sendto`, waiting on a one-shot write poll only when the socket says
//! `WouldBlock`.
//!
//! ```text
//!   receiver task                                  loop (completions)
//!   recv_from: datagram held? copy it out (cut  ◀─ recvmsg done: its datagram (bytes,
//!     to fit), readable (nothing re-armed)           sender) or error held, receivers
//!   : recvmsg armed? wait for it                     woken; nothing re-armed until a
//!   : none armed: recvfrom(2) now; would block:      receive finds nothing
//!     arm the recvmsg, wait
//!   peek: as recv_from, leaving the datagram held
//!   readable: datagram held or POLLIN seen? ready ◀─ poll done: readable, receivers woken
//!     : wait (a one-shot POLLIN poll if nothing
//!     is armed)
//!
//!   sender task
//!   send_to: writable? sendto(2) now (its error ◀─ write poll done: writable, senders
//!     is the caller's at once); would block:        woken
//!     not writable, arm a POLLOUT poll, wait
//! ```
//!
//! Ownership: a `recvmsg`'s header, `iovec`, address and 64 KiB buffer are one heap
//! allocation ([`RecvMsgMemory`]) that the operation owns in the loop's op table from
//! its submission to its completion; the completion hands it back here (holding the
//! datagram until it is taken, else kept for the next receive). A dropped socket's
//! operations are cancelled; their memory stays in the table until their completions.
//!
//! Invariants:
//! - The socket owns its own descriptor (`keeper`, a duplicate of the socket's): every
//!   operation names that number, which stays open until the last operation naming it
//!   completed (each holds the socket's `Arc`).
//! - At most one `recvmsg`, one read poll and one write poll are in flight; a
//!   `recvmsg` is submitted only while no datagram is held, so datagrams are taken in
//!   the order the kernel queued them (a `recvfrom(2)` runs only while no `recvmsg` is
//!   armed, so it cannot overtake one).
//! - Once `detached` (the socket left the ring) or `released` (dropped), nothing new is
//!   submitted; a detached socket's held datagram is still the next receive's.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use super::ring_socket::{OnRing, Waiters, reap_now, wake_all};
use crate::completion::{CompleteCx, Completion, CompletionTarget, OpKind, OpMemory, RingDriver};
use crate::core::Core;
use crate::shared::Shared;
use crate::sync::lock;
use crate::sys::op;
use crate::sys::ring::RecvMsgMemory;
use crate::sys::socket::{self, EAGAIN, ECANCELED, EINTR};

/// The largest datagram a receive takes whole: more than UDP's largest payload
/// (65,507 bytes over IPv4, 65,527 over IPv6 without jumbograms).
pub(crate) const MAX_DATAGRAM: usize = 64 * 1024;

/// What the last `recvmsg` brought and nobody has taken yet.
#[derive(Debug)]
enum Held {
    Datagram { mem: RecvMsgMemory, len: usize },
    Error(i32),
}

#[derive(Debug, Default)]
struct State {
    held: Option<Held>,
    /// The `recvmsg` in flight: its op key.
    recv: Option<usize>,
    /// The read poll in flight (`readable` with nothing armed): its op key.
    read_poll: Option<usize>,
    /// A read poll said readable and no receive has found nothing since.
    readable: bool,
    /// The ring has told of the socket once (a receive or read poll completed). Until
    /// then a receive waits rather than trying the socket at once: tokio's readiness
    /// starts empty, so a new socket's first receive waits for the driver even with a
    /// datagram queued (tokio's `coop_budget_udp_send_recv` counts on that yield).
    heard_from_ring: bool,
    /// Memory for the next `recvmsg`.
    spare: Option<RecvMsgMemory>,
    reader: Waiters,
    /// Writable as tokio counts it: cleared when a send would block, set again when
    /// the write poll fires.
    writable: bool,
    /// The write poll in flight: its op key.
    write_poll: Option<usize>,
    writer: Waiters,
    /// The loop shut down: every operation fails from now on.
    loop_gone: bool,
    /// The socket left the ring: nothing new is submitted.
    detached: bool,
    /// The socket is gone.
    released: bool,
}

impl State {
    fn stopped(&self) -> bool {
        self.loop_gone || self.detached || self.released
    }

    fn in_flight(&self) -> impl Iterator<Item = usize> {
        [self.recv, self.read_poll, self.write_poll].into_iter().flatten()
    }
}

/// A UDP socket on its loop's ring. Owned jointly by its `DatagramIo` and its
/// operations.
pub(crate) struct RingDatagram {
    /// The socket's own descriptor (a duplicate), closed with the last holder.
    keeper: OwnedFd,
    shared: Arc<Shared>,
    state: Mutex<State>,
}

impl std::fmt::Debug for RingDatagram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingDatagram")
            .field("fd", &self.fd())
            .finish_non_exhaustive()
    }
}

fn loop_gone_error() -> io::Error {
    crate::error::LoopShutDown::io_error()
}

impl OnRing for RingDatagram {
    fn loop_shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn on_loop_gone(&self) {
        self.loop_gone();
    }
}

impl RingDatagram {
    /// A socket of `core`'s loop over a duplicate of `fd`; `None` if the loop has no
    /// ring or no descriptor is left for the duplicate (the socket then stays on
    /// readiness).
    pub(crate) fn new(core: &Core, fd: RawFd) -> Option<Arc<RingDatagram>> {
        core.ring.borrow().as_ref()?;
        // SAFETY: the caller's socket holds `fd` open for this call.
        let keeper = socket::duplicate(unsafe { BorrowedFd::borrow_raw(fd) }).ok()?;
        Some(Arc::new(RingDatagram {
            keeper,
            shared: core.shared.clone(),
            state: Mutex::new(State {
                writable: true,
                ..State::default()
            }),
        }))
    }

    fn fd(&self) -> RawFd {
        self.keeper.as_raw_fd()
    }

    /// The loop is gone: every waiter hears it.
    fn loop_gone(&self) {
        let mut state = lock(&self.state);
        state.loop_gone = true;
        let wakers = [state.reader.take(), state.writer.take()];
        drop(state);
        wake_all(wakers);
    }

    /// Submits `entry` (of `kind`, owning `mem`) and returns its key, or marks the loop
    /// gone and returns `None`.
    ///
    /// # Safety
    ///
    /// `entry` names only this socket's descriptor and `mem`'s heap memory.
    unsafe fn submit(
        self: &Arc<Self>,
        state: &mut State,
        driver: Option<&mut RingDriver>,
        kind: OpKind,
        entry: op::Entry,
        mem: Option<OpMemory>,
    ) -> Option<usize> {
        let driver = driver?;
        // SAFETY: the operation holds this socket, which keeps its descriptor open
        // until the operation's completion; `mem` goes with the operation (the caller
        // promises the entry names nothing else).
        match unsafe { driver.submit(self.clone(), kind, entry, mem) } {
            Ok(key) => Some(key),
            Err(_) => {
                state.loop_gone = true;
                None
            }
        }
    }

    // ---- receiving -----------------------------------------------------------------

    /// Arms the `recvmsg` unless one is armed, a datagram is held or the socket stopped.
    fn arm_recv(self: &Arc<Self>) {
        self.with_driver(|this, driver| {
            let mut state = lock(&this.state);
            let woken = this.submit_recv(&mut state, driver);
            drop(state);
            wake_all([woken]);
        });
    }

    /// Submits the `recvmsg` if it may be; returns the receivers to wake if the loop is
    /// gone.
    fn submit_recv(self: &Arc<Self>, state: &mut State, driver: Option<&mut RingDriver>) -> Waiters {
        if state.recv.is_some() || state.held.is_some() || state.stopped() {
            return Waiters::default();
        }
        let mut mem = state.spare.take().unwrap_or_else(|| RecvMsgMemory::new(MAX_DATAGRAM));
        let msg = mem.prepare();
        let entry = op::recv_msg(self.fd(), msg);
        // SAFETY: the entry names this socket's descriptor and `mem`'s header, which
        // points only into `mem` (`prepare`); `mem` goes with the operation.
        let key = unsafe { self.submit(state, driver, OpKind::RecvMsg, entry, Some(OpMemory::Msg(mem))) };
        match key {
            Some(key) => {
                state.recv = Some(key);
                state.readable = false;
                Waiters::default()
            }
            None => {
                state.loop_gone = true;
                state.reader.take()
            }
        }
    }

    /// Arms the read poll unless a receive or a poll is armed.
    fn arm_read_poll(self: &Arc<Self>) {
        self.with_driver(|this, driver| {
            let mut state = lock(&this.state);
            if state.recv.is_some() || state.read_poll.is_some() || state.held.is_some() || state.stopped() {
                return;
            }
            let entry = op::poll_readable(this.fd());
            // SAFETY: a poll names only the descriptor.
            let key = unsafe { this.submit(&mut state, driver, OpKind::Poll, entry, None) };
            let woken = match key {
                Some(key) => {
                    state.read_poll = Some(key);
                    Waiters::default()
                }
                None => {
                    state.loop_gone = true;
                    state.reader.take()
                }
            };
            drop(state);
            wake_all([woken]);
        });
    }

    /// Receives one datagram into `buf` (cut to fit; `peek` leaves it for the next
    /// receive): the one held, else (nothing armed) `direct`'s `recvfrom(2)`, else
    /// `Pending` with `waiter`'s waker kept (`shared`: beside the others) and the
    /// `recvmsg` armed: the ring receives only for a socket that found nothing. With
    /// no waiter, `Pending` means `WouldBlock`.
    pub(crate) fn poll_recv(
        self: &Arc<Self>,
        waiter: Option<(&Context<'_>, bool)>,
        buf: &mut [u8],
        peek: bool,
        direct: impl FnOnce(&mut [u8]) -> io::Result<(usize, SocketAddr)>,
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        let mut state = lock(&self.state);
        if let Some(result) = Self::take_held(&mut state, buf, peek) {
            // Not armed again: while datagrams keep coming, the next receives take them
            // with `recvfrom` at once (one call each, as on epoll, where a receive armed
            // ahead would hand over one per loop turn); the first that finds nothing
            // arms the ring's receive. Readable until then, as tokio counts it.
            if state.held.is_none() {
                state.readable = true;
            }
            return Poll::Ready(result);
        }
        if state.loop_gone {
            return Poll::Ready(Err(loop_gone_error()));
        }
        if state.recv.is_none() && state.heard_from_ring {
            // Nothing armed, so nothing received ahead of the socket's queue.
            match direct(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                result => return Poll::Ready(result),
            }
        }
        state.readable = false;
        let displaced = match waiter {
            Some((cx, shared)) => state.reader.wait(cx, shared),
            None => Vec::new(),
        };
        let arm = state.recv.is_none() && !state.stopped();
        drop(state);
        displaced.into_iter().for_each(Waker::wake);
        if arm {
            self.arm_recv();
        }
        Poll::Pending
    }

    /// The held datagram (or error) copied into `buf`; taken unless `peek` (an error is
    /// taken either way, as the socket's pending error is). `None` if nothing is held.
    fn take_held(state: &mut State, buf: &mut [u8], peek: bool) -> Option<io::Result<(usize, SocketAddr)>> {
        match state.held.take()? {
            Held::Error(errno) => Some(Err(io::Error::from_raw_os_error(errno))),
            Held::Datagram { mem, len } => {
                let bytes = mem.bytes(len);
                let n = bytes.len().min(buf.len());
                buf[..n].copy_from_slice(&bytes[..n]);
                let result = mem.sender().map(|from| (n, from));
                if peek {
                    state.held = Some(Held::Datagram { mem, len });
                } else {
                    state.spare = Some(mem);
                }
                Some(result)
            }
        }
    }

    /// Ready when a receive would not wait: a datagram or error is held, or the read
    /// poll said readable and no receive has found nothing since. `shared`: `cx`'s task
    /// is woken with every other task waiting so (`readable`); otherwise only the last
    /// task to poll is.
    pub(crate) fn poll_read_ready(self: &Arc<Self>, cx: &Context<'_>, shared: bool) -> Poll<io::Result<()>> {
        let mut state = lock(&self.state);
        if state.held.is_some() || (state.readable && state.recv.is_none()) {
            return Poll::Ready(Ok(()));
        }
        if state.loop_gone {
            return Poll::Ready(Err(loop_gone_error()));
        }
        let displaced = state.reader.wait(cx, shared);
        let arm = state.recv.is_none() && state.read_poll.is_none() && !state.stopped();
        drop(state);
        displaced.into_iter().for_each(Waker::wake);
        if arm {
            self.arm_read_poll();
        }
        Poll::Pending
    }

    // ---- sending -------------------------------------------------------------------

    /// Ready while the socket is writable as tokio counts it (until a send would
    /// block); else `cx`'s waker is kept and the write poll armed.
    pub(crate) fn poll_write_ready(self: &Arc<Self>, waiter: Option<(&Context<'_>, bool)>) -> Poll<io::Result<()>> {
        let mut state = lock(&self.state);
        if state.loop_gone {
            return Poll::Ready(Err(loop_gone_error()));
        }
        if state.writable {
            return Poll::Ready(Ok(()));
        }
        let displaced = match waiter {
            Some((cx, shared)) => state.writer.wait(cx, shared),
            None => Vec::new(),
        };
        let arm = state.write_poll.is_none() && !state.stopped();
        drop(state);
        displaced.into_iter().for_each(Waker::wake);
        if arm {
            self.arm_write_poll();
        }
        Poll::Pending
    }

    /// A send would block: not writable until the write poll fires.
    pub(crate) fn send_would_block(self: &Arc<Self>) {
        let mut state = lock(&self.state);
        state.writable = false;
        let arm = state.write_poll.is_none() && !state.stopped();
        drop(state);
        if arm {
            self.arm_write_poll();
        }
    }

    fn arm_write_poll(self: &Arc<Self>) {
        self.with_driver(|this, driver| {
            let mut state = lock(&this.state);
            if state.write_poll.is_some() || state.writable || state.stopped() {
                return;
            }
            let entry = op::poll_writable(this.fd());
            // SAFETY: a poll names only the descriptor.
            let key = unsafe { this.submit(&mut state, driver, OpKind::PollOut, entry, None) };
            let woken = match key {
                Some(key) => {
                    state.write_poll = Some(key);
                    Waiters::default()
                }
                None => {
                    state.loop_gone = true;
                    state.writer.take()
                }
            };
            drop(state);
            wake_all([woken]);
        });
    }

    // ---- leaving -------------------------------------------------------------------

    /// The readiness a socket leaving the ring starts from on readiness.
    pub(crate) fn readiness(&self) -> crate::io::Ready {
        let state = lock(&self.state);
        let mut ready = crate::io::Ready::EMPTY;
        if state.held.is_some() || state.readable {
            ready |= crate::io::Ready::READABLE;
        }
        if state.writable {
            ready |= crate::io::Ready::WRITABLE;
        }
        ready
    }

    /// The socket leaves the ring for good (readiness asked for, `into_std`): nothing
    /// new is submitted, and what is in flight is cancelled — on the loop's thread at
    /// once, with the completions already posted taken in (so a datagram the ring
    /// received is held here before anything reads the socket directly); elsewhere the
    /// cancels are queued. `release`: the socket is gone, and the port is free once the
    /// cancels complete (at once on the loop's thread).
    pub(crate) fn stop(self: &Arc<Self>, release: bool) {
        {
            let mut state = lock(&self.state);
            state.detached = true;
            state.released |= release;
        }
        let done = reap_now(&self.shared, |driver| {
            let keys: Vec<usize> = lock(&self.state).in_flight().collect();
            for key in keys {
                let _ = driver.ring.cancel_now(key as u64);
            }
        });
        if !done {
            self.with_driver(|this, driver| {
                let Some(driver) = driver else { return };
                let keys: Vec<usize> = lock(&this.state).in_flight().collect();
                for key in keys {
                    driver.cancel(key);
                }
            });
        }
    }

    /// After leaving the ring: the held datagram (or error) into `buf`, or `Pending`
    /// (`waiter`'s waker kept) while a cancelled `recvmsg` may still bring one; `None`
    /// once neither is left (readiness takes over).
    pub(crate) fn take_leftover(
        &self,
        waiter: Option<(&Context<'_>, bool)>,
        buf: &mut [u8],
        peek: bool,
    ) -> Option<Poll<io::Result<(usize, SocketAddr)>>> {
        let mut state = lock(&self.state);
        if let Some(result) = Self::take_held(&mut state, buf, peek) {
            return Some(Poll::Ready(result));
        }
        state.recv?;
        let displaced = match waiter {
            Some((cx, shared)) => state.reader.wait(cx, shared),
            None => Vec::new(),
        };
        drop(state);
        displaced.into_iter().for_each(Waker::wake);
        Some(Poll::Pending)
    }

    /// True while a datagram received before the socket left the ring is held, or may
    /// still arrive from the cancelled `recvmsg`.
    pub(crate) fn has_leftover(&self) -> bool {
        let state = lock(&self.state);
        state.held.is_some() || state.recv.is_some()
    }
}

impl CompletionTarget for RingDatagram {
    fn complete(self: Arc<Self>, kind: OpKind, c: Completion, mem: Option<OpMemory>, cx: &mut CompleteCx<'_>) {
        let mut state = lock(&self.state);
        let cancelled = c.result == -ECANCELED;
        if cancelled && cx.driver.is_closing() {
            state.loop_gone = true;
        }
        let mut woken = Waiters::default();
        match kind {
            OpKind::RecvMsg => {
                state.recv = None;
                state.heard_from_ring = true;
                let mem = mem.and_then(OpMemory::into_msg);
                match c.result {
                    len if len >= 0 => match mem {
                        Some(mem) if !state.released => {
                            state.held = Some(Held::Datagram { mem, len: len as usize });
                        }
                        _ => {}
                    },
                    _ if cancelled => state.spare = mem,
                    // Nothing after all: armed again (the kernel normally waits itself).
                    r if r == -EAGAIN || r == -EINTR => {
                        state.spare = mem;
                        woken = self.submit_recv(&mut state, Some(cx.driver));
                    }
                    r => {
                        state.spare = mem;
                        if !state.released {
                            state.held = Some(Held::Error(-r));
                        }
                    }
                }
                woken = woken.and(state.reader.take());
            }
            OpKind::Poll => {
                state.read_poll = None;
                state.readable = true;
                state.heard_from_ring = true;
                woken = state.reader.take();
            }
            OpKind::PollOut => {
                state.write_poll = None;
                state.writable = true;
                woken = state.writer.take();
            }
            OpKind::Recv | OpKind::Send | OpKind::Accept => {
                unreachable!("a datagram socket submits only recvmsg and polls")
            }
        }
        if state.loop_gone {
            woken = woken.and(state.reader.take()).and(state.writer.take());
        }
        drop(state);
        for w in woken {
            cx.wake(w);
        }
    }
}
