//! The completion side of a loop on io_uring: the operations in flight, who owns the
//! memory each names, and the dispatch of their completions.
//!
//! ```text
//!   task (loop thread)            loop: select                 loop: process I/O
//!   ───────────────────           ─────────────────────        ─────────────────────────
//!   submit(target, entry, mem) ─▶ one io_uring_enter: the  ─▶  dispatch: each completion
//!     op table: key → (target,      turn's entries go in,        finds its op by key,
//!     mem the kernel reads or       completions come out         target.complete(.., mem)
//!     writes)                                                    (single-shot: the op and
//!                                                                 its memory leave the
//!   cancel(key) / drop of the ──▶ the cancel goes in; the       table only now, the
//!   target's owner: the op and    op's completion (ECANCELED,   memory handed back to
//!   its memory stay in the table  or its result if it won)      the target)
//!   until that completion         still comes out
//! ```
//!
//! `mem` ([`OpMemory`]) is a send's bytes, or a `recvmsg`'s one heap allocation (its
//! header, `iovec`, address and buffer, which point only into it: moving its handle
//! into the table and back moves none of them). Receives into the loop's provided buffers
//! own no memory of their own: the pool's buffers are lent by the ring (`sys::ring`).
//!
//! Who owns what: an entry's `user_data` is its op's key. The op, and with it the
//! target (`Arc`) and any memory the kernel reads or writes, stays in the table until
//! the operation's last completion (no `MORE` flag) arrives, however early the task
//! that asked for it drops its socket. A target's descriptor therefore stays open while
//! any entry naming it may still be submitted or run. On shutdown the loop cancels
//! everything and waits for the last completion before the ring, the table and the
//! buffer pool go ([`RingDriver::drain`]).
//!
//! This module knows nothing of sockets: a target is any [`CompletionTarget`].

use std::io;
use std::sync::{Arc, Weak};
use std::task::Waker;
use std::time::{Duration, Instant};

use slab::Slab;

use crate::sys::op::{self, CANCEL, EPOLL_POLL, Entry};
pub(crate) use crate::sys::ring::Completion;
use crate::sys::ring::{BufPool, RecvMsgMemory, Ring};

/// How long a loop's shutdown lets sends finish what their streams accepted.
const SEND_GRACE_AT_SHUTDOWN: Duration = Duration::from_millis(500);

/// Submission-queue slots of each loop's ring.
const RING_ENTRIES: u32 = 1024;
/// Provided buffers per loop, and the size of each: 4 MiB per loop, touched when the
/// loop starts (the kernel takes buffers in ring order, so all of them are used soon
/// anyway; a process's resident memory then does not creep up as they are). Every
/// arrival on a stream whose receive is armed takes one buffer until its reader has
/// read it, so the count bounds the arrivals a loop can hold between two of its turns:
/// a closed loop over 1,024 connections needs about as many. A loop out of buffers
/// still works (the receive waits by a poll and reads directly), one system call per
/// read.
const POOL_BUFFERS: u16 = 2048;
const POOL_BUFFER_SIZE: usize = 2048;

/// What an operation's completion goes to. Implemented by the io_uring sockets.
pub(crate) trait CompletionTarget: Send + Sync {
    /// One completion of an operation this target submitted. `mem` is the memory the
    /// operation owned, given back with its last completion. `cx` submits follow-up
    /// operations and wakes tasks.
    fn complete(self: Arc<Self>, kind: OpKind, completion: Completion, mem: Option<OpMemory>, cx: &mut CompleteCx<'_>);

    /// The grace a released target was given ([`RingDriver::linger`]) ran out.
    fn linger_expired(self: Arc<Self>, _driver: &mut RingDriver) {}
}

/// What an operation is, for its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpKind {
    Recv,
    /// A one-shot readiness poll (a receive waiting for buffers).
    Poll,
    Send,
    Accept,
    /// A one-shot `recvmsg` into memory the operation owns ([`OpMemory::Msg`]).
    RecvMsg,
    /// A one-shot poll for writability (a datagram socket whose send would block).
    PollOut,
}

/// Memory an operation's entry points into, owned by the operation until its last
/// completion (moving it moves no heap memory the kernel was told of).
#[derive(Debug)]
pub(crate) enum OpMemory {
    /// A send's bytes.
    Bytes(Vec<u8>),
    /// A `recvmsg`'s header, address, `iovec` and buffer.
    Msg(RecvMsgMemory),
}

impl OpMemory {
    /// A send's bytes; `None` for any other memory.
    pub(crate) fn into_bytes(self) -> Option<Vec<u8>> {
        match self {
            OpMemory::Bytes(bytes) => Some(bytes),
            OpMemory::Msg(_) => None,
        }
    }

    /// A `recvmsg`'s memory; `None` for any other memory.
    pub(crate) fn into_msg(self) -> Option<RecvMsgMemory> {
        match self {
            OpMemory::Msg(msg) => Some(msg),
            OpMemory::Bytes(_) => None,
        }
    }
}

struct Op {
    target: Arc<dyn CompletionTarget>,
    kind: OpKind,
    /// Memory the kernel reads or writes (a send's bytes, a `recvmsg`'s header, address
    /// and buffer) until the last completion.
    mem: Option<OpMemory>,
}

/// One loop's ring, its operations in flight and its provided buffers. Lives in the
/// loop's `Core`; used on the thread that drives the loop.
pub(crate) struct RingDriver {
    pub(crate) ring: Ring,
    ops: Slab<Op>,
    pool: Arc<BufPool>,
    /// Completions of the last select, for the I/O step.
    pub(crate) completions: Vec<Completion>,
    /// Set once the loop drains its ring: no operation may start any more, except
    /// sends while `sends_may_finish`.
    closing: bool,
    /// During a drain's first part: sends (the rest of what streams accepted) may still
    /// be submitted and complete.
    sends_may_finish: bool,
    /// Released targets still finishing their operations, with the end of their grace
    /// and the grace (which starts over on each progress); a target leaves when it is
    /// done ([`unlinger`](Self::unlinger)) or expires.
    lingering: Slab<(Instant, Duration, Weak<dyn CompletionTarget>)>,
    /// A check of `lingering` is scheduled on the loop.
    linger_check_armed: bool,
}

impl std::fmt::Debug for RingDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingDriver")
            .field("in_flight", &self.ops.len())
            .finish()
    }
}

/// A completion target's handle on the driver while it handles a completion.
pub(crate) struct CompleteCx<'a> {
    pub(crate) driver: &'a mut RingDriver,
    /// Wakes a task of this loop in place; false if the waker is not one.
    pub(crate) in_place: &'a dyn Fn(&Waker) -> bool,
    /// Other wakers, woken once the driver is released.
    pub(crate) wakers: &'a mut Vec<Waker>,
    /// Wakes that crossed to another thread.
    pub(crate) remote_wakes: u64,
}

impl CompleteCx<'_> {
    /// Wakes `waker`: in place if it is one of this loop's tasks.
    pub(crate) fn wake(&mut self, waker: Waker) {
        if !(self.in_place)(&waker) {
            self.remote_wakes += 1;
            self.wakers.push(waker);
        }
    }
}

impl RingDriver {
    /// A driver with a fresh ring and pool, or the kernel's reason for refusing one.
    pub(crate) fn new() -> io::Result<RingDriver> {
        let ring = Ring::new(RING_ENTRIES)?;
        let pool = Arc::new(BufPool::new(POOL_BUFFERS, POOL_BUFFER_SIZE)?);
        ring.register_pool(&pool)?;
        Ok(RingDriver {
            ring,
            ops: Slab::with_capacity(256),
            pool,
            completions: Vec::with_capacity(256),
            closing: false,
            sends_may_finish: false,
            lingering: Slab::new(),
            linger_check_armed: false,
        })
    }

    /// The provided-buffer pool, which completions' owners read and give buffers back to.
    pub(crate) fn pool(&self) -> &Arc<BufPool> {
        &self.pool
    }

    /// Queues `entry` for the next select's `io_uring_enter`, its completions to go to
    /// `target`; `mem` (the memory `entry` points into, if any) stays with the
    /// operation until its last completion. Returns the operation's key, for a cancel.
    ///
    /// # Safety
    ///
    /// Whatever `entry` names other than `mem`'s heap memory (the descriptor, the
    /// buffer group) stays valid until the operation's last completion: `target` must
    /// keep the descriptor open for as long as it is alive.
    pub(crate) unsafe fn submit(
        &mut self,
        target: Arc<dyn CompletionTarget>,
        kind: OpKind,
        entry: Entry,
        mem: Option<OpMemory>,
    ) -> io::Result<usize> {
        if self.closing && !(kind == OpKind::Send && self.sends_may_finish) {
            return Err(crate::error::LoopShutDown::io_error());
        }
        let slot = self.ops.vacant_entry();
        let key = slot.key();
        let entry = entry.user_data(key as u64);
        // SAFETY: the op (with `mem` and `target`, which keeps the descriptor open)
        // enters the table before the kernel can see the entry, and leaves it only at
        // the last completion.
        unsafe { self.ring.push(&entry)? };
        slot.insert(Op { target, kind, mem });
        Ok(key)
    }

    /// Gives a released target until `grace` from now, or from its last progress
    /// ([`linger_progress`](Self::linger_progress)), to finish its operations.
    /// Returns its entry's key (for [`unlinger`](Self::unlinger)), and true if the caller
    /// must schedule a check ([`expire_lingering`](Self::expire_lingering)): one is
    /// scheduled per loop at a time, however many targets linger.
    pub(crate) fn linger(&mut self, target: Weak<dyn CompletionTarget>, grace: Duration) -> (usize, bool) {
        let key = self.lingering.insert((Instant::now() + grace, grace, target));
        (key, !std::mem::replace(&mut self.linger_check_armed, true))
    }

    /// A lingering target made progress: its grace starts over (O(1)).
    pub(crate) fn linger_progress(&mut self, key: usize) {
        if let Some((end, grace, _)) = self.lingering.get_mut(key) {
            *end = Instant::now() + *grace;
        }
    }

    /// A lingering target finished in time.
    pub(crate) fn unlinger(&mut self, key: usize) {
        self.lingering.try_remove(key);
    }

    /// Tells the targets whose grace ran out. True if targets still linger (the caller
    /// schedules the next check).
    pub(crate) fn expire_lingering(&mut self) -> bool {
        let now = Instant::now();
        let expired: Vec<usize> = self
            .lingering
            .iter()
            .filter(|(_, (end, _, target))| *end <= now || target.strong_count() == 0)
            .map(|(key, _)| key)
            .collect();
        for key in expired {
            let (_, _, target) = self.lingering.remove(key);
            if let Some(target) = target.upgrade() {
                target.linger_expired(self);
            }
        }
        self.linger_check_armed = !self.lingering.is_empty();
        self.linger_check_armed
    }

    /// True once the loop drains its ring (a cancel now means the loop is going).
    pub(crate) fn is_closing(&self) -> bool {
        self.closing
    }

    /// Asks the kernel to cancel operation `key` (its completion, `ECANCELED` or its
    /// result if it won the race, still arrives).
    pub(crate) fn cancel(&mut self, key: usize) {
        if !self.ops.contains(key) {
            return;
        }
        let entry = op::cancel(key as u64);
        // SAFETY: a cancel names no memory.
        if let Err(e) = unsafe { self.ring.push(&entry) } {
            tracing::warn!(target: "netloop::reactor", error = %e, "could not queue an io_uring cancel");
        }
    }

    /// Hands each completion of the last select to its operation's target. Returns
    /// (completions dispatched, wakes that crossed threads).
    pub(crate) fn dispatch(&mut self, in_place: &dyn Fn(&Waker) -> bool, wakers: &mut Vec<Waker>) -> (u64, u64) {
        let completions = std::mem::take(&mut self.completions);
        let mut remote = 0;
        for &completion in &completions {
            let key = completion.user_data;
            if key == CANCEL || key == EPOLL_POLL {
                continue;
            }
            let key = key as usize;
            let last = !completion.more();
            let (target, kind, mem) = if last {
                let Some(op) = self.ops.try_remove(key) else { continue };
                (op.target, op.kind, op.mem)
            } else {
                let Some(op) = self.ops.get(key) else { continue };
                (op.target.clone(), op.kind, None)
            };
            let mut cx = CompleteCx {
                driver: self,
                in_place,
                wakers,
                remote_wakes: 0,
            };
            target.complete(kind, completion, mem, &mut cx);
            remote += cx.remote_wakes;
        }
        let n = completions.len() as u64;
        // Keep the vector's capacity for the next select.
        let mut completions = completions;
        completions.clear();
        if self.completions.is_empty() {
            self.completions = completions;
        }
        (n, remote)
    }

    /// Cancels every operation in flight and waits (up to `limit`) for their last
    /// completions, dispatching them, so that nothing in flight names memory about to
    /// be freed. Returns the operations still in flight (0 unless the kernel took
    /// longer than `limit`).
    pub(crate) fn drain(&mut self, limit: Duration, wakers: &mut Vec<Waker>) -> usize {
        // First the receives, accepts and polls; sends get a moment to finish what
        // their streams accepted (as the kernel sends what a closed socket had
        // buffered); then whatever is left is cancelled too.
        self.closing = true;
        self.sends_may_finish = true;
        let deadline = Instant::now() + limit;
        self.cancel_where(|kind| kind != OpKind::Send);
        self.wait_while(Instant::now() + SEND_GRACE_AT_SHUTDOWN.min(limit), wakers, |ops| {
            !ops.is_empty()
        });
        self.sends_may_finish = false;
        self.cancel_where(|_| true);
        self.wait_while(deadline, wakers, |ops| !ops.is_empty());
        self.ops.len()
    }

    fn cancel_where(&mut self, pick: impl Fn(OpKind) -> bool) {
        let keys: Vec<usize> = self
            .ops
            .iter()
            .filter(|(_, op)| pick(op.kind))
            .map(|(key, _)| key)
            .collect();
        for key in keys {
            self.cancel(key);
        }
    }

    /// Submits, waits and dispatches until `busy` says otherwise or `deadline` passes.
    fn wait_while(&mut self, deadline: Instant, wakers: &mut Vec<Waker>, busy: impl Fn(&Slab<Op>) -> bool) {
        while busy(&self.ops) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            if let Err(e) = self.ring.enter(Some(deadline - now)) {
                tracing::warn!(target: "netloop::reactor", error = %e, "io_uring_enter failed while draining");
                break;
            }
            let mut out = std::mem::take(&mut self.completions);
            self.ring.take_completions(&mut out);
            self.completions = out;
            self.dispatch(&|_| false, wakers);
        }
    }
}

impl Drop for RingDriver {
    fn drop(&mut self) {
        let mut wakers = Vec::new();
        let left = self.drain(Duration::from_secs(5), &mut wakers);
        wakers.into_iter().for_each(Waker::wake);
        if left > 0 {
            // The kernel still holds memory of these operations: leak it rather than
            // free what it may write.
            tracing::error!(target: "netloop::reactor", left,
                "io_uring operations still in flight at the loop's end; leaking their memory");
            std::mem::forget(std::mem::take(&mut self.ops));
            std::mem::forget(self.pool.clone());
        }
    }
}
