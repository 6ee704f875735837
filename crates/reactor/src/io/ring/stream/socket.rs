//! The stream's ring socket: what it holds, how it hears of its loop's end, what a
//! stream leaving the ring starts from, and where each completion goes (one handler per
//! operation: the receive's and the readiness poll's in `receive.rs`, the send's in
//! `send.rs`; the end of a released stream's grace in `release.rs`).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::{Arc, Mutex};

use super::super::fd::RingFd;
use super::super::seam::OnRing;
use super::state::State;
use crate::completion::{CompleteCx, CompletionTarget, OpKind, OpMemory, RingDriver};
use crate::core::Core;
use crate::io::ready::Ready;
use crate::shared::Shared;
use crate::sync::lock;
use crate::sys::ring::{BufPool, Completion};

/// A socket on its loop's ring. Owned jointly by its stream and its operations.
pub(crate) struct RingSocket {
    /// The socket's own descriptor (a duplicate of the stream's), closed with the
    /// last holder of the socket.
    pub(super) keeper: RingFd,
    pub(super) shared: Arc<Shared>,
    pub(super) pool: Arc<BufPool>,
    pub(super) state: Mutex<State>,
}

impl std::fmt::Debug for RingSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingSocket")
            .field("fd", &self.fd())
            .finish_non_exhaustive()
    }
}

pub(super) fn loop_gone_error() -> io::Error {
    crate::error::LoopShutDown::io_error()
}

impl OnRing for RingSocket {
    type State = State;

    fn loop_shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn state(&self) -> &Mutex<State> {
        &self.state
    }
}

impl RingSocket {
    /// A socket of `core`'s loop over a duplicate of `socket`'s descriptor, taken as
    /// `readable` until a read finds nothing; `None` if the loop has no ring or no
    /// descriptor is left for the duplicate (the stream then stays on readiness).
    pub(crate) fn new(core: &Core, socket: &impl AsRawFd, readable: bool) -> Option<Arc<RingSocket>> {
        let pool = core.ring.borrow().as_ref()?.pool().clone();
        let keeper = RingFd::duplicate(socket)?;
        Some(Arc::new(RingSocket {
            keeper,
            shared: core.shared.clone(),
            pool,
            state: Mutex::new(State {
                readable,
                writable: true,
                ..State::default()
            }),
        }))
    }

    /// The number the socket's operations name.
    pub(super) fn fd(&self) -> RawFd {
        self.keeper.raw()
    }

    /// The socket's own descriptor, for a call on the socket.
    pub(super) fn sock(&self) -> BorrowedFd<'_> {
        self.keeper.borrow()
    }

    /// The loop this socket's operations run on.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The error the receive took from the socket that no read has reported yet
    /// (`take_error`): the kernel reports a socket's error once, to whichever call asks
    /// first, and reads return the end of the stream after it.
    pub(crate) fn take_read_error(&self) -> Option<io::Error> {
        let mut state = lock(&self.state);
        let errno = state.read_error.take()?;
        state.eof = true;
        Some(io::Error::from_raw_os_error(errno))
    }

    /// Puts back an error a read took after a vectored read's earlier buffers got
    /// bytes, for the next read to report (errors that are the socket's state, such as
    /// the loop being gone, come back by themselves).
    pub(crate) fn keep_read_error(&self, e: io::Error) {
        if let Some(errno) = e.raw_os_error() {
            let mut state = lock(&self.state);
            state.read_error = Some(errno);
            state.eof = false;
        }
    }

    /// The readiness a stream leaving the ring starts from on readiness: what tokio
    /// would count as ready now (readable until a read found nothing, writable until a
    /// write found the window full).
    pub(crate) fn readiness(&self) -> Ready {
        let state = lock(&self.state);
        let mut ready = Ready::EMPTY;
        if state.read_would_not_wait() {
            ready |= Ready::READABLE;
        }
        if state.writable {
            ready |= Ready::WRITABLE;
        }
        // What epoll would add for what the receive saw: the peer's FIN (`EPOLLRDHUP`),
        // or a reset or other error (`EPOLLERR | EPOLLHUP`).
        if state.read_error.is_some() {
            ready |= Ready::READ_CLOSED | Ready::WRITE_CLOSED | Ready::ERROR;
        } else if state.eof {
            ready |= Ready::READ_CLOSED;
        }
        ready
    }
}

impl Drop for RingSocket {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        let bids: Vec<u16> = state.chunks.drain(..).map(|c| c.bid).collect();
        if !bids.is_empty() {
            // SAFETY: buffers handed to this socket and not given back; nothing reads
            // them any more.
            unsafe { self.pool.recycle(bids) };
        }
        // `keeper` closes the socket's descriptor now: no operation names it any more.
    }
}

impl CompletionTarget for RingSocket {
    fn complete(self: Arc<Self>, kind: OpKind, c: Completion, mem: Option<OpMemory>, cx: &mut CompleteCx<'_>) {
        let mut state = lock(&self.state);
        let woken = match kind {
            OpKind::Recv => self.received(&mut state, c, cx.driver),
            OpKind::Poll => self.polled(&mut state, c, cx.driver),
            OpKind::Send => self.sent(&mut state, c, mem, cx.driver),
            OpKind::Accept | OpKind::RecvMsg | OpKind::PollOut => {
                unreachable!("a stream submits no accept, recvmsg or write poll")
            }
        };
        drop(state);
        for w in woken {
            cx.wake(w);
        }
    }

    fn linger_expired(self: Arc<Self>, driver: &mut RingDriver) {
        self.give_up(driver);
    }
}
