//! Every bit of a task's two state words, and every transition of them.
//!
//! - `local` (`Cell<u8>`: [`QUEUED`], [`POLLING`], [`GONE`], [`LISTED`], [`DEFERRED`])
//!   is read and written only by the thread that owns the task at the time: the thread
//!   driving its loop (or its stand-in while that thread blocks in place, or the thread
//!   a loop of `Send` tasks moved to), or, before the task is first handed over, the
//!   thread that created it. Each hand-over of a loop orders the old owner's writes
//!   before the new owner's reads. Wakes, yields and turns on the owner's thread touch
//!   only this half, with plain loads and stores.
//! - `state` (`AtomicUsize`) holds what other threads need: the reference count, the
//!   outcome ([`COMPLETE`] / [`CLOSED`]), the join handle's handshake ([`HANDLE`],
//!   [`JOIN_WAKER`]), a pending remote wake ([`NOTIFIED`]), a cancel request
//!   ([`CANCEL`]) and a move to another executor before the first poll ([`MOVING`]).
//!   A task moves with its `local` half untouched (it is queued, never polled): the
//!   runnable's hand-off through the new owner's queue orders the old owner's writes
//!   before the new owner's reads.
//!
//! # References
//!
//! Each `Waker`, the `Task<T>` handle, the abort handles and each remote runnable count
//! one reference. The owner holds one more from spawn until the task is [`GONE`] (its
//! future completed or dropped): the local runnable in the run queue borrows that one,
//! which is why queueing and running a task never touch the count. The block is freed
//! when the count reaches zero, which can only happen after `GONE`, so a future is
//! never dropped by a reference release on some other thread.

use std::ptr::NonNull;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

use super::header::{Header, header};
use crate::sync::fence;

// Bits of `Header::state`.
/// The output (or the panic) is stored in the stage.
pub(super) const COMPLETE: usize = 1 << 0;
/// The future was dropped without an output (cancelled, or its loop terminated).
pub(super) const CLOSED: usize = 1 << 1;
/// A `Task<T>` handle exists and may still take the output.
pub(super) const HANDLE: usize = 1 << 2;
/// The handle's waker is in `join_waker`; while set, only the task side reads it.
pub(super) const JOIN_WAKER: usize = 1 << 3;
/// A wake from another thread is on its way to the owner.
pub(super) const NOTIFIED: usize = 1 << 4;
/// The handle was dropped without `detach`, or aborted: drop the future at the next turn.
pub(super) const CANCEL: usize = 1 << 5;
/// The owner of a task that was never polled is handing it to another executor
/// (`Runnable::rebind`): its scheduler is being rewritten, so nobody else may read it.
/// A cancel that lands meanwhile sends no wake (the moving turn will see `CANCEL`).
pub(super) const MOVING: usize = 1 << 6;
/// The future and its output are `Send`: another thread may poll the task while its
/// owner's thread is away in `block_in_place` (the loop's stand-in). Set once, before
/// the task is shared, and never cleared.
pub(super) const SEND: usize = 1 << 7;
/// One reference.
pub(super) const REF_ONE: usize = 1 << 8;
/// Either outcome: nothing will run again.
pub(super) const FINAL: usize = COMPLETE | CLOSED;

/// A new task's `state`: the owner's reference and the handle's.
pub(super) const INITIAL: usize = HANDLE | (2 * REF_ONE);

// Bits of `Header::local`.
/// A local runnable for the task is in the run queue (or among the executor's deferred
/// turns), or it is being polled and was woken meanwhile.
pub(super) const QUEUED: u8 = 1;
/// The future is being polled.
pub(super) const POLLING: u8 = 2;
/// The future is gone (completed or dropped); the owner's reference is released.
pub(super) const GONE: u8 = 4;
/// The task is in the owner's [`TaskList`](super::TaskList).
pub(super) const LISTED: u8 = 8;
/// Being polled, the task deferred its own wake until its executor's next I/O poll
/// (`yield_now`, a spent budget): its turn goes to [`Schedule::defer_local`] when the
/// poll ends, unless a wake came meanwhile. A wake that comes after the poll ended
/// finds the task queued (the deferred turn): it runs after that I/O poll, not sooner.
///
/// [`Schedule::defer_local`]: super::Schedule::defer_local
pub(super) const DEFERRED: u8 = 16;

/// A new task's `local`: it starts queued (its runnable is about to be).
pub(super) const INITIAL_LOCAL: u8 = QUEUED;

// ---- The owner's half ----

/// A wake on the owner's thread. True if the caller must queue a local runnable: the
/// task was neither queued nor done, and is not being polled (a task woken while it is
/// polled is put back by its turn, at the back of the queue).
#[inline]
pub(super) fn wake_local(h: &Header) -> bool {
    let local = h.local.get();
    if local & (QUEUED | GONE) != 0 {
        return false;
    }
    h.local.set(local | QUEUED);
    local & POLLING == 0
}

/// The start of a remote runnable's turn: later wakes from other threads need a
/// runnable of their own again. True if the turn goes on (the task is idle); false if
/// it is queued already (that turn will see this wake), done, or being polled: an
/// executor that can be driven from inside one of its own tasks (a `LocalSet`) may run
/// this turn during that task's poll, which then puts the task back, as for a wake on
/// its own thread.
#[inline]
pub(super) fn begin_remote_turn(h: &Header) -> bool {
    h.state.fetch_and(!NOTIFIED, AcqRel);
    let local = h.local.get();
    if local & POLLING != 0 && local & GONE == 0 {
        h.local.set(local | QUEUED);
        return false;
    }
    local & (QUEUED | POLLING | GONE) == 0
}

/// True if the task was asked to stop (its handle dropped or aborted).
#[inline]
pub(super) fn is_cancelled(h: &Header) -> bool {
    h.state.load(Acquire) & CANCEL != 0
}

/// The poll begins.
#[inline]
pub(super) fn begin_poll(h: &Header) {
    h.local.set(POLLING | (h.local.get() & LISTED));
}

/// A task being polled defers its own wake (see [`DEFERRED`]). False, changing
/// nothing, unless the task is being polled, not yet woken, and not done.
#[inline]
pub(super) fn defer_local(h: &Header) -> bool {
    let local = h.local.get();
    if local & (POLLING | QUEUED | GONE) != POLLING {
        return false;
    }
    h.local.set(local | DEFERRED);
    true
}

/// What a turn does after a poll that returned `Pending`.
pub(super) enum AfterPoll {
    /// Woken during the poll: queue it again.
    Requeue,
    /// It deferred its own wake during the poll: queue it after the next I/O poll.
    Defer,
    /// As `Defer`, and put it in the owner's list first: it waits for the first time.
    DeferAndList,
    /// Waiting for the first time: put it in the owner's list.
    List,
    /// Waiting, already listed.
    Wait,
}

/// The poll returned `Pending`.
#[inline]
pub(super) fn end_poll(h: &Header) -> AfterPoll {
    let local = h.local.get();
    if local & QUEUED != 0 {
        h.local.set(QUEUED | (local & LISTED));
        return AfterPoll::Requeue;
    }
    if local & DEFERRED != 0 {
        // Queued from now on (later wakes find the deferred turn), and listed like any
        // waiting task: it counts among the live ones, and termination finds it.
        h.local.set(QUEUED | LISTED);
        return if local & LISTED != 0 {
            AfterPoll::Defer
        } else {
            AfterPoll::DeferAndList
        };
    }
    if local & LISTED != 0 {
        h.local.set(LISTED);
        return AfterPoll::Wait;
    }
    h.local.set(LISTED);
    AfterPoll::List
}

/// The future is about to be dropped or has completed: from now on wakes are ignored
/// (also those from inside its destructor). Returns whether it was listed.
#[inline]
pub(super) fn set_done(h: &Header) -> bool {
    let listed = h.local.get() & LISTED;
    h.local.set(GONE | listed);
    listed != 0
}

/// The task left the owner's list.
#[inline]
pub(super) fn set_unlisted(h: &Header) {
    h.local.set(h.local.get() & !LISTED);
}

/// Publishes `outcome` (COMPLETE or CLOSED) to the handle; returns the state before.
/// Only the owner sets the outcome bits, once, after [`set_done`].
pub(super) fn publish_outcome(h: &Header, outcome: usize) -> usize {
    h.state.fetch_or(outcome, AcqRel)
}

/// True if no handle exists any more (so nobody else will look at the stage).
#[inline]
pub(super) fn handle_gone(h: &Header) -> bool {
    h.state.load(Acquire) & HANDLE == 0
}

// ---- Any thread ----

/// Marks a wake from another thread. True if the caller must send a remote runnable,
/// which then holds a reference: the caller's, if `owned`, else a new one counted
/// here. False (releasing an `owned` reference is then the caller's) if the task is
/// finished or a remote wake is already on its way.
pub(super) fn notify_remote(h: &Header, owned: bool) -> bool {
    let mut cur = h.state.load(Acquire);
    loop {
        if cur & (FINAL | NOTIFIED) != 0 {
            return false;
        }
        let next = (cur | NOTIFIED) + if owned { 0 } else { REF_ONE };
        match h.state.compare_exchange_weak(cur, next, AcqRel, Acquire) {
            Ok(_) => return true,
            Err(actual) => cur = actual,
        }
    }
}

/// Sets CANCEL. True the first time on a live task: the caller then gives the owner a
/// turn of the task, where it sees CANCEL and drops the future.
///
/// Not while the task is [`MOVING`]: its one turn is then in the mover's hands, queued,
/// and will see `CANCEL` where it lands; a wake would read the scheduler being rewritten.
pub(super) fn request_cancel(h: &Header) -> bool {
    h.state.fetch_or(CANCEL, AcqRel) & (FINAL | CANCEL | MOVING) == 0
}

/// The owner starts moving a never-polled, queued task to another executor. True if it
/// may: no cancel, wake or outcome has touched the task, so no other thread reads its
/// scheduler now, and none will until [`end_move`] (a cancel seeing `MOVING` sends no
/// wake; a never-polled task has no waker to be woken through).
pub(super) fn begin_move(h: &Header) -> bool {
    let mut cur = h.state.load(Relaxed);
    loop {
        if cur & (FINAL | NOTIFIED | CANCEL | MOVING) != 0 {
            return false;
        }
        // Only references and the handle's bits can change meanwhile.
        match h.state.compare_exchange_weak(cur, cur | MOVING, Acquire, Relaxed) {
            Ok(_) => return true,
            Err(actual) => cur = actual,
        }
    }
}

/// The move is over: the new scheduler is written, and a cancel that sees `MOVING`
/// cleared (it acquires the state word) sees that scheduler too.
pub(super) fn end_move(h: &Header) {
    h.state.fetch_and(!MOVING, Release);
}

/// True if the task was marked `Send` (see [`SEND`]).
#[inline]
pub(super) fn is_send(h: &Header) -> bool {
    h.state.load(Relaxed) & SEND != 0
}

/// The references counted in a `state` value.
pub(super) fn ref_count(state: usize) -> usize {
    state / REF_ONE
}

/// Adds a reference.
///
/// # Safety
/// The caller holds a reference to the task.
pub(super) unsafe fn ref_inc(ptr: NonNull<Header>) {
    // SAFETY: per the contract.
    let prev = unsafe { header(ptr) }.state.fetch_add(REF_ONE, Relaxed);
    if prev > usize::MAX / 2 {
        // Millions of wakers leaked: stop before the count wraps (as `Arc` does).
        std::process::abort();
    }
}

/// Releases a reference, freeing the task with the last one.
///
/// # Safety
/// The caller gives up a reference it holds; `ptr` must not be used afterwards.
pub(super) unsafe fn ref_dec(ptr: NonNull<Header>) {
    // SAFETY: per the contract.
    unsafe { ref_dec_setting(ptr, 0) };
}

/// [`ref_dec`] that also sets `bits` in the same read-modify-write (so another thread
/// sees them published with the release).
///
/// # Safety
/// As [`ref_dec`]; every bit of `bits` is clear before, and no other thread sets any
/// of them meanwhile.
pub(super) unsafe fn ref_dec_setting(ptr: NonNull<Header>, bits: usize) {
    // SAFETY: the reference being released keeps the block alive until here.
    let h = unsafe { header(ptr) };
    let prev = h.state.fetch_add(bits.wrapping_sub(REF_ONE), Release);
    debug_assert!(prev >= REF_ONE, "task reference count underflow");
    debug_assert!(prev & bits == 0, "bits set by ref_dec_setting were already set");
    if ref_count(prev) == 1 {
        // Every other release happened before this one (they are `Release`, this
        // acquires them), so nothing touches the block any more.
        acquire_releases(h);
        // SAFETY: that was the last reference.
        unsafe { (h.vtable.dealloc)(ptr) };
    }
}

/// The acquire half of freeing the block with the last reference: every earlier
/// release of a reference happens before what the caller does next.
#[inline]
fn acquire_releases(h: &Header) {
    if cfg!(netloop_tsan) {
        // ThreadSanitizer does not model fences: under `--cfg netloop_tsan` (the TSan
        // CI step) the same edge comes from an acquire load of the word itself. It
        // reads the caller's own release (nothing writes the word once the count is
        // zero), which continues the release sequence of every earlier release, so it
        // synchronizes with all of them, as the fence does. std's `Arc` makes the
        // same swap under TSan.
        h.state.load(Acquire);
    } else {
        fence(Acquire);
    }
}

// ---- The join handle's side ----

/// What the handle found when it looked for the outcome.
pub(super) enum JoinPoll {
    /// Final: the state word at that moment.
    Final(usize),
    /// Not yet; the handle's waker is registered.
    Pending,
}

/// Registers `waker` as the handle's (unless the registered one would wake the same
/// task) or reports the outcome if it is final.
///
/// # Safety
/// Called by the task's one handle, which holds a reference.
pub(super) unsafe fn poll_join(h: &Header, waker: &std::task::Waker) -> JoinPoll {
    let mut cur = h.state.load(Acquire);
    loop {
        if cur & FINAL != 0 {
            return JoinPoll::Final(cur);
        }
        if cur & JOIN_WAKER != 0 {
            // SAFETY: while JOIN_WAKER is set the slot is only read, by anyone.
            let slot = unsafe { &*h.join_waker.get() };
            if slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
                return JoinPoll::Pending;
            }
            // Take the slot back to put another waker in it.
            match h.state.compare_exchange_weak(cur, cur & !JOIN_WAKER, AcqRel, Acquire) {
                Ok(_) => cur &= !JOIN_WAKER,
                Err(actual) => {
                    cur = actual;
                    continue;
                }
            }
        }
        // SAFETY: JOIN_WAKER is clear, so the task side does not read the slot, and
        // this is the only handle.
        unsafe { *h.join_waker.get() = Some(waker.clone()) };
        match h.state.compare_exchange_weak(cur, cur | JOIN_WAKER, AcqRel, Acquire) {
            Ok(_) => return JoinPoll::Pending,
            Err(actual) => cur = actual,
        }
    }
}

/// What giving up the handle left to do.
pub(super) enum HandleRelease {
    /// The output is there and now the releaser's to drop, with its reference.
    DropOutput,
    /// The handle bit and its reference are gone; true if that was the last reference.
    Released { last: bool },
}

/// Gives up the handle: clears `HANDLE` and releases the handle's reference in one
/// step, unless the output is already there.
pub(super) fn release_handle(h: &Header) -> HandleRelease {
    let mut cur = h.state.load(Acquire);
    loop {
        if cur & COMPLETE != 0 {
            // The task side saw HANDLE set and left the output to this handle.
            return HandleRelease::DropOutput;
        }
        match h
            .state
            .compare_exchange_weak(cur, (cur & !HANDLE) - REF_ONE, AcqRel, Acquire)
        {
            // AcqRel ordered every earlier release before this point.
            Ok(_) => {
                return HandleRelease::Released {
                    last: ref_count(cur) == 1,
                };
            }
            Err(actual) => cur = actual,
        }
    }
}

/// Wakes the handle's waker if the task side owns it (`prev` is the state before the
/// outcome was published).
///
/// # Safety
/// The outcome bit is now set, so the handle no longer writes `join_waker`.
pub(super) unsafe fn wake_join_waker(h: &Header, prev: usize) {
    if prev & JOIN_WAKER != 0 {
        // SAFETY: JOIN_WAKER was set when the outcome was published: the slot holds
        // the handle's waker and the handle can no longer change it.
        if let Some(waker) = unsafe { &*h.join_waker.get() } {
            waker.wake_by_ref();
        }
    }
}

/// True if `state` (a value of the word) has no handle.
#[inline]
pub(super) fn handle_gone_in(state: usize) -> bool {
    state & HANDLE == 0
}
