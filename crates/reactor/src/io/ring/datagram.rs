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
//! - The socket owns its own descriptor (`keeper`, a [`RingFd`]): every operation names
//!   that number, which stays open until the last operation naming it completed (each
//!   holds the socket's `Arc`).
//! - At most one `recvmsg`, one read poll and one write poll are in flight; a
//!   `recvmsg` is submitted only while no datagram is held, so datagrams are taken in
//!   the order the kernel queued them (a `recvfrom(2)` runs only while no `recvmsg` is
//!   armed, so it cannot overtake one).
//! - Once the socket left the ring or was dropped ([`Lifecycle`]), or its loop is gone,
//!   nothing new is submitted; a socket that left keeps its held datagram for the next
//!   receive.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use super::fd::RingFd;
use super::seam::{OnRing, RingState};
use super::waiters::{Waiters, wake_displaced};
use crate::completion::{CompleteCx, CompletionTarget, OpKind, OpMemory, RingDriver};
use crate::core::Core;
use crate::io::ready::{Direction, Ready};
use crate::shared::Shared;
use crate::sync::lock;
use crate::sys::op;
use crate::sys::ring::{Completion, RecvMsgMemory};
use crate::sys::socket::{EAGAIN, ECANCELED, EINTR};

/// The largest datagram a receive takes whole: more than UDP's largest payload
/// (65,507 bytes over IPv4, 65,527 over IPv6 without jumbograms).
pub(crate) const MAX_DATAGRAM: usize = 64 * 1024;

/// What the last `recvmsg` brought and nobody has taken yet. On the ring its error is
/// the socket's pending error instead (`State::pending_error`); it is held only for a
/// socket that has left the ring, whose receive was waiting for that `recvmsg`.
#[derive(Debug)]
enum Held {
    Datagram { mem: RecvMsgMemory, len: usize },
    Error(i32),
}

/// Where the socket stands between its `DatagramIo` and the ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Lifecycle {
    /// Its receives and send waits go through the ring.
    #[default]
    OnRing,
    /// It left the ring (readiness asked for): nothing new is submitted; a held
    /// datagram is still the next receive's.
    Left,
    /// It is gone (dropped, or `into_std`): nothing new is submitted and nothing
    /// received is held.
    Released,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    lifecycle: Lifecycle,
    /// The loop shut down: every operation fails from now on.
    loop_gone: bool,
    held: Option<Held>,
    /// The `recvmsg` in flight: its op key.
    recv: Option<usize>,
    /// The read poll in flight (`readable` with nothing armed): its op key.
    read_poll: Option<usize>,
    /// A read poll said readable and no receive has found nothing since.
    readable: bool,
    /// The socket's pending error (an ICMP error: `IP_RECVERR`, or a connected socket)
    /// that an armed `recvmsg` took from the kernel. On readiness it would wake no
    /// receive and stay the kernel's until the next operation: so it is reported, and
    /// taken, by the next send, or by the next receive once the socket is readable;
    /// meanwhile a read poll waits for a datagram.
    pending_error: Option<i32>,
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
}

impl RingState for State {
    fn lose_loop(&mut self) -> [Waiters; 2] {
        self.loop_gone = true;
        [self.reader.take(), self.writer.take()]
    }
}

impl State {
    fn stopped(&self) -> bool {
        self.loop_gone || self.lifecycle != Lifecycle::OnRing
    }

    fn released(&self) -> bool {
        self.lifecycle == Lifecycle::Released
    }

    fn in_flight(&self) -> impl Iterator<Item = usize> {
        [self.recv, self.read_poll, self.write_poll].into_iter().flatten()
    }
}

/// A UDP socket on its loop's ring. Owned jointly by its `DatagramIo` and its
/// operations.
pub(crate) struct RingDatagram {
    /// The socket's own descriptor (a duplicate), closed with the last holder.
    keeper: RingFd,
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
    type State = State;

    fn loop_shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn state(&self) -> &Mutex<State> {
        &self.state
    }
}

impl RingDatagram {
    /// A socket of `core`'s loop over a duplicate of `socket`'s descriptor; `None` if
    /// the loop has no ring or no descriptor is left for the duplicate (the socket then
    /// stays on readiness).
    pub(crate) fn new(core: &Core, socket: &impl AsRawFd) -> Option<Arc<RingDatagram>> {
        core.ring.borrow().as_ref()?;
        let keeper = RingFd::duplicate(socket)?;
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
        self.keeper.raw()
    }

    // ---- receiving -----------------------------------------------------------------

    /// Arms the `recvmsg` unless one is armed, a datagram is held or the socket stopped.
    fn arm_recv(self: &Arc<Self>) {
        self.with_driver_locked(|this, state, driver| this.submit_recv(state, driver));
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
        let key = unsafe {
            self.submit(
                driver,
                &mut state.loop_gone,
                OpKind::RecvMsg,
                entry,
                Some(OpMemory::Msg(mem)),
            )
        };
        match key {
            Some(key) => {
                state.recv = Some(key);
                state.readable = false;
                Waiters::default()
            }
            None => state.reader.take(),
        }
    }

    /// Arms the poll of `direction` unless it is armed, or (reading) a receive is armed
    /// or a datagram held, or (writing) the socket is writable, or the socket stopped.
    fn arm_poll(self: &Arc<Self>, direction: Direction) {
        self.with_driver_locked(move |this, state, driver| this.submit_poll(state, driver, direction));
    }

    /// Submits the poll of `direction` if it may be (see [`arm_poll`](Self::arm_poll));
    /// returns the waiters to wake if the loop is gone.
    fn submit_poll(
        self: &Arc<Self>,
        state: &mut State,
        driver: Option<&mut RingDriver>,
        direction: Direction,
    ) -> Waiters {
        let this = self;
        {
            let wanted = match direction {
                Direction::Read => state.recv.is_none() && state.read_poll.is_none() && state.held.is_none(),
                Direction::Write => state.write_poll.is_none() && !state.writable,
            };
            if !wanted || state.stopped() {
                return Waiters::default();
            }
            let (kind, entry) = match direction {
                Direction::Read => (OpKind::Poll, op::poll_readable(this.fd())),
                Direction::Write => (OpKind::PollOut, op::poll_writable(this.fd())),
            };
            // SAFETY: a poll names only the descriptor.
            let key = unsafe { this.submit(driver, &mut state.loop_gone, kind, entry, None) };
            match (direction, key) {
                (Direction::Read, Some(key)) => {
                    state.read_poll = Some(key);
                    Waiters::default()
                }
                (Direction::Write, Some(key)) => {
                    state.write_poll = Some(key);
                    Waiters::default()
                }
                (Direction::Read, None) => state.reader.take(),
                (Direction::Write, None) => state.writer.take(),
            }
        }
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
        errors: bool,
        direct: impl FnOnce(&mut [u8]) -> io::Result<(usize, SocketAddr)>,
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        let mut state = lock(&self.state);
        if let Some(errno) = state.pending_error
            && (errors || state.held.is_some() || state.readable)
        {
            state.pending_error = None;
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
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
        // With an error pending, the receive waits for the read poll: the error goes
        // before the datagram that makes the socket readable.
        if state.recv.is_none() && state.heard_from_ring && state.pending_error.is_none() {
            // Nothing armed, so nothing received ahead of the socket's queue.
            match direct(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                result => return Poll::Ready(result),
            }
        }
        state.readable = false;
        let displaced = state.reader.wait_if(waiter);
        let arm = state.recv.is_none() && state.read_poll.is_none() && !state.stopped();
        let poll_first = state.pending_error.is_some();
        drop(state);
        wake_displaced(displaced);
        if arm && poll_first {
            self.arm_poll(Direction::Read);
        } else if arm {
            self.arm_recv();
        }
        Poll::Pending
    }

    /// The held datagram (or error) copied into `buf`; taken unless `peek` (an error is
    /// taken either way). `None` if nothing is held.
    fn take_held(state: &mut State, buf: &mut [u8], peek: bool) -> Option<io::Result<(usize, SocketAddr)>> {
        let (mem, len) = match state.held.take()? {
            Held::Datagram { mem, len } => (mem, len),
            Held::Error(errno) => return Some(Err(io::Error::from_raw_os_error(errno))),
        };
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

    /// Ready when a receive would not wait: a datagram is held, or the read
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
        wake_displaced(displaced);
        if arm {
            self.arm_poll(Direction::Read);
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
        // A send finds the socket's pending error first, as the kernel's `sendto` does.
        if let Some(errno) = state.pending_error.take() {
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
        if state.writable {
            return Poll::Ready(Ok(()));
        }
        let displaced = state.writer.wait_if(waiter);
        let arm = state.write_poll.is_none() && !state.stopped();
        drop(state);
        wake_displaced(displaced);
        if arm {
            self.arm_poll(Direction::Write);
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
            self.arm_poll(Direction::Write);
        }
    }

    // ---- leaving -------------------------------------------------------------------

    /// The readiness a socket leaving the ring starts from on readiness.
    pub(crate) fn readiness(&self) -> Ready {
        let state = lock(&self.state);
        let mut ready = Ready::EMPTY;
        if state.held.is_some() || state.readable {
            ready |= Ready::READABLE;
        }
        if state.writable {
            ready |= Ready::WRITABLE;
        }
        if state.pending_error.is_some() {
            ready |= Ready::ERROR;
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
            if release {
                state.lifecycle = Lifecycle::Released;
            } else if state.lifecycle == Lifecycle::OnRing {
                state.lifecycle = Lifecycle::Left;
            }
        }
        self.cancel_in_flight(|this| lock(&this.state).in_flight().collect());
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
        let displaced = state.reader.wait_if(waiter);
        drop(state);
        wake_displaced(displaced);
        Some(Poll::Pending)
    }

    /// Takes the socket's pending error that the ring took from the kernel (see
    /// `State::pending_error`): `take_error` reports it before `SO_ERROR`.
    pub(crate) fn take_pending_error(&self) -> Option<io::Error> {
        lock(&self.state).pending_error.take().map(io::Error::from_raw_os_error)
    }

    /// True while a datagram received before the socket left the ring is held, or may
    /// still arrive from the cancelled `recvmsg`.
    pub(crate) fn has_leftover(&self) -> bool {
        let state = lock(&self.state);
        state.held.is_some() || state.recv.is_some()
    }
}

impl RingDatagram {
    /// The `recvmsg`'s completion: its datagram (or error) held for the next receive,
    /// its memory kept for the next `recvmsg`; armed again if it found nothing after
    /// all. Returns the receivers to wake.
    fn received(
        self: &Arc<Self>,
        state: &mut State,
        c: Completion,
        mem: Option<OpMemory>,
        driver: &mut RingDriver,
    ) -> Waiters {
        state.recv = None;
        state.heard_from_ring = true;
        let mem = mem.and_then(OpMemory::into_msg);
        let mut woken = Waiters::default();
        match c.result {
            len if len >= 0 => match mem {
                Some(mem) if !state.released() => {
                    state.held = Some(Held::Datagram { mem, len: len as usize });
                }
                _ => {}
            },
            r if r == -ECANCELED => state.spare = mem,
            // Nothing after all: armed again (the kernel normally waits itself).
            r if r == -EAGAIN || r == -EINTR => {
                state.spare = mem;
                woken = self.submit_recv(state, Some(driver));
            }
            // The socket's pending error: kept for the next send or readable receive,
            // and a read poll armed for the datagram that makes it readable.
            r => {
                state.spare = mem;
                if !state.stopped() {
                    state.pending_error = Some(-r);
                    // The receives that wait for errors take it; the others wait on.
                    return self
                        .submit_poll(state, Some(driver), Direction::Read)
                        .and(state.reader.take());
                }
                if !state.released() {
                    state.held = Some(Held::Error(-r));
                }
            }
        }
        woken.and(state.reader.take())
    }

    /// The read poll's completion: readable. Returns the receivers to wake.
    fn read_polled(state: &mut State) -> Waiters {
        state.read_poll = None;
        state.readable = true;
        state.heard_from_ring = true;
        state.reader.take()
    }

    /// The write poll's completion: writable. Returns the senders to wake.
    fn write_polled(state: &mut State) -> Waiters {
        state.write_poll = None;
        state.writable = true;
        state.writer.take()
    }
}

impl CompletionTarget for RingDatagram {
    fn complete(self: Arc<Self>, kind: OpKind, c: Completion, mem: Option<OpMemory>, cx: &mut CompleteCx<'_>) {
        let mut state = lock(&self.state);
        if c.result == -ECANCELED && cx.driver.is_closing() {
            state.loop_gone = true;
        }
        let mut woken = match kind {
            OpKind::RecvMsg => self.received(&mut state, c, mem, cx.driver),
            OpKind::Poll => Self::read_polled(&mut state),
            OpKind::PollOut => Self::write_polled(&mut state),
            OpKind::Recv | OpKind::Send | OpKind::Accept => {
                unreachable!("a datagram socket submits only recvmsg and polls")
            }
        };
        if state.loop_gone {
            woken = woken.and(state.reader.take()).and(state.writer.take());
        }
        drop(state);
        for w in woken {
            cx.wake(w);
        }
    }
}
