//! The stream's send side: bytes accepted into a window of [`SEND_WINDOW`] bytes and
//! sent gathered, one send in flight at a time; the flush, the shutdown after the
//! bytes, and the errors a write reports.
//!
//! ```text
//!             writer task                          loop (completion of the send)
//!  poll_write: room in `pending`? copy in; no   ─▶ all sent: next `pending` goes out,
//!             send in flight? queue one             or the writer and flush go on and
//!             : wait for room                       a requested shutdown is made;
//!                                                   short: the rest goes out
//!  poll_flush: nothing `sending`? ready         ◀─ failed: every later write fails,
//!             : wait for the sends                  the writer woken
//! ```
//!
//! Invariants:
//! - At most one send is in flight (`send`). Bytes in `pending` always have a send in
//!   flight or queued (`sending`), so a dropped stream still sends what it accepted
//!   (`release.rs`).
//! - Write errors are the kernel's: once a send fails every later write fails (its
//!   errno first, deferred to the next write, flush or shutdown, then `EPIPE`); a reset
//!   the receive saw fails the next write at once. Bytes accepted and then lost with
//!   the loop fail that write, or else the next flush or shutdown.
//!
//! Readiness is tokio's: writable until a write finds the window full.

use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::super::seam::OnRing;
use super::super::waiters::{Waiters, wake_all, wake_displaced};
use super::socket::{RingSocket, loop_gone_error};
use super::state::{Shutdown, State};
use crate::completion::{OpKind, OpMemory, RingDriver};
use crate::sync::lock;
use crate::sys::op;
use crate::sys::ring::Completion;
use crate::sys::socket::{self, ECANCELED, ECONNRESET, EPIPE};

/// How many bytes a writer may have accepted and not yet sent: past this, `poll_write`
/// waits for a send to complete (tokio's back-pressure, from a socket buffer's worth).
const SEND_WINDOW: usize = 64 * 1024;

impl RingSocket {
    /// Accepts bytes of `bufs` into the send window: `Ready(n)`, or `Pending` (the
    /// writer's waker kept, as the last poller's) while the window is full. Reports a
    /// failed earlier send.
    pub(crate) fn poll_write<B: std::ops::Deref<Target = [u8]>>(
        self: &Arc<Self>,
        cx: Option<&mut Context<'_>>,
        bufs: &[B],
    ) -> Poll<io::Result<usize>> {
        self.write_into(cx.map(|cx| (&*cx, false)), bufs)
    }

    /// The write readiness: ready when the send window has room (or a failed earlier
    /// send is to be reported). `shared`: `cx`'s task is woken with every other task
    /// waiting so (`writable`); otherwise only the last task to poll is.
    pub(crate) fn poll_write_ready(self: &Arc<Self>, cx: &mut Context<'_>, shared: bool) -> Poll<io::Result<()>> {
        self.write_into::<&[u8]>(Some((cx, shared)), &[]).map_ok(drop)
    }

    /// [`poll_write`](Self::poll_write), keeping `waiter`'s waker (shared or not) while
    /// the window is full. With no bytes, the write readiness: `Ready(0)` while the
    /// socket is writable as tokio counts it (until a write finds the window full).
    fn write_into<B: std::ops::Deref<Target = [u8]>>(
        self: &Arc<Self>,
        waiter: Option<(&Context<'_>, bool)>,
        bufs: &[B],
    ) -> Poll<io::Result<usize>> {
        let mut state = lock(&self.state);
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let shutdown_requested = state.shutdown != Shutdown::Open;
        // The readiness query (no bytes) reports no error of its own: tokio's
        // writable() is ready after a shutdown, a failed send or the peer's reset, and a
        // write reports it.
        if total == 0 && (shutdown_requested || state.write_error.is_some() || state.write_failed || state.peer_reset) {
            return Poll::Ready(Ok(0));
        }
        if let Some(e) = self.write_failure(&mut state) {
            return Poll::Ready(Err(e));
        }
        if shutdown_requested {
            return Poll::Ready(Err(io::Error::from_raw_os_error(EPIPE)));
        }
        if state.loop_gone {
            return Poll::Ready(Err(loop_gone_error()));
        }
        let room = SEND_WINDOW.saturating_sub(state.pending.len());
        if room == 0 {
            if total == 0 && state.writable {
                return Poll::Ready(Ok(0));
            }
            state.writable = false;
            let displaced = state.writer.wait_if(waiter);
            drop(state);
            wake_displaced(displaced);
            return Poll::Pending;
        }
        if total == 0 {
            return Poll::Ready(Ok(0));
        }
        let mut n = 0;
        for b in bufs {
            let take = b.len().min(room - n);
            state.pending.extend_from_slice(&b[..take]);
            n += take;
            if n == room {
                break;
            }
        }
        let start = !state.sending;
        state.sending = true;
        if !start {
            return Poll::Ready(Ok(n));
        }
        // On the loop's thread, with its driver free, the send is queued under this
        // lock; elsewhere it goes through the loop (`start_send`).
        let mut woken = Waiters::default();
        let lost = match self.on_loop(|this, driver| woken = this.submit_send(&mut state, driver)) {
            Ok(()) => {
                let lost = state.loop_gone;
                drop(state);
                wake_all([woken]);
                self.submit_now_from_main();
                lost
            }
            Err(_) => {
                drop(state);
                self.start_send();
                lock(&self.state).loop_gone
            }
        };
        // The send found the loop gone: these bytes were dropped with the window, so the
        // write fails (as tokio's does once its loop is gone), and nothing is left for a
        // flush to report.
        if lost {
            lock(&self.state).lost_to_loop_end = false;
            return Poll::Ready(Err(loop_gone_error()));
        }
        Poll::Ready(Ok(n))
    }

    /// The error that stops a write from accepting bytes, as the kernel's socket
    /// reports it: a failed send's errno once, `EPIPE` for every write after. A peer's
    /// reset that no read has reported yet is a TCP write's `ECONNRESET` (taken: the
    /// kernel reports `sk_err` once, and reads find the end of the stream after it);
    /// a Unix write gets `EPIPE` and its reader keeps the reset.
    fn write_failure(&self, state: &mut State) -> Option<io::Error> {
        if let Some(e) = state.take_send_error() {
            return Some(e);
        }
        if state.peer_reset && !state.write_failed {
            state.write_failed = true;
            if state.read_error == Some(ECONNRESET) && socket::is_tcp(self.sock()) {
                state.read_error = None;
                state.eof = true;
                return Some(io::Error::from_raw_os_error(ECONNRESET));
            }
        }
        state.write_failed.then(|| io::Error::from_raw_os_error(EPIPE))
    }

    /// Submits `pending` as the next send (on the loop): with the turn's other
    /// operations, or at once from `block_on`'s own future, which may block its thread
    /// before the next turn (tokio's write is the kernel's when it returns).
    fn start_send(self: &Arc<Self>) {
        self.with_driver_locked(|this, state, driver| this.submit_send(state, driver));
        self.submit_now_from_main();
    }

    /// Hands `pending` to a send; with nothing pending, the sends are over and the
    /// writer's waiters are returned to wake.
    fn submit_send(self: &Arc<Self>, state: &mut State, driver: Option<&mut RingDriver>) -> Waiters {
        if state.pending.is_empty() {
            state.sending = false;
            return state.writer.take();
        }
        let spare = std::mem::take(&mut state.spare);
        let buf = std::mem::replace(&mut state.pending, spare);
        self.submit_send_buf(state, driver, buf, 0)
    }

    /// Sends `buf[offset..]`; the buffer goes with the operation. The loop gone, every
    /// send fails and the writer's waiters are returned to wake.
    fn submit_send_buf(
        self: &Arc<Self>,
        state: &mut State,
        driver: Option<&mut RingDriver>,
        mut buf: Vec<u8>,
        offset: usize,
    ) -> Waiters {
        // The sent prefix goes first, so that the operation's bytes are the whole vector.
        buf.drain(..offset);
        let entry = op::send(self.fd(), &buf);
        // SAFETY: the entry names this socket's descriptor and `buf`'s heap memory,
        // which goes with the operation (moving a vector does not move it).
        match unsafe {
            self.submit(
                driver,
                &mut state.loop_gone,
                OpKind::Send,
                entry,
                Some(OpMemory::Bytes(buf)),
            )
        } {
            Some(key) => {
                state.send = Some(key);
                Waiters::default()
            }
            None => self.fail_sends(state, None),
        }
    }

    /// Every send fails from now on (`errno`, or the loop's shutdown); the writer's
    /// waiters are returned to wake.
    pub(super) fn fail_sends(&self, state: &mut State, errno: Option<i32>) -> Waiters {
        match errno {
            Some(e) => state.write_error = Some(e),
            None if state.sending => state.lost_to_loop_end = true,
            None => {}
        }
        state.pending.clear();
        state.sending = false;
        state.send = None;
        state.writable = true;
        state.writer.take()
    }

    /// Ready once nothing accepted is unsent (the bytes are the kernel's); reports a
    /// failed send not yet reported, or bytes lost with the loop, once. Once reported,
    /// a flush succeeds (tokio's flush does nothing; its writes fail instead).
    pub(crate) fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut state = lock(&self.state);
        if let Some(e) = state.unreported_write_failure() {
            return Poll::Ready(Err(e));
        }
        if !state.sending {
            return Poll::Ready(Ok(()));
        }
        if state.loop_gone {
            return Poll::Ready(Err(loop_gone_error()));
        }
        state.writer.set_last(cx.waker());
        Poll::Pending
    }

    /// Shuts the write direction down once everything accepted has been sent (at once
    /// if nothing is left).
    pub(crate) fn shutdown_write(&self) -> io::Result<()> {
        let mut state = lock(&self.state);
        if state.shutdown == Shutdown::Done {
            return Ok(());
        }
        state.shutdown = Shutdown::Requested;
        if state.sending {
            return Ok(());
        }
        state.shutdown = Shutdown::Done;
        drop(state);
        socket::shutdown_write(self.sock())
    }

    /// `shutdown`: reports a failed send, then shuts the write direction now if
    /// nothing accepted is unsent, else as soon as it is sent (the FIN after the bytes,
    /// as the kernel sends its own buffered bytes first). It does not wait for the peer
    /// to take the bytes, as tokio's does not: a peer that reads only after our
    /// shutdown returns must not hold it. On the loop's thread the completions already
    /// posted are taken in first, so that a short write's stream is shut at once (the
    /// thread may block right after).
    pub(crate) fn shutdown(self: &Arc<Self>) -> io::Result<()> {
        let mut state = lock(&self.state);
        if let Some(e) = state.unreported_write_failure() {
            return Err(e);
        }
        if state.shutdown == Shutdown::Open {
            state.shutdown = Shutdown::Requested;
        }
        let sending = state.sending;
        drop(state);
        if sending {
            super::super::seam::reap_now(&self.shared, |_| {});
        }
        self.shutdown_write()
    }

    /// The send's completion: a short send's rest goes out, a full one makes room
    /// (the next `pending` goes out, or the sends are over and a requested shutdown is
    /// made), a failed one fails every later send. Returns the waiters to wake.
    pub(super) fn sent(
        self: &Arc<Self>,
        state: &mut State,
        c: Completion,
        mem: Option<OpMemory>,
        driver: &mut RingDriver,
    ) -> Waiters {
        state.send = None;
        let buf = mem.and_then(OpMemory::into_bytes).unwrap_or_default();
        if c.result > 0
            && let Some(key) = state.lifecycle.lingering()
        {
            // Progress: a released stream's grace starts over.
            driver.linger_progress(key);
        }
        if c.result < 0 {
            let errno = -c.result;
            if let Some(key) = state.lifecycle.take_lingering() {
                driver.unlinger(key);
            }
            if errno == ECANCELED && driver.is_closing() {
                state.loop_gone = true;
            }
            return self.fail_sends(state, Some(errno));
        }
        if (c.result as usize) < buf.len() && !state.lifecycle.aborted() {
            // A short send: the rest goes out first.
            return self.submit_send_buf(state, Some(driver), buf, c.result as usize);
        }
        // All sent: the window has room again.
        state.writable = true;
        let mut buf = buf;
        buf.clear();
        if buf.capacity() <= SEND_WINDOW && state.spare.capacity() < buf.capacity() {
            state.spare = buf;
        }
        if !state.pending.is_empty() {
            return self.submit_send(state, Some(driver)).and(state.writer.take());
        }
        state.sending = false;
        if let Some(key) = state.lifecycle.take_lingering() {
            driver.unlinger(key);
        }
        if state.shutdown == Shutdown::Requested && !state.lifecycle.aborted() {
            state.shutdown = Shutdown::Done;
            let _ = socket::shutdown_write(self.sock());
        }
        state.writer.take()
    }
}
