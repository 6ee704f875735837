//! A connected socket on io_uring: a multishot receive into the loop's provided
//! buffers, whose data waits here until a reader takes it, and sends gathered per turn.
//!
//! ```text
//!             reader task                          loop (completion of the receive)
//!  poll_read: chunks? copy out, give buffers    ◀─ chunk (buffer id, length) queued,
//!             back : no receive armed? recv(2)      reader woken; `MORE` unset: the
//!             once : else arm the receive, wait     receive re-armed unless EOF/error
//!
//!             writer task                          loop (completion of the send)
//!  poll_write: room in `pending`? copy in; no   ─▶ all sent: next `pending` goes out,
//!             send in flight? queue one             or the writer and flush go on and
//!             : wait for room                       a requested shutdown is made;
//!                                                   short: the rest goes out
//! ```
//!
//! Readiness is tokio's: readable until a read finds nothing, writable until a write
//! finds the window full. Each direction wakes the last task to poll it and every task
//! awaiting `readable`/`writable` ([`Waiters`]).
//!
//! Invariants:
//! - The socket owns its own descriptor (`fd`, a duplicate of the stream's): every
//!   operation names that number, which stays open until the last operation that may
//!   name it has completed (each operation holds the socket's `Arc`). The stream's own
//!   descriptor closes whenever the stream goes; nothing the ring does can reach
//!   another file through a reused number.
//! - At most one receive (or, out of buffers, one readiness poll) and one send are in
//!   flight. Bytes in `pending` always have a send in flight or queued (`sending`), so a
//!   dropped stream still sends what it accepted, until its sends make no progress for
//!   [`RELEASE_GRACE`]; then, as when it is dropped with bytes unread or with a zero
//!   linger, a TCP connection is reset (`abort`: `SO_LINGER` 0 on the socket, so the
//!   last close resets), never closed cleanly after lost bytes.
//! - Write errors are the kernel's: once a send fails every later write fails (its
//!   errno first, deferred to the next write, flush or shutdown, then `EPIPE`); a reset
//!   the receive saw fails the next write at once. Bytes accepted and then lost with
//!   the loop fail that write, or else the next flush or shutdown.
//! - At most [`MAX_CHUNKS`] received chunks wait for a reader: past that the receive is
//!   cancelled and re-armed once the reader has taken them, so one unread stream
//!   cannot take its loop's whole buffer pool (and TCP's back-pressure works).
//! - Once `detached` (the stream left the ring), nothing new is submitted. The stream
//!   reads the socket itself only once no chunk is left and no receive is in flight:
//!   until the cancelled receive's last completion (a detach off the loop's thread only
//!   queues the cancel), it may still take bytes that came before anything the socket
//!   holds, so a read waits and that completion wakes it ([`read_leftover`]).
//!
//! [`read_leftover`]: RingSocket::read_leftover

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::completion::{CompleteCx, Completion, CompletionTarget, OpKind, OpMemory, RingDriver};
use crate::context;
use crate::coop;
use crate::core::Core;
use crate::shared::{Shared, Wake};
use crate::sync::lock;
use crate::sys::op;
use crate::sys::ring::BufPool;
use crate::sys::socket::{self, ECANCELED, ECONNRESET, ENOBUFS, EPIPE};

/// How many bytes a writer may have accepted and not yet sent: past this, `poll_write`
/// waits for a send to complete (tokio's back-pressure, from a socket buffer's worth).
const SEND_WINDOW: usize = 64 * 1024;

/// Received chunks a socket may hold unread before its receive is paused.
const MAX_CHUNKS: usize = 16;

/// How long a dropped stream's sends may make no progress before they are given up (a
/// peer that never reads must not hold a descriptor for ever): the connection is then
/// reset, so that the peer cannot take the bytes it got for all of them. A slow peer
/// gets every byte, as from the kernel, which keeps an orphaned socket's data far
/// longer still.
const RELEASE_GRACE: Duration = Duration::from_secs(60);

/// Received bytes not yet read: part of one provided buffer.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    bid: u16,
    start: u32,
    end: u32,
}

#[derive(Debug, Default)]
struct State {
    /// Readable as tokio counts it: set by arriving bytes (and at first, for an
    /// accepted socket, assumed readable), cleared only when a read finds nothing.
    readable: bool,
    chunks: VecDeque<Chunk>,
    /// The receive (or readiness poll) in flight: its op key.
    recv: Option<usize>,
    /// The receive was paused at [`MAX_CHUNKS`]: re-armed when the reader catches up.
    throttled: bool,
    /// End of stream seen (after the chunks).
    eof: bool,
    /// A receive error for the next read (then end of stream).
    read_error: Option<i32>,
    reader: Waiters,
    /// Writable as tokio counts it: cleared only when a write finds the send window
    /// full, set again when a send makes room (or fails).
    writable: bool,
    /// Accepted, not yet handed to a send.
    pending: Vec<u8>,
    /// A send is in flight or queued for submission.
    sending: bool,
    /// The send in flight: its op key.
    send: Option<usize>,
    /// The last send failed: the next write, flush or shutdown reports it.
    write_error: Option<i32>,
    /// A send failed, or a write reported the peer's reset: as the kernel's socket,
    /// every later write fails (`EPIPE` once the first failure is reported).
    write_failed: bool,
    /// The receive saw the peer's reset (`ECONNRESET`), reported or not: a write fails
    /// at once, as the kernel's would.
    peer_reset: bool,
    /// The loop ended with accepted bytes unsent (they are lost): the next flush or
    /// shutdown reports it.
    lost_to_loop_end: bool,
    writer: Waiters,
    /// `shutdown(SHUT_WR)` once everything accepted has been sent.
    shutdown_requested: bool,
    shutdown_done: bool,
    /// The loop shut down: every operation fails from now on.
    loop_gone: bool,
    /// The stream left the ring (`into_std`, readiness): nothing new is submitted.
    detached: bool,
    /// The stream is gone: what it accepted is sent, nothing is received.
    released: bool,
    /// Its entry among the loop's lingering targets while a released stream's sends
    /// finish.
    lingering: Option<usize>,
    /// The released stream's connection is being reset (`SO_LINGER` 0 set, nothing
    /// more is sent, every operation cancelled): the last close sends the reset.
    aborted: bool,
    /// Spare allocation for the next send's bytes.
    spare: Vec<u8>,
}

impl State {
    fn read_would_not_wait(&self) -> bool {
        self.readable || !self.chunks.is_empty() || self.eof || self.read_error.is_some()
    }

    /// A receive is in flight that may still bring bytes: after a detach, those come
    /// before anything the socket holds now (a gone loop completes nothing more).
    fn leftover_in_flight(&self) -> bool {
        self.recv.is_some() && !self.loop_gone
    }

    /// What a flush or shutdown reports, once: a failed send no write reported (every
    /// later write fails), or accepted bytes lost with the loop.
    fn unreported_write_failure(&mut self) -> Option<io::Error> {
        self.take_send_error()
            .or_else(|| std::mem::take(&mut self.lost_to_loop_end).then(loop_gone_error))
    }

    /// A failed send's error, not reported yet; from then on the socket counts as
    /// failed for writes.
    fn take_send_error(&mut self) -> Option<io::Error> {
        let errno = self.write_error.take()?;
        self.write_failed = true;
        Some(io::Error::from_raw_os_error(errno))
    }
}

/// A socket on its loop's ring. Owned jointly by its stream and its operations.
pub(crate) struct RingSocket {
    /// The socket's own descriptor (a duplicate of the stream's), closed with the
    /// last holder of the socket.
    keeper: OwnedFd,
    shared: Arc<Shared>,
    pool: Arc<BufPool>,
    state: Mutex<State>,
}

impl std::fmt::Debug for RingSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingSocket")
            .field("fd", &self.fd())
            .finish_non_exhaustive()
    }
}

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

fn loop_gone_error() -> io::Error {
    crate::error::LoopShutDown::io_error()
}

/// Wakes after the locks are released.
pub(crate) fn wake_all(wakers: impl IntoIterator<Item = Waiters>) {
    wakers.into_iter().flatten().for_each(Waker::wake);
}

/// The tasks waiting on one direction of a socket: the last task to poll through a
/// `poll_*` method (only its waker is kept, as tokio keeps one per direction), and every
/// task awaiting `readable`/`writable` (each is woken, as tokio wakes every waiter).
/// Taken whole when the direction may have changed; an empty one holds no allocation.
#[derive(Debug, Default)]
#[must_use]
pub(crate) struct Waiters {
    last: Option<Waker>,
    all: Vec<Waker>,
}

impl Waiters {
    /// Keeps `waker` as the last poller's, in place of the one before.
    pub(crate) fn set_last(&mut self, waker: &Waker) {
        match &mut self.last {
            Some(w) if w.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
    }

    /// Keeps `cx`'s waker, as the last poller's or (`shared`) beside the others (once,
    /// however often its task polls). Returns the waiters it displaced from a full
    /// list (`shared_waiters`), to wake once the lock is released.
    #[must_use = "displaced waiters must be woken, or a live one waits forever"]
    pub(crate) fn wait(&mut self, cx: &Context<'_>, shared: bool) -> Vec<Waker> {
        if shared {
            super::shared_waiters::join(&mut self.all, cx.waker())
        } else {
            self.set_last(cx.waker());
            Vec::new()
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.last.is_none() && self.all.is_empty()
    }

    /// Every waiter, to wake once the lock is released.
    pub(crate) fn take(&mut self) -> Waiters {
        std::mem::take(self)
    }

    /// These waiters and `other`'s.
    pub(crate) fn and(mut self, other: Waiters) -> Waiters {
        if self.is_empty() {
            return other;
        }
        self.all.extend(other);
        self
    }
}

impl IntoIterator for Waiters {
    type Item = Waker;
    type IntoIter = std::iter::Chain<std::option::IntoIter<Waker>, std::vec::IntoIter<Waker>>;

    fn into_iter(self) -> Self::IntoIter {
        self.last.into_iter().chain(self.all)
    }
}

/// A socket of one loop's ring (a stream's or a datagram socket's): how it reaches the
/// loop's driver, from any thread.
pub(crate) trait OnRing: Send + Sync + Sized + 'static {
    /// The loop's shared state.
    fn loop_shared(&self) -> &Arc<Shared>;

    /// The loop is gone: every waiter hears it.
    fn on_loop_gone(&self);

    /// Runs `f` with the loop's ring driver: at once on the loop's thread (unless the
    /// driver is in use there), else on the loop, woken for it. `f` gets `None` only if
    /// the loop or its ring is gone.
    fn with_driver(self: &Arc<Self>, f: impl FnOnce(&Arc<Self>, Option<&mut RingDriver>) + Send + 'static) {
        let Err(f) = self.on_loop(f) else { return };
        let this = self.clone();
        let run = move || {
            if let Err(f) = this.on_loop(f) {
                f(&this, None);
            }
        };
        let item = crate::queue_item::QueueItem::Closure(Box::new(run));
        if let Err(rejected) = self.loop_shared().submit(item, Wake::Now) {
            drop(rejected);
            self.on_loop_gone();
        }
    }

    /// Runs `f` with the driver if this thread drives the socket's loop and the driver
    /// is free; gives `f` back otherwise.
    fn on_loop<F>(self: &Arc<Self>, f: F) -> Result<(), F>
    where
        F: FnOnce(&Arc<Self>, Option<&mut RingDriver>),
    {
        match context::on_own_core(self.loop_shared(), f, |core, f| match core.ring.try_borrow_mut() {
            Ok(mut ring) => {
                f(self, ring.as_mut());
                Ok(())
            }
            Err(_) => Err(f),
        }) {
            Ok(done) => done,
            Err(f) => Err(f),
        }
    }
}

impl OnRing for RingSocket {
    fn loop_shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn on_loop_gone(&self) {
        self.loop_gone();
    }
}

impl RingSocket {
    /// A socket of `core`'s loop over a duplicate of `fd`, taken as `readable` until a
    /// read finds nothing; `None` if the loop has no ring or no descriptor is left for
    /// the duplicate (the stream then stays on readiness).
    pub(crate) fn new(core: &Core, fd: RawFd, readable: bool) -> Option<Arc<RingSocket>> {
        let pool = core.ring.borrow().as_ref()?.pool().clone();
        // SAFETY: the caller's stream holds `fd` open for this call.
        let keeper = socket::duplicate(unsafe { BorrowedFd::borrow_raw(fd) }).ok()?;
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

    /// The socket's own descriptor's number.
    fn fd(&self) -> RawFd {
        self.keeper.as_raw_fd()
    }

    /// The socket's own descriptor, for a call on the socket.
    fn sock(&self) -> BorrowedFd<'_> {
        self.keeper.as_fd()
    }

    /// The loop this socket's operations run on.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The loop is gone: every waiter hears it.
    fn loop_gone(&self) {
        let mut state = lock(&self.state);
        state.loop_gone = true;
        if state.sending {
            state.lost_to_loop_end = true;
        }
        state.sending = false;
        state.pending.clear();
        let wakers = [state.reader.take(), state.writer.take()];
        drop(state);
        wake_all(wakers);
    }

    // ---- reading -------------------------------------------------------------------

    /// Arms the receive if it is not (caller holds no lock).
    fn arm_recv(self: &Arc<Self>) {
        self.with_driver(|this, driver| {
            let mut state = lock(&this.state);
            if state.recv.is_some() || state.eof || state.read_error.is_some() || state.loop_gone || state.detached {
                return;
            }
            let woken = this.submit_recv(&mut state, driver, false);
            drop(state);
            wake_all([woken]);
        });
    }

    /// Submits the multishot receive (`poll_only`: a one-shot readiness poll, for a
    /// loop out of buffers). Returns the readers to wake if the loop is gone.
    fn submit_recv(self: &Arc<Self>, state: &mut State, driver: Option<&mut RingDriver>, poll_only: bool) -> Waiters {
        let Some(driver) = driver else {
            state.loop_gone = true;
            return state.reader.take();
        };
        let (entry, kind) = if poll_only {
            (op::poll_readable(self.fd()), OpKind::Poll)
        } else {
            (op::recv_multi(self.fd()), OpKind::Recv)
        };
        // SAFETY: the operation holds this socket, which keeps `fd` open until its
        // last completion; the buffer group is the driver's pool, which outlives it.
        match unsafe { driver.submit(self.clone(), kind, entry, None) } {
            Ok(key) => {
                state.recv = Some(key);
                state.throttled = false;
                Waiters::default()
            }
            Err(_) => {
                state.loop_gone = true;
                state.reader.take()
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
            if state.recv.is_none() || state.detached {
                // No receive armed, so none can hold bytes that came earlier: the
                // socket is tried at once (a new connection's first request is usually
                // there already, as tokio assumes of accepted streams; a loop out of
                // buffers reads this way), and the receive is armed only if it has
                // nothing.
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
            let arm = state.recv.is_none() && !state.detached;
            drop(state);
            if arm {
                self.arm_recv();
            }
            return Poll::Pending;
        }
        Poll::Ready(Ok(self.copy_out(state, buf, peek)))
    }

    /// Copies the waiting chunks' bytes into `buf` (taking them, unless `peek`) and
    /// releases the lock; buffers emptied are given back, and a paused receive is
    /// re-armed once the reader has caught up. Returns how many bytes were copied.
    fn copy_out(self: &Arc<Self>, mut state: MutexGuard<'_, State>, buf: &mut [u8], peek: bool) -> usize {
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

    /// A read (or, `peek`, a peek) of a stream that left the ring: the bytes the ring
    /// received come first, in order. While the cancelled receive is still in flight
    /// (a detach off the loop's thread only queues its cancel), it may still bring
    /// bytes that came before anything now in the socket, so the read waits
    /// (`Pending`, `waiter`'s waker kept, woken by the receive's last completion).
    /// Then the chunks left are read, then a receive error the ring took from the
    /// socket; `None` once nothing is left and nothing is in flight: the socket is
    /// read directly from then on.
    pub(crate) fn read_leftover(
        self: &Arc<Self>,
        waiter: Option<(&Context<'_>, bool)>,
        buf: &mut [u8],
        peek: bool,
    ) -> Option<Poll<io::Result<usize>>> {
        let mut state = lock(&self.state);
        if !state.chunks.is_empty() {
            return Some(Poll::Ready(Ok(self.copy_out(state, buf, peek))));
        }
        if state.leftover_in_flight() {
            if let Some((cx, shared)) = waiter {
                let displaced = state.reader.wait(cx, shared);
                drop(state);
                displaced.into_iter().for_each(Waker::wake);
            }
            return Some(Poll::Pending);
        }
        let errno = if peek {
            state.read_error
        } else {
            state.read_error.take()
        }?;
        Some(Poll::Ready(Err(io::Error::from_raw_os_error(errno))))
    }

    /// The read readiness of a stream that left the ring, from what the ring left:
    /// ready while received bytes (or a receive error) wait, `Pending` (`cx`'s waker
    /// kept as [`poll_read_ready`](Self::poll_read_ready) keeps it) while the
    /// cancelled receive is in flight, `None` once the socket's own readiness counts.
    pub(crate) fn poll_leftover_ready(&self, cx: &Context<'_>, shared: bool) -> Option<Poll<io::Result<()>>> {
        let mut state = lock(&self.state);
        if !state.chunks.is_empty() || state.read_error.is_some() {
            return Some(Poll::Ready(Ok(())));
        }
        if !state.leftover_in_flight() {
            return None;
        }
        let displaced = state.reader.wait(cx, shared);
        drop(state);
        displaced.into_iter().for_each(Waker::wake);
        Some(Poll::Pending)
    }

    /// True while bytes received before the stream left the ring (or a receive error)
    /// wait, or may still arrive from the cancelled receive: a read goes through
    /// [`read_leftover`](Self::read_leftover) until this is false.
    pub(crate) fn has_leftover(&self) -> bool {
        let state = lock(&self.state);
        !state.chunks.is_empty() || state.read_error.is_some() || state.leftover_in_flight()
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
        displaced.into_iter().for_each(Waker::wake);
        if arm {
            self.arm_recv();
        }
        Poll::Pending
    }

    // ---- writing -------------------------------------------------------------------

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
        // The readiness query (no bytes) reports no error of its own: tokio's
        // writable() is ready after a shutdown, a failed send or the peer's reset, and a
        // write reports it.
        if total == 0
            && (state.shutdown_requested || state.write_error.is_some() || state.write_failed || state.peer_reset)
        {
            return Poll::Ready(Ok(0));
        }
        if let Some(e) = self.write_failure(&mut state) {
            return Poll::Ready(Err(e));
        }
        if state.shutdown_requested {
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
            if let Some((cx, shared)) = waiter {
                let displaced = state.writer.wait(cx, shared);
                drop(state);
                displaced.into_iter().for_each(Waker::wake);
            }
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
        self.with_driver(|this, driver| {
            let mut state = lock(&this.state);
            let woken = this.submit_send(&mut state, driver);
            drop(state);
            wake_all([woken]);
        });
        self.submit_now_from_main();
    }

    /// From `block_on`'s own future, which may block its thread before the loop's next
    /// turn, the queued operations go to the kernel now.
    fn submit_now_from_main(&self) {
        context::with_own_core(&self.shared, |core| {
            if core.polling_main.get() {
                core.submit_now();
            }
        });
    }

    fn submit_send(self: &Arc<Self>, state: &mut State, driver: Option<&mut RingDriver>) -> Waiters {
        if state.pending.is_empty() {
            state.sending = false;
            return state.writer.take();
        }
        let Some(driver) = driver else {
            state.loop_gone = true;
            return self.fail_sends(state, None);
        };
        let spare = std::mem::take(&mut state.spare);
        let buf = std::mem::replace(&mut state.pending, spare);
        self.submit_send_buf(state, driver, buf, 0)
    }

    /// Sends `buf[offset..]`; the buffer goes with the operation.
    fn submit_send_buf(
        self: &Arc<Self>,
        state: &mut State,
        driver: &mut RingDriver,
        mut buf: Vec<u8>,
        offset: usize,
    ) -> Waiters {
        // The sent prefix goes first, so that the operation's bytes are the whole vector.
        buf.drain(..offset);
        let entry = op::send(self.fd(), &buf);
        // SAFETY: the operation owns `buf` (moving a vector does not move its heap
        // memory, which `entry` points into) and this socket, which keeps `fd` open,
        // until its completion.
        match unsafe { driver.submit(self.clone(), OpKind::Send, entry, Some(OpMemory::Bytes(buf))) } {
            Ok(key) => {
                state.send = Some(key);
                Waiters::default()
            }
            Err(_) => {
                state.loop_gone = true;
                self.fail_sends(state, None)
            }
        }
    }

    /// Every send fails from now on (`errno`, or the loop's shutdown); the writer's
    /// waiters are returned to wake.
    fn fail_sends(&self, state: &mut State, errno: Option<i32>) -> Waiters {
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

    /// For a stream that left the ring: ready once the ring has sent
    /// everything it accepted (so that writes by readiness, and a shutdown, follow
    /// those bytes); `cx`'s waker kept (`shared`: beside the others) until then.
    pub(crate) fn poll_sent(&self, cx: Option<&Context<'_>>, shared: bool) -> Poll<io::Result<()>> {
        let mut state = lock(&self.state);
        if let Some(errno) = state.write_error.take() {
            state.write_failed = true;
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
        if !state.sending || state.loop_gone {
            return Poll::Ready(Ok(()));
        }
        if let Some(cx) = cx {
            let displaced = state.writer.wait(cx, shared);
            drop(state);
            displaced.into_iter().for_each(Waker::wake);
        }
        Poll::Pending
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
        if state.shutdown_done {
            return Ok(());
        }
        state.shutdown_requested = true;
        if state.sending {
            return Ok(());
        }
        state.shutdown_done = true;
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
        state.shutdown_requested = true;
        let sending = state.sending;
        drop(state);
        if sending {
            self.reap_now(|_| {});
        }
        self.shutdown_write()
    }

    /// The stream is dropping: the receive is cancelled (its buffers come back); what
    /// the stream accepted is still sent, until no send has made progress for
    /// [`RELEASE_GRACE`], then the socket's descriptor closes with its last operation.
    /// As the kernel's `tcp_close`, a TCP connection is reset instead ([`abort`]) if
    /// received bytes were never read, or if the socket's linger is zero (`SO_LINGER`
    /// 0) and bytes are unsent. A stream that left the ring (`into_std`) lives on: its
    /// connection is never reset here.
    ///
    /// [`abort`]: Self::abort
    pub(crate) fn release(self: &Arc<Self>) {
        lock(&self.state).released = true;
        self.with_driver(|this, driver| {
            let Some(driver) = driver else { return };
            let mut state = lock(&this.state);
            let reset =
                !state.detached && (!state.chunks.is_empty() || (state.sending && socket::linger_is_zero(this.sock())));
            if reset && this.abort(&mut state, driver) {
                return;
            }
            if let Some(key) = state.recv {
                driver.cancel(key);
            }
            if state.sending {
                let target: Arc<dyn CompletionTarget> = this.clone();
                let (key, schedule) = driver.linger(Arc::downgrade(&target), RELEASE_GRACE);
                state.lingering = Some(key);
                drop(state);
                if schedule {
                    schedule_linger_check(&this.shared);
                }
            }
        });
    }

    /// Resets a released TCP stream's connection, as the kernel's close does when it
    /// finds unread bytes (or a zero linger, or a send stuck past its grace): the
    /// socket's linger is set to zero (on the socket, which the stream's descriptor and
    /// `keeper` share, so the last close sends the reset and drops any unsent byte),
    /// nothing more is sent and every operation is cancelled. False, with nothing done,
    /// for a socket that is not TCP (a Unix socket has no such close) or whose linger
    /// cannot be set.
    fn abort(&self, state: &mut State, driver: &mut RingDriver) -> bool {
        if state.aborted {
            return true;
        }
        if !socket::is_tcp(self.sock()) || !socket::set_linger_zero(self.sock()) {
            return false;
        }
        state.aborted = true;
        state.pending.clear();
        if let Some(key) = state.recv {
            driver.cancel(key);
        }
        if let Some(key) = state.send {
            driver.cancel(key);
        }
        if let Some(key) = state.lingering.take() {
            driver.unlinger(key);
        }
        true
    }

    /// The stream leaves the ring for good (`into_std`, or readiness asked for): on the
    /// loop's thread, the queued sends go to the kernel now and the receive stops at
    /// once, and the completions already waiting are taken in, so that every byte the
    /// ring received is in `chunks` before anything reads the socket directly. Off the
    /// loop's thread the cancel is only queued: reads wait for the receive's last
    /// completion, which wakes them ([`read_leftover`](Self::read_leftover)).
    pub(crate) fn detach(self: &Arc<Self>) {
        lock(&self.state).detached = true;
        let done = self.reap_now(|driver| {
            if let Some(key) = lock(&self.state).recv {
                let _ = driver.ring.cancel_now(key as u64);
            }
        });
        if !done {
            self.with_driver(|this, driver| {
                if let (Some(key), Some(driver)) = (lock(&this.state).recv, driver) {
                    driver.cancel(key);
                }
            });
        }
        // Readers waiting on the ring poll again, by readiness now.
        let readers = lock(&self.state).reader.take();
        wake_all([readers]);
    }
}

impl RingSocket {
    /// See [`reap_now`].
    fn reap_now(&self, then: impl FnOnce(&mut RingDriver)) -> bool {
        reap_now(&self.shared, then)
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
    pub(crate) fn readiness(&self) -> crate::io::Ready {
        use crate::io::Ready;
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

/// On the thread of `shared`'s loop, with its driver and selector free: the queued
/// operations go to the kernel, `then` runs with the driver, and the completions
/// already posted are taken in (their wakers woken). False, with nothing done,
/// anywhere else.
pub(crate) fn reap_now(shared: &Arc<Shared>, then: impl FnOnce(&mut RingDriver)) -> bool {
    context::with_own_core(shared, |core| {
        let Ok(mut ring) = core.ring.try_borrow_mut() else {
            return false;
        };
        // The loop's poll of its epoll instance may complete among the others: the
        // selector notes it (dispatch would drop it, and epoll's events with it), so
        // nothing is taken in while the selector is busy.
        let Ok(mut selector) = core.selector.try_borrow_mut() else {
            return false;
        };
        let Some(driver) = ring.as_mut() else { return false };
        let _ = driver.ring.enter(Some(Duration::ZERO));
        then(driver);
        let mut out = std::mem::take(&mut driver.completions);
        let first = out.len();
        driver.ring.take_completions(&mut out);
        selector.note_epoll_completions(&mut out, first);
        drop(selector);
        driver.completions = out;
        let mut wakers = Vec::new();
        let in_place = |w: &Waker| crate::task::wake_in_place::<Arc<Shared>>(core, w);
        driver.dispatch(&in_place, &mut wakers);
        drop(ring);
        wakers.into_iter().for_each(Waker::wake);
        true
    }) == Some(true)
}

/// How often a loop with released sockets still sending looks for expired graces.
const LINGER_CHECK: Duration = Duration::from_secs(1);

/// Schedules the loop's next look at its lingering sockets (see `RingDriver::linger`).
fn schedule_linger_check(shared: &Arc<Shared>) {
    let handle = crate::handle::EventLoopHandle { shared: shared.clone() };
    let shared = shared.clone();
    let _ = handle.schedule(LINGER_CHECK, move || {
        let again = context::with_own_core(&shared, |core| match core.ring.try_borrow_mut() {
            Ok(mut ring) => ring.as_mut().is_some_and(RingDriver::expire_lingering),
            // Busy (cannot be, from a scheduled task): look again later.
            Err(_) => true,
        });
        if again == Some(true) {
            schedule_linger_check(&shared);
        }
    });
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
        let mut woken = Waiters::default();
        match kind {
            OpKind::Recv => {
                if let Some(bid) = c.buffer() {
                    if c.result > 0 && !state.released {
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
                    // Cancelled by the loop's shutdown (else by a pause, a release or a
                    // detach, which say what follows).
                    r if r < 0 && -r == ECANCELED && cx.driver.is_closing() => state.loop_gone = true,
                    r if r < 0 && -r == ECANCELED => {}
                    // Out of buffers: this socket waits by readiness (a one-shot poll)
                    // and its reader reads directly (`recv_now`) until it arms the
                    // receive again.
                    r if r < 0 && -r == ENOBUFS => {
                        out_of_buffers = true;
                        if !state.reader.is_empty() && !state.detached && !state.released {
                            woken = self.submit_recv(&mut state, Some(cx.driver), true);
                        }
                    }
                    r if r < 0 => {
                        state.read_error = Some(-r);
                        state.peer_reset |= -r == ECONNRESET;
                    }
                    _ => {}
                }
                let receiving =
                    !state.eof && state.read_error.is_none() && !state.loop_gone && !state.detached && !state.released;
                if !stopped {
                    if state.chunks.len() >= MAX_CHUNKS && !state.throttled {
                        // Enough waits unread: pause until the reader catches up.
                        state.throttled = true;
                        if let Some(key) = state.recv {
                            cx.driver.cancel(key);
                        }
                    }
                } else if receiving && !out_of_buffers && state.recv.is_none() {
                    // The receive ended (the kernel's own choice, or the pause's
                    // cancel): on again unless the reader is still behind.
                    if state.chunks.len() <= MAX_CHUNKS / 2 {
                        woken = self.submit_recv(&mut state, Some(cx.driver), false);
                    } else {
                        state.throttled = true;
                    }
                }
                if state.released && !state.detached && c.result > 0 {
                    // Bytes for a dropped stream, which the kernel would have found
                    // unread at the close: the connection is reset.
                    self.abort(&mut state, cx.driver);
                }
                // A detached socket's receive ending lets its reader go on to the
                // socket, which now holds every byte after the chunks.
                if state.read_would_not_wait() || state.loop_gone || (stopped && state.detached) {
                    woken = woken.and(state.reader.take());
                }
            }
            OpKind::Poll => {
                state.recv = None;
                if c.result < 0 && -c.result == ECANCELED && cx.driver.is_closing() {
                    state.loop_gone = true;
                }
                // Readable (or failed): the reader reads directly and re-arms.
                state.readable = true;
                woken = state.reader.take();
            }
            OpKind::Send => {
                state.send = None;
                let buf = mem.and_then(OpMemory::into_bytes).unwrap_or_default();
                if c.result > 0
                    && let Some(key) = state.lingering
                {
                    // Progress: a released stream's grace starts over.
                    cx.driver.linger_progress(key);
                }
                if c.result < 0 {
                    let errno = -c.result;
                    if let Some(key) = state.lingering.take() {
                        cx.driver.unlinger(key);
                    }
                    if errno == ECANCELED && cx.driver.is_closing() {
                        state.loop_gone = true;
                    }
                    woken = self.fail_sends(&mut state, Some(errno));
                } else if (c.result as usize) < buf.len() && !state.aborted {
                    // A short send: the rest goes out first.
                    woken = self.submit_send_buf(&mut state, cx.driver, buf, c.result as usize);
                } else {
                    // All sent: the window has room again.
                    state.writable = true;
                    let mut buf = buf;
                    buf.clear();
                    if buf.capacity() <= SEND_WINDOW && state.spare.capacity() < buf.capacity() {
                        state.spare = buf;
                    }
                    if state.pending.is_empty() {
                        state.sending = false;
                        if let Some(key) = state.lingering.take() {
                            cx.driver.unlinger(key);
                        }
                        if state.shutdown_requested && !state.shutdown_done && !state.aborted {
                            state.shutdown_done = true;
                            let _ = socket::shutdown_write(self.sock());
                        }
                        woken = state.writer.take();
                    } else {
                        woken = self.submit_send(&mut state, Some(cx.driver)).and(state.writer.take());
                    }
                }
            }
            OpKind::Accept | OpKind::RecvMsg | OpKind::PollOut => {
                unreachable!("a stream submits no accept, recvmsg or write poll")
            }
        }
        drop(state);
        for w in woken {
            cx.wake(w);
        }
    }

    /// A dropped stream's sends made no progress for their grace: the connection is
    /// reset ([`abort`](Self::abort)), so that the peer never takes the bytes it got
    /// for all of them; a Unix stream's sends are cancelled and what waits behind them
    /// dropped. Either way the descriptor closes.
    fn linger_expired(self: Arc<Self>, driver: &mut RingDriver) {
        let mut state = lock(&self.state);
        state.lingering = None;
        if !self.abort(&mut state, driver) {
            state.pending.clear();
            if let Some(key) = state.send {
                driver.cancel(key);
            }
        }
    }
}
