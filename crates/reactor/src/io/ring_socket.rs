//! A connected socket on io_uring: a multishot receive into the loop's provided
//! buffers, whose data waits here until a reader takes it, and sends gathered per turn.
//!
//! ```text
//!             reader task                          loop (completion of the receive)
//!  poll_read: chunks? copy out, give buffers    ◀─ chunk (buffer id, length) queued,
//!             back : else arm the receive,          reader woken; `MORE` unset: the
//!             wait                                  receive re-armed unless EOF/error
//!
//!             writer task                          loop (completion of the send)
//!  poll_write: room in `pending`? copy in; no   ─▶ all sent: next `pending` goes out,
//!             send in flight? submit one            or the writer and shutdown go on;
//!             : wait for room                       short: the rest goes out again
//! ```
//!
//! Invariants: at most one receive and one send of a socket are in flight. Bytes in
//! `pending` always have a send in flight or about to be submitted (`sending`), so a
//! dropped socket still sends what it accepted, then closes. The descriptor stays open
//! until the last operation naming it has completed: each operation holds this
//! socket (`Arc`), and the socket closes the descriptor when it drops (`keeper`).

use std::collections::VecDeque;
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use io_uring::{opcode, types};

use crate::completion::{CompleteCx, Completion, CompletionTarget, OpKind, RingDriver};
use crate::context;
use crate::coop;
use crate::core::Core;
use crate::shared::{Shared, Wake};
use crate::sync::lock;
use crate::sys::ring::{BUF_GROUP, BufPool};

/// How many bytes a writer may have accepted and not yet sent: past this, `poll_write`
/// waits for a send to complete (tokio's back-pressure, from a socket buffer's worth).
const SEND_WINDOW: usize = 64 * 1024;

/// Received bytes not yet read: part of one provided buffer.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    bid: u16,
    start: u32,
    end: u32,
}

#[derive(Debug, Default)]
struct State {
    /// Readable as tokio counts it: set by arriving bytes (and at first, an accepted
    /// socket being assumed readable), cleared only when a read finds nothing.
    readable: bool,
    chunks: VecDeque<Chunk>,
    /// The receive in flight (its op key), if armed.
    recv: Option<usize>,
    /// The receive stopped for want of buffers: re-armed at the next read.
    starved: bool,
    /// End of stream seen (after the chunks).
    eof: bool,
    /// A receive error for the next read (then end of stream).
    read_error: Option<i32>,
    reader: Option<Waker>,
    /// Accepted, not yet handed to a send.
    pending: Vec<u8>,
    /// A send is in flight or queued for submission.
    sending: bool,
    /// The last send failed: the next write, flush or shutdown reports it.
    write_error: Option<i32>,
    writer: Option<Waker>,
    /// `shutdown(SHUT_WR)` once everything accepted has been sent.
    shutdown_requested: bool,
    shutdown_done: bool,
    /// The loop shut down: every operation fails from now on.
    loop_gone: bool,
    /// Spare allocation for the next send's bytes.
    spare: Vec<u8>,
}

/// A socket on its loop's ring. Owned jointly by its stream and its operations.
pub(crate) struct RingSocket {
    fd: RawFd,
    /// The descriptor, closed when the last holder goes (`None` until the stream
    /// hands it over: while the stream lives, the stream owns it).
    keeper: Mutex<Option<OwnedFd>>,
    shared: Arc<Shared>,
    pool: Arc<BufPool>,
    state: Mutex<State>,
}

impl std::fmt::Debug for RingSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingSocket")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

fn loop_gone_error() -> io::Error {
    crate::error::LoopShutDown::io_error()
}

impl RingSocket {
    /// A socket of `core`'s loop; the caller keeps `fd` open until it hands it over
    /// with [`keep_open_until_done`](Self::keep_open_until_done).
    pub(crate) fn new(core: &Core, fd: RawFd) -> Option<Arc<RingSocket>> {
        let pool = core.ring.borrow().as_ref()?.pool().clone();
        Some(Arc::new(RingSocket {
            fd,
            keeper: Mutex::new(None),
            shared: core.shared.clone(),
            pool,
            state: Mutex::new(State {
                readable: true,
                ..State::default()
            }),
        }))
    }

    /// The loop this socket's operations run on.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Runs `f` with the loop's ring driver: at once on the loop's thread, else on
    /// the loop (woken for it). `f` gets `None` if the ring is gone or busy.
    fn with_driver(self: &Arc<Self>, f: impl FnOnce(&Arc<RingSocket>, Option<&mut RingDriver>) + Send + 'static) {
        let this = self.clone();
        let f = match context::on_own_core(&self.shared, f, |core, f| match core.ring.try_borrow_mut() {
            Ok(mut ring) => f(&this, ring.as_mut()),
            Err(_) => f(&this, None),
        }) {
            Ok(()) => return,
            Err(f) => f,
        };
        let this = self.clone();
        let item = crate::queue_item::QueueItem::Closure(Box::new(move || {
            let shared = this.shared.clone();
            let f = match context::on_own_core(&shared, f, |core, f| match core.ring.try_borrow_mut() {
                Ok(mut ring) => f(&this, ring.as_mut()),
                Err(_) => f(&this, None),
            }) {
                Ok(()) => return,
                Err(f) => f,
            };
            f(&this, None);
        }));
        if self.shared.submit(item, Wake::Now).is_err() {
            lock(&self.state).loop_gone = true;
        }
    }

    // ---- reading -------------------------------------------------------------------

    /// Arms the multishot receive if it is not (caller holds no lock).
    fn arm_recv(self: &Arc<Self>) {
        self.with_driver(|this, driver| {
            let mut state = lock(&this.state);
            if state.recv.is_some() || state.eof || state.read_error.is_some() || state.loop_gone {
                return;
            }
            this.submit_recv(&mut state, driver);
        });
    }

    fn submit_recv(self: &Arc<Self>, state: &mut State, driver: Option<&mut RingDriver>) {
        let Some(driver) = driver else {
            state.loop_gone = true;
            take_wake(&mut state.reader);
            return;
        };
        let entry = opcode::RecvMulti::new(types::Fd(self.fd), BUF_GROUP).build();
        // SAFETY: the operation holds this socket, which keeps `fd` open until the
        // last completion; the buffer group is the driver's pool, which outlives it.
        match unsafe { driver.submit(self.clone(), OpKind::Recv, entry, None) } {
            Ok(key) => {
                state.recv = Some(key);
                state.starved = false;
            }
            Err(_) => {
                state.loop_gone = true;
                take_wake(&mut state.reader);
            }
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
        if state.chunks.is_empty() {
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
            if state.recv.is_none() && !state.starved {
                // No receive armed, so none can hold bytes that came earlier: the
                // socket is tried at once (a new connection's first request is usually
                // there already, as tokio assumes of accepted streams), and the
                // receive is armed only if it has nothing.
                match recv_now(self.fd, buf, peek) {
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
                match &mut state.reader {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
            }
            let arm = state.recv.is_none();
            drop(state);
            if arm {
                self.arm_recv();
            }
            return Poll::Pending;
        }
        let mut n = 0;
        let mut done = Vec::new();
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
                done.push(chunk.bid);
                state.chunks.pop_front();
            }
        }
        let rearm = state.starved && !peek;
        drop(state);
        if !done.is_empty() {
            // SAFETY: each buffer was emptied and popped above, once.
            unsafe { self.pool.recycle(done) };
        }
        if rearm {
            self.arm_recv();
        }
        Poll::Ready(Ok(n))
    }

    /// `AsyncRead`'s read: spends one unit of the task's budget when data is there.
    pub(crate) fn poll_read(self: &Arc<Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if self.has_data() {
            std::task::ready!(coop::poll_proceed(cx)).made_progress();
        }
        self.read_into(Some(cx), buf, false)
    }

    /// Reads what is there without waiting: `WouldBlock` if nothing is (the receive is
    /// armed so that `readable` will say when).
    pub(crate) fn try_read(self: &Arc<Self>, buf: &mut [u8]) -> io::Result<usize> {
        match self.read_into(None, buf, false) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Copies what is there without taking it.
    pub(crate) fn poll_peek(self: &Arc<Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.read_into(Some(cx), buf, true)
    }

    fn has_data(&self) -> bool {
        let state = lock(&self.state);
        !state.chunks.is_empty() || state.eof || state.read_error.is_some()
    }

    /// Ready when a read would not wait (data, end of stream or an error).
    pub(crate) fn poll_read_ready(self: &Arc<Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut state = lock(&self.state);
        if state.readable || !state.chunks.is_empty() || state.eof || state.read_error.is_some() {
            return Poll::Ready(Ok(()));
        }
        if state.loop_gone {
            return Poll::Ready(Err(loop_gone_error()));
        }
        state.reader = Some(cx.waker().clone());
        let arm = state.recv.is_none();
        drop(state);
        if arm {
            self.arm_recv();
        }
        Poll::Pending
    }

    // ---- writing -------------------------------------------------------------------

    /// Accepts bytes of `bufs` into the send window: `Ready(n)`, or `Pending` (the
    /// writer's waker kept) while the window is full. Reports a failed earlier send.
    pub(crate) fn poll_write(
        self: &Arc<Self>,
        cx: Option<&mut Context<'_>>,
        bufs: &[&[u8]],
    ) -> Poll<io::Result<usize>> {
        let mut state = lock(&self.state);
        if let Some(errno) = state.write_error.take() {
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
        if state.shutdown_requested {
            return Poll::Ready(Err(io::Error::from_raw_os_error(libc::EPIPE)));
        }
        if state.loop_gone {
            return Poll::Ready(Err(loop_gone_error()));
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Poll::Ready(Ok(0));
        }
        let room = SEND_WINDOW.saturating_sub(state.pending.len());
        if room == 0 {
            if let Some(cx) = cx {
                state.writer = Some(cx.waker().clone());
            }
            return Poll::Pending;
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
        drop(state);
        if start {
            self.start_send();
        }
        Poll::Ready(Ok(n))
    }

    /// Submits `pending` as the next send (on the loop).
    fn start_send(self: &Arc<Self>) {
        self.with_driver(|this, driver| {
            let mut state = lock(&this.state);
            this.submit_send(&mut state, driver);
        });
    }

    fn submit_send(self: &Arc<Self>, state: &mut State, driver: Option<&mut RingDriver>) {
        if state.pending.is_empty() {
            state.sending = false;
            return;
        }
        let Some(driver) = driver else {
            self.fail_sends(state, None);
            return;
        };
        let spare = std::mem::take(&mut state.spare);
        let buf = std::mem::replace(&mut state.pending, spare);
        self.submit_send_buf(state, driver, buf, 0);
    }

    /// Sends `buf[offset..]`; the buffer goes with the operation.
    fn submit_send_buf(self: &Arc<Self>, state: &mut State, driver: &mut RingDriver, mut buf: Vec<u8>, offset: usize) {
        // The sent prefix goes first, so that the operation's bytes are the whole vector.
        buf.drain(..offset);
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let entry = opcode::Send::new(types::Fd(self.fd), buf.as_ptr(), len)
            .flags(libc::MSG_NOSIGNAL)
            .build();
        // SAFETY: the operation owns `buf` (moving a vector does not move its heap
        // memory, which `entry` points into) and this socket, which keeps `fd` open,
        // until its completion.
        if unsafe { driver.submit(self.clone(), OpKind::Send, entry, Some(buf)) }.is_err() {
            self.fail_sends(state, None);
        }
    }

    /// Every send fails from now on (`errno`, or the loop's shutdown).
    fn fail_sends(&self, state: &mut State, errno: Option<i32>) {
        match errno {
            Some(e) => state.write_error = Some(e),
            None => state.loop_gone = true,
        }
        state.pending.clear();
        state.sending = false;
        take_wake(&mut state.writer);
    }

    /// Ready once nothing accepted is unsent; reports a failed send.
    pub(crate) fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut state = lock(&self.state);
        if let Some(errno) = state.write_error.take() {
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
        if !state.sending {
            return Poll::Ready(Ok(()));
        }
        state.writer = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Shuts the write direction down once everything accepted has been sent (at once
    /// if nothing is left).
    pub(crate) fn shutdown_write(&self) -> io::Result<()> {
        let mut state = lock(&self.state);
        if state.shutdown_done {
            return Ok(());
        }
        state.shutdown_requested = true;
        if state.sending {
            return Ok(());
        }
        state.shutdown_done = true;
        drop(state);
        shutdown_fd(self.fd)
    }

    /// `poll_shutdown`: waits for the unsent bytes, then shuts the write direction.
    pub(crate) fn poll_shutdown(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_flush(cx))?;
        self.shutdown_write()?;
        Poll::Ready(Ok(()))
    }

    /// The stream is dropping or leaving the ring: the receive is cancelled (its
    /// buffers come back) and `fd` is closed once the last operation is done.
    pub(crate) fn release(self: &Arc<Self>, fd: Option<OwnedFd>) {
        *lock(&self.keeper) = fd;
        self.with_driver(|this, driver| {
            let key = lock(&this.state).recv;
            if let (Some(key), Some(driver)) = (key, driver) {
                driver.cancel(key);
            }
        });
    }

    /// Stops the receive at once (on the loop's thread) and sends what is queued, for
    /// a stream leaving the ring (`into_std`): no byte arriving later goes to a buffer.
    /// Off the loop's thread the cancel is only queued.
    pub(crate) fn detach_now(self: &Arc<Self>) {
        let done = context::with_own_core(&self.shared, |core| {
            if let Ok(mut ring) = core.ring.try_borrow_mut()
                && let Some(driver) = ring.as_mut()
            {
                // The queued sends go to the kernel now, ahead of anything written on
                // the descriptor from here on; the receive stops at once.
                let _ = driver.ring.enter(Some(std::time::Duration::ZERO));
                if let Some(key) = lock(&self.state).recv {
                    let _ = driver.ring.cancel_now(key as u64);
                }
                true
            } else {
                false
            }
        });
        if done != Some(true) {
            self.release(None);
        }
    }
}

/// One `recv(2)` that does not wait (`MSG_PEEK` for a peek).
fn recv_now(fd: RawFd, buf: &mut [u8], peek: bool) -> io::Result<usize> {
    let flags = libc::MSG_DONTWAIT | if peek { libc::MSG_PEEK } else { 0 };
    // SAFETY: `buf` is writable for its length; `fd` is open (its socket holds it).
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn shutdown_fd(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is open (its socket holds it) and `shutdown` touches no memory.
    if unsafe { libc::shutdown(fd, libc::SHUT_WR) } == 0 {
        Ok(())
    } else {
        match io::Error::last_os_error() {
            // Already closed by the peer: nothing left to shut.
            e if e.raw_os_error() == Some(libc::ENOTCONN) => Ok(()),
            e => Err(e),
        }
    }
}

fn take_wake(slot: &mut Option<Waker>) {
    if let Some(w) = slot.take() {
        w.wake();
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
    }
}

impl CompletionTarget for RingSocket {
    fn complete(self: Arc<Self>, kind: OpKind, c: Completion, buf: Option<Vec<u8>>, cx: &mut CompleteCx<'_>) {
        let mut state = lock(&self.state);
        match kind {
            OpKind::Recv => {
                if c.result > 0
                    && let Some(bid) = c.buffer()
                {
                    state.chunks.push_back(Chunk {
                        bid,
                        start: 0,
                        end: c.result as u32,
                    });
                    state.readable = true;
                } else if let Some(bid) = c.buffer() {
                    // A buffer with nothing in it (end of stream): straight back.
                    // SAFETY: handed to us by this completion, given back once.
                    unsafe { self.pool.recycle([bid]) };
                }
                if !c.more() {
                    state.recv = None;
                    match c.result {
                        0 => state.eof = true,
                        r if r > 0 => {
                            // The kernel stopped the multishot (it does so now and
                            // then): keep receiving if someone still reads.
                            if state.reader.is_some() || state.chunks.len() < 2 {
                                self.submit_recv(&mut state, Some(cx.driver));
                            }
                        }
                        r if -r == libc::ENOBUFS => state.starved = true,
                        r if -r == libc::ECANCELED => {}
                        r => state.read_error = Some(-r),
                    }
                }
                let readable = !state.chunks.is_empty() || state.eof || state.read_error.is_some();
                if readable && let Some(w) = state.reader.take() {
                    drop(state);
                    cx.wake(w);
                } else if state.starved && state.reader.is_some() && state.chunks.is_empty() {
                    // Every buffer of the pool is held by readers elsewhere: try again
                    // next turn.
                    self.submit_recv(&mut state, Some(cx.driver));
                }
            }
            OpKind::Send => {
                let buf = buf.unwrap_or_default();
                if c.result < 0 {
                    let errno = -c.result;
                    self.fail_sends(&mut state, Some(errno));
                } else if (c.result as usize) < buf.len() {
                    // A short send: the rest goes out first.
                    self.submit_send_buf(&mut state, cx.driver, buf, c.result as usize);
                    return;
                } else {
                    let mut buf = buf;
                    buf.clear();
                    if buf.capacity() <= SEND_WINDOW && state.spare.capacity() < buf.capacity() {
                        state.spare = buf;
                    }
                    if state.pending.is_empty() {
                        state.sending = false;
                        if state.shutdown_requested && !state.shutdown_done {
                            state.shutdown_done = true;
                            let _ = shutdown_fd(self.fd);
                        }
                    } else {
                        self.submit_send(&mut state, Some(cx.driver));
                    }
                }
                if let Some(w) = state.writer.take() {
                    drop(state);
                    cx.wake(w);
                }
            }
            OpKind::Accept => unreachable!("a stream submits no accept"),
        }
    }
}
