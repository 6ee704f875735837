//! Waking a loop task: on its loop's thread with plain loads and stores, from any
//! other thread through the inbox.

use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire};

use super::raw::{DONE, FINAL, Header, NOTIFIED, REF_ONE, RUNNING, SCHEDULED, header, ref_dec};
use super::runnable::LoopRunnable;
use crate::context;
use crate::core::Core;

/// Wakes the task at `ptr`. `owned`: the caller hands over a reference (a `Waker`
/// consumed by `wake`); otherwise it only borrows one.
///
/// # Safety
/// The caller holds a reference to the task.
pub(super) unsafe fn wake(ptr: NonNull<Header>, owned: bool) {
    // SAFETY: the caller's reference keeps the header alive.
    let target = Arc::as_ptr(&unsafe { header(ptr) }.meta.shared);
    // SAFETY (both calls): the caller's reference is passed on as it came.
    if context::on_core_at(target, (), |core, ()| unsafe { wake_local(core, ptr, owned) }).is_err() {
        unsafe { wake_remote(ptr, owned) }
    }
}

/// Wakes by reference the task of `waker`, a loop task's waker, if its loop is the
/// one `core` belongs to, without `wake`'s thread-local lookup: the caller (the loop,
/// dispatching I/O events) already holds its core. False, doing nothing, for a task
/// of another loop.
pub(crate) fn wake_by_ref_on(core: &Core, waker: &std::task::Waker) -> bool {
    debug_assert!(super::is_loop_task_waker(waker));
    let ptr = super::raw::from_waker_data(waker.data());
    // SAFETY: the waker holds a reference for the whole call.
    let h = unsafe { header(ptr) };
    if !std::ptr::eq(Arc::as_ptr(&h.meta.shared), Arc::as_ptr(&core.shared)) {
        return false;
    }
    // SAFETY: the waker's reference is only borrowed, and the caller drives this
    // task's loop (it holds the loop's core).
    unsafe { wake_local(core, ptr, false) };
    true
}

/// A wake on the task's own loop thread: no atomic operation unless a handed-over
/// reference has to be released.
///
/// # Safety
/// As [`wake`], and this thread drives the task's loop (it owns `local`).
#[inline]
unsafe fn wake_local(core: &Core, ptr: NonNull<Header>, owned: bool) {
    // SAFETY: the caller holds a reference.
    let h = unsafe { header(ptr) };
    let local = h.local.get();
    if local & (SCHEDULED | DONE) == 0 {
        h.local.set(local | SCHEDULED);
        // A running task is put back in the queue by `run` once its poll returns (at
        // the back: a task that wakes itself lets everything queued run first).
        if local & RUNNING == 0 {
            core.local.push_wake(LoopRunnable::borrowing_loop_ref(ptr));
        }
    }
    if owned {
        // SAFETY: the handed-over reference is released; `ptr` is not used after.
        unsafe { ref_dec(ptr) };
    }
}

/// A wake from another thread: one remote runnable per batch of wakes, marked by
/// `NOTIFIED`, carrying its own reference through the inbox.
///
/// # Safety
/// As [`wake`].
unsafe fn wake_remote(ptr: NonNull<Header>, owned: bool) {
    // SAFETY: the caller holds a reference.
    let h = unsafe { header(ptr) };
    let mut cur = h.state.load(Acquire);
    loop {
        if cur & (FINAL | NOTIFIED) != 0 {
            // Finished, or a wake is already on its way.
            if owned {
                // SAFETY: the handed-over reference is released.
                unsafe { ref_dec(ptr) };
            }
            return;
        }
        // The runnable takes the caller's reference if handed over, else a new one.
        let next = (cur | NOTIFIED) + if owned { 0 } else { REF_ONE };
        match h.state.compare_exchange_weak(cur, next, AcqRel, Acquire) {
            Ok(_) => break,
            Err(actual) => cur = actual,
        }
    }
    // Keep the loop alive for the whole push: once queued, the runnable may run and
    // the task be freed (with its metadata) before `send_remote` returns.
    let shared = h.meta.shared.clone();
    shared.send_remote(LoopRunnable::remote(ptr));
}
