//! A loop task's turn to run: what sits in the run queue and the inbox.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::task::{Context, Waker};

use super::raw::{
    CANCEL, CLOSED, COMPLETE, DONE, HANDLE, Header, NOTIFIED, RUNNING, SCHEDULED, header, raw_waker, ref_dec,
    ref_dec_setting, wake_join_waker,
};
use crate::core::Core;

/// One scheduled turn of a loop task.
///
/// Two kinds: a *local* runnable stands for the task's `SCHEDULED` bit and borrows the
/// loop's reference (at most one exists per task); a *remote* runnable is a wake from
/// another thread (`NOTIFIED`) with a reference of its own, and becomes a turn only if
/// the task is idle when the loop gets to it. Dropping a local runnable unrun drops
/// the future (on the loop's thread, or on the spawning thread for a task that was
/// never queued); dropping a remote one only releases its reference, so it may be
/// dropped anywhere.
pub(crate) struct LoopRunnable {
    /// The header's address, with [`REMOTE_TAG`] set for a remote runnable. One word:
    /// a `bool` beside the pointer made every queue push a byte store followed by a
    /// 16-byte load of the same bytes, a store-forwarding stall measured at about a
    /// tenth of a yield.
    tagged: NonNull<u8>,
}

/// Headers are at least 8-byte aligned, so the low bit is free.
const REMOTE_TAG: usize = 1;

// SAFETY: a local runnable crosses threads only on its first hand-off (spawned on one
// thread, queued on its loop), when its future is `Send` or not built yet
// (`spawn_pinned`); after that it stays on the loop's thread. A remote runnable never
// touches the future or the owner-only state off the loop's thread.
unsafe impl Send for LoopRunnable {}

impl LoopRunnable {
    /// A local runnable for a task whose `SCHEDULED` bit the caller just set (or a
    /// newly allocated one, which starts scheduled).
    pub(super) fn borrowing_loop_ref(ptr: NonNull<Header>) -> Self {
        LoopRunnable { tagged: ptr.cast() }
    }

    /// A remote wake; the caller has set `NOTIFIED` and given it a reference.
    pub(super) fn remote(ptr: NonNull<Header>) -> Self {
        const { assert!(align_of::<Header>() > REMOTE_TAG) };
        LoopRunnable {
            tagged: ptr.cast::<u8>().map_addr(|a| a | REMOTE_TAG),
        }
    }

    pub(super) fn ptr(&self) -> NonNull<Header> {
        let untagged = self.tagged.as_ptr().map_addr(|a| a & !REMOTE_TAG);
        // SAFETY: the header's address is non-null and has the tag bit clear.
        unsafe { NonNull::new_unchecked(untagged.cast()) }
    }

    fn is_remote(&self) -> bool {
        self.tagged.addr().get() & REMOTE_TAG != 0
    }

    /// Polls the task once, on the thread driving `core` (its loop). A task that woke
    /// itself while running goes back to the run queue.
    ///
    /// Inlined into its one caller, the loop's panic guard, which then holds the
    /// whole turn in one frame.
    #[inline]
    pub(crate) fn run(self, core: &Core) {
        let this = ManuallyDrop::new(self);
        let ptr = this.ptr();
        // SAFETY: a runnable holds or borrows a reference.
        let h = unsafe { header(ptr) };
        if this.is_remote() {
            // Later wakes from other threads need a runnable of their own again.
            h.state.fetch_and(!NOTIFIED, AcqRel);
            let busy = h.local.get() & (SCHEDULED | RUNNING | DONE) != 0;
            // SAFETY: the remote reference is released. If the task is not DONE the
            // loop's reference keeps it alive below; if it is, `h` is not used again.
            unsafe { ref_dec(ptr) };
            if busy {
                // Already queued (that turn will see this wake), or finished.
                return;
            }
        }
        if h.state.load(Acquire) & CANCEL != 0 {
            // SAFETY: the loop's thread, the task is not DONE.
            unsafe { close(ptr) };
            return;
        }
        h.local.set(RUNNING);
        // The waker borrows the loop's reference: never dropped, so never released.
        // SAFETY: the vtable's functions uphold the `RawWaker` contract.
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(raw_waker(ptr)) });
        let mut cx = Context::from_waker(&waker);
        // SAFETY: the loop's thread polls a task that is not DONE.
        if unsafe { (h.vtable.poll)(ptr, &mut cx) } {
            // SAFETY: the outcome is stored; this thread owns the task.
            unsafe { complete(ptr) };
            return;
        }
        if h.local.get() & SCHEDULED != 0 {
            h.local.set(SCHEDULED);
            core.local.push_wake(LoopRunnable::borrowing_loop_ref(ptr));
            return;
        }
        h.local.set(0);
    }
}

impl Drop for LoopRunnable {
    fn drop(&mut self) {
        if self.is_remote() {
            // SAFETY: the remote reference is released.
            unsafe { ref_dec(self.ptr()) };
        } else {
            // SAFETY: a local runnable is dropped unrun on the loop's thread, or on the
            // spawning thread before the task was ever queued (see `Send` above).
            unsafe { close(self.ptr()) };
        }
    }
}

/// Publishes the stored outcome, then [`finish`]es.
///
/// # Safety
/// On the owner thread, right after `poll` stored the outcome.
pub(super) unsafe fn complete(ptr: NonNull<Header>) {
    // SAFETY: per the contract.
    unsafe { finish(ptr, COMPLETE) };
}

/// Drops the future without an outcome (cancelled, or the loop is terminating), unless
/// its destructor panics: that panic becomes the outcome.
///
/// # Safety
/// On the owner thread (or the only thread that ever held the task), task not DONE.
unsafe fn close(ptr: NonNull<Header>) {
    // SAFETY: the loop's reference is still held.
    let h = unsafe { header(ptr) };
    // DONE first: wakes from inside the future's destructor are ignored.
    h.local.set(DONE);
    // SAFETY: the owner thread has the stage.
    let panicked = unsafe { (h.vtable.drop_stage)(ptr) };
    // A destructor's panic was stored as the outcome: the task completed with it.
    // SAFETY: per the contract.
    unsafe { finish(ptr, if panicked { COMPLETE } else { CLOSED }) };
}

/// Marks the task DONE, publishes `outcome` (COMPLETE or CLOSED), tells the handle,
/// and releases the loop's reference. An output nobody can take any more is dropped
/// here, on the task's own thread.
///
/// # Safety
/// On the owner thread; for COMPLETE the outcome is stored, for CLOSED the stage is
/// already empty.
unsafe fn finish(ptr: NonNull<Header>, outcome: usize) {
    // SAFETY: the loop's reference is still held.
    let h = unsafe { header(ptr) };
    h.local.set(DONE);
    if h.state.load(Acquire) & HANDLE == 0 {
        // No handle, and none can come back (HANDLE is only ever cleared): nobody
        // else will look at the stage. The common case, a detached task, so one
        // read-modify-write instead of two: drop the output, then publish the outcome
        // and release the loop's reference together.
        if outcome == COMPLETE {
            // SAFETY: the handle is gone, so the stage is this thread's.
            unsafe { (h.vtable.drop_stage)(ptr) };
        }
        // SAFETY: the loop's reference is released; only this function sets the
        // outcome bits, once.
        unsafe { ref_dec_setting(ptr, outcome) };
        return;
    }
    let prev = h.state.fetch_or(outcome, AcqRel);
    if outcome == COMPLETE && prev & HANDLE == 0 {
        // SAFETY: the handle is gone, so the stage is this thread's.
        unsafe { (h.vtable.drop_stage)(ptr) };
    } else {
        // SAFETY: the outcome is published.
        unsafe { wake_join_waker(h, prev) };
    }
    // SAFETY: the loop's reference is released; `ptr` is not used after.
    unsafe { ref_dec(ptr) };
}
