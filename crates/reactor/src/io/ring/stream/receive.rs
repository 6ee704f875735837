//! The stream's receive side: a multishot receive into the loop's provided buffers,
//! whose chunks wait here until a reader takes them, throttled so that one unread
//! stream cannot take its loop's whole pool.
//!
//! ```text
//!             reader task                          loop (completion of the receive)
//!  poll_read: chunks? copy out, give buffers    ◀─ chunk (buffer id, length) queued,
//!             back : no receive armed? recv(2)      reader woken; `MORE` unset: the
//!             once : else arm the receive, wait     receive re-armed unless EOF/error
//!
//!  copy_out: paused and down to MAX_CHUNKS / 2? ◀─ MAX_CHUNKS waiting: the receive is
//!            arm the receive again                  cancelled (paused, `throttled`)
//!
//!                                               ◀─ ENOBUFS (the pool is empty): a
//!  poll_read: recv(2) directly until the           one-shot readiness poll instead;
//!             receive is armed again                its completion wakes the reader
//! ```
//!
//! Invariants:
//! - At most one receive (or, out of buffers, one readiness poll) is in flight
//!   (`recv`), and the socket is read directly only while none is: nothing the ring
//!   received can be overtaken.
//! - At most [`MAX_CHUNKS`] received chunks wait for a reader: past that the receive is
//!   cancelled and re-armed once the reader has taken half of them (TCP's back-pressure
//!   works, and the pool serves the loop's other streams).
//! - A chunk's buffer is this socket's from its completion until it is emptied, then
//!   given back to the pool once; a released stream's buffers go back as they come.
//!
//! Readiness is tokio's: readable until a read finds nothing. A read wakes the last
//! task to poll it and every task awaiting `readable` ([`Waiters`]).

use std::io;
use std::sync::{Arc, MutexGuard};
use std::task::{Context, Poll};

use super::super::seam::OnRing;
use super::super::waiters::{Waiters, wake_displaced};
use super::socket::{RingSocket, loop_gone_error};
use super::state::{Chunk, State};
use crate::completion::{OpKind, RingDriver};
use crate::coop;
use crate::sync::lock;
use crate::sys::op;
use crate::sys::ring::Completion;
use crate::sys::socket::{self, ECANCELED, ECONNRESET, ENOBUFS};

/// Received chunks a socket may hold unread before its receive is paused.
const MAX_CHUNKS: usize = 16;

/// The buffers one read emptied, given back to the pool together: a few fit without an
/// allocation (a read usually empties one).
#[derive(Default)]
struct EmptiedBuffers {
    bids: [u16; 8],
    len: usize,
}

impl EmptiedBuffers {
    /// Adds `bid`; when that fills the list, returns its buffers (to give back now)
    /// and starts it over.
    fn push(&mut self, bid: u16) -> Option<impl Iterator<Item = u16>> {
        self.bids[self.len] = bid;
        self.len += 1;
        (self.len == self.bids.len()).then(|| self.take())
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every buffer listed; the list is empty after.
    fn take(&mut self) -> impl Iterator<Item = u16> + use<> {
        let (bids, len) = (self.bids, std::mem::take(&mut self.len));
        bids.into_iter().take(len)
    }
}

impl RingSocket {
    /// Arms the receive if it is not (caller holds no lock).
    fn arm_recv(self: &Arc<Self>) {
        self.with_driver_locked(|this, state, driver| {
            if state.recv.is_some()
                || state.eof
                || state.read_error.is_some()
                || state.loop_gone
                || state.lifecycle.left_ring()
            {
                return Waiters::default();
            }
            this.submit_recv(state, driver, false)
        });
    }

    /// Submits the multishot receive (`poll_only`: a one-shot readiness poll, for a
    /// loop out of buffers). Returns the readers to wake if the loop is gone.
    fn submit_recv(self: &Arc<Self>, state: &mut State, driver: Option<&mut RingDriver>, poll_only: bool) -> Waiters {
        let (entry, kind) = if poll_only {
            (op::poll_readable(self.fd()), OpKind::Poll)
        } else {
            (op::recv_multi(self.fd()), OpKind::Recv)
        };
        // SAFETY: the entry names this socket's descriptor and the loop's buffer group.
        match unsafe { self.submit(driver, &mut state.loop_gone, kind, entry, None) } {
            Some(key) => {
                state.recv = Some(key);
                state.throttled = false;
                Waiters::default()
            }
            None => state.reader.take(),
        }
    }

    /// Copies received bytes into `buf`: `Ready(n)` (0 at end of stream), or `Pending`
    /// with the reader's waker kept (`cx`) and the receive armed. `peek` leaves the
    /// bytes for the next read.
    fn read_into(
        self: &Arc<Self>,
        cx: Option<&mut Context<'_>>,
        buf: &mut [u8],
        peek: bool,
    ) -> Poll<io::Result<usize>> {
        let mut state = lock(&self.state);
        if !state.chunks.is_empty() {
            return Poll::Ready(Ok(self.copy_out(state, buf, peek)));
        }
        if let Some(errno) = state.read_error.take() {
            state.eof = true;
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
        if state.eof || buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if state.loop_gone {
            return Poll::Ready(Err(loop_gone_error()));
        }
        let left = state.lifecycle.left_ring();
        if state.recv.is_none() || left {
            // No receive armed, so none can hold bytes that came earlier: the socket is
            // tried at once (a new connection's first request is usually there
            // already, as tokio assumes of accepted streams; a loop out of buffers
            // reads this way), and the receive is armed only if it has nothing.
            match socket::recv_now(self.sock(), buf, peek) {
                Ok(0) => {
                    state.eof = true;
                    return Poll::Ready(Ok(0));
                }
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        state.readable = false;
        if let Some(cx) = cx {
            state.reader.set_last(cx.waker());
        }
        let arm = state.recv.is_none() && !left;
        drop(state);
        if arm {
            self.arm_recv();
        }
        Poll::Pending
    }

    /// Copies the waiting chunks' bytes into `buf` (taking them, unless `peek`) and
    /// releases the lock; buffers emptied are given back, and a paused receive is
    /// re-armed once the reader has caught up. Returns how many bytes were copied.
    pub(super) fn copy_out(self: &Arc<Self>, mut state: MutexGuard<'_, State>, buf: &mut [u8], peek: bool) -> usize {
        let mut n = 0;
        // Emptied buffers, given back together once the lock is released.
        let mut done = EmptiedBuffers::default();
        let mut i = 0;
        while n < buf.len() {
            let Some(chunk) = state.chunks.get_mut(i) else { break };
            let len = (chunk.end - chunk.start) as usize;
            let take = len.min(buf.len() - n);
            // SAFETY: the chunk's buffer was handed to this socket by its completion
            // and is given back only below, once emptied.
            let bytes = unsafe { self.pool.bytes(chunk.bid, chunk.end as usize) };
            buf[n..n + take].copy_from_slice(&bytes[chunk.start as usize..chunk.start as usize + take]);
            n += take;
            if peek {
                i += 1;
                continue;
            }
            chunk.start += take as u32;
            if chunk.start == chunk.end {
                let bid = chunk.bid;
                state.chunks.pop_front();
                if let Some(full) = done.push(bid) {
                    // SAFETY: each buffer was emptied and popped above, once.
                    unsafe { self.pool.recycle(full) };
                }
            }
        }
        let rearm = state.throttled && state.recv.is_none() && state.chunks.len() <= MAX_CHUNKS / 2 && !peek;
        drop(state);
        if !done.is_empty() {
            // SAFETY: each buffer was emptied and popped above, once.
            unsafe { self.pool.recycle(done.take()) };
        }
        if rearm {
            self.arm_recv();
        }
        n
    }

    /// `AsyncRead`'s read: a read that does not wait spends one unit of the task's
    /// budget, whether its bytes were waiting in the ring's buffers or were read from
    /// the socket at once (tokio spends one per read that finds the socket ready).
    pub(crate) fn poll_read(self: &Arc<Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.read_spending_budget(cx, buf, false)
    }

    fn read_spending_budget(
        self: &Arc<Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        peek: bool,
    ) -> Poll<io::Result<usize>> {
        let budget = std::task::ready!(coop::poll_proceed(cx));
        let read = self.read_into(Some(cx), buf, peek);
        if read.is_ready() {
            budget.made_progress();
        }
        read
    }

    /// Reads what is there without waiting: `WouldBlock` if nothing is (the receive is
    /// armed so that `readable` will say when).
    pub(crate) fn try_read(self: &Arc<Self>, buf: &mut [u8]) -> io::Result<usize> {
        match self.read_into(None, buf, false) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Copies what is there without taking it; spends budget as a read does.
    pub(crate) fn poll_peek(self: &Arc<Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.read_spending_budget(cx, buf, true)
    }

    /// Ready when a read would not wait (data, end of stream or an error). `shared`:
    /// `cx`'s task is woken with every other task waiting so (`readable`); otherwise
    /// only the last task to poll is (`poll_read_ready`).
    pub(crate) fn poll_read_ready(self: &Arc<Self>, cx: &mut Context<'_>, shared: bool) -> Poll<io::Result<()>> {
        let mut state = lock(&self.state);
        if state.read_would_not_wait() {
            return Poll::Ready(Ok(()));
        }
        if state.loop_gone {
            return Poll::Ready(Err(loop_gone_error()));
        }
        let displaced = state.reader.wait(cx, shared);
        let arm = state.recv.is_none();
        drop(state);
        wake_displaced(displaced);
        if arm {
            self.arm_recv();
        }
        Poll::Pending
    }

    /// A completion of the receive: its chunk queued (or its buffer given back), the
    /// receive paused at [`MAX_CHUNKS`] or re-armed when it ended, its error or end of
    /// stream noted. Returns the waiters to wake.
    pub(super) fn received(self: &Arc<Self>, state: &mut State, c: Completion, driver: &mut RingDriver) -> Waiters {
        let mut woken = Waiters::default();
        let released = state.lifecycle.released();
        let left = state.lifecycle.left_ring();
        if let Some(bid) = c.buffer() {
            if c.result > 0 && !released {
                state.chunks.push_back(Chunk {
                    bid,
                    start: 0,
                    end: c.result as u32,
                });
                state.readable = true;
            } else {
                // Nothing in it, or nobody will read it: straight back.
                // SAFETY: handed to us by this completion, given back once.
                unsafe { self.pool.recycle([bid]) };
            }
        }
        if !c.more() {
            state.recv = None;
        }
        let stopped = state.recv.is_none();
        let mut out_of_buffers = false;
        match c.result {
            0 if stopped => state.eof = true,
            // Cancelled by the loop's shutdown (else by a pause, a release or a detach,
            // which say what follows).
            r if r < 0 && -r == ECANCELED && driver.is_closing() => state.loop_gone = true,
            r if r < 0 && -r == ECANCELED => {}
            // Out of buffers: this socket waits by readiness (a one-shot poll) and its
            // reader reads directly (`recv_now`) until it arms the receive again.
            r if r < 0 && -r == ENOBUFS => {
                out_of_buffers = true;
                if !state.reader.is_empty() && !left && !released {
                    woken = self.submit_recv(state, Some(&mut *driver), true);
                }
            }
            r if r < 0 => {
                state.read_error = Some(-r);
                state.peer_reset |= -r == ECONNRESET;
            }
            _ => {}
        }
        let receiving = !state.eof && state.read_error.is_none() && !state.loop_gone && !left && !released;
        if !stopped {
            if state.chunks.len() >= MAX_CHUNKS && !state.throttled {
                // Enough waits unread: pause until the reader catches up.
                state.throttled = true;
                if let Some(key) = state.recv {
                    driver.cancel(key);
                }
            }
        } else if receiving && !out_of_buffers && state.recv.is_none() {
            // The receive ended (the kernel's own choice, or the pause's cancel): on
            // again unless the reader is still behind.
            if state.chunks.len() <= MAX_CHUNKS / 2 {
                woken = self.submit_recv(state, Some(&mut *driver), false);
            } else {
                state.throttled = true;
            }
        }
        if released && !left && c.result > 0 {
            // Bytes for a dropped stream, which the kernel would have found unread at
            // the close: the connection is reset.
            self.abort(state, driver);
        }
        // A detached socket's receive ending lets its reader go on to the socket, which
        // now holds every byte after the chunks.
        if state.read_would_not_wait() || state.loop_gone || (stopped && left) {
            woken = woken.and(state.reader.take());
        }
        woken
    }

    /// The readiness poll's completion (a loop out of buffers): readable (or failed),
    /// so the reader reads directly and re-arms. Returns the readers to wake.
    pub(super) fn polled(&self, state: &mut State, c: Completion, driver: &mut RingDriver) -> Waiters {
        state.recv = None;
        if c.result < 0 && -c.result == ECANCELED && driver.is_closing() {
            state.loop_gone = true;
        }
        state.readable = true;
        state.reader.take()
    }
}
