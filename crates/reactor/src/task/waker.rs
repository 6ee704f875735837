//! A task's waker: one vtable for every task, whose functions go through the task's
//! own vtable to the wake paths of its loop type (`runnable.rs`).

use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::header::{Header, header};
use super::state::{ref_dec, ref_inc};

/// The one waker vtable of every task, whatever its loop: its address is how a waker
/// is recognised as a task's ([`is_task_waker`]). What differs per loop type is
/// reached through the header's vtable.
static WAKER_VTABLE: RawWakerVTable = RawWakerVTable::new(clone_waker, wake_owned, wake_by_ref, drop_waker);

/// Whether `waker` is a task's waker (of any loop).
#[inline]
pub(crate) fn is_task_waker(waker: &Waker) -> bool {
    std::ptr::eq(waker.vtable(), &WAKER_VTABLE)
}

/// A waker for the task at `ptr` that borrows a reference (do not drop it).
pub(super) fn raw_waker(ptr: NonNull<Header>) -> RawWaker {
    RawWaker::new(ptr.as_ptr().cast_const().cast(), &WAKER_VTABLE)
}

/// The task a waker of [`WAKER_VTABLE`] names.
///
/// # Safety
/// `data` is the data pointer of a waker with [`WAKER_VTABLE`].
pub(super) unsafe fn from_waker_data(data: *const ()) -> NonNull<Header> {
    // SAFETY: every `RawWaker` with this vtable was made by `raw_waker` from a
    // non-null header pointer.
    unsafe { NonNull::new_unchecked(data.cast_mut().cast()) }
}

/// Records, in the task that `waker` wakes, the `tracing` id of the span its executor
/// made for it (tokio's `runtime.spawn`): from then on each clone, wake and drop of
/// one of its wakers emits tokio's waker event (target `tokio::task::waker`, fields
/// `op` and `task.id`, the span's id), which console-subscriber counts per task.
/// Returns false, recording nothing, if `waker` is not a task's.
///
/// This layer neither makes nor reads spans: the id is an opaque number to it.
#[cfg(all(tokio_unstable, feature = "tracing"))]
pub fn record_span_id(waker: &Waker, span_id: u64) -> bool {
    if !is_task_waker(waker) {
        return false;
    }
    // SAFETY: a task's waker's data is its header, kept alive by the waker.
    let h = unsafe { header(from_waker_data(waker.data())) };
    h.span_id.store(span_id, std::sync::atomic::Ordering::Relaxed);
    true
}

/// Emits tokio's waker event `op` for the task at `ptr` if it has a span.
///
/// # Safety
/// The caller holds a reference to the task.
#[cfg(all(tokio_unstable, feature = "tracing"))]
#[inline]
pub(super) unsafe fn trace_op(ptr: NonNull<Header>, op: &'static str) {
    // SAFETY: the caller's reference keeps the block alive.
    let id = unsafe { header(ptr) }
        .span_id
        .load(std::sync::atomic::Ordering::Relaxed);
    if id != 0 {
        tracing::trace!(target: "tokio::task::waker", op = op, task.id = id);
    }
}

/// Without tokio's `tracing`, wakers emit nothing and this is gone.
#[cfg(not(all(tokio_unstable, feature = "tracing")))]
#[inline(always)]
pub(super) unsafe fn trace_op(_: NonNull<Header>, _: &'static str) {}

unsafe fn clone_waker(data: *const ()) -> RawWaker {
    // SAFETY: called through `WAKER_VTABLE`.
    let ptr = unsafe { from_waker_data(data) };
    // SAFETY: the waker being cloned holds a reference.
    unsafe { trace_op(ptr, "waker.clone") };
    // SAFETY: the waker being cloned holds a reference.
    unsafe { ref_inc(ptr) };
    raw_waker(ptr)
}

unsafe fn wake_owned(data: *const ()) {
    // SAFETY: called through `WAKER_VTABLE`; the waker's reference is handed over.
    unsafe {
        let ptr = from_waker_data(data);
        trace_op(ptr, "waker.wake");
        (header(ptr).vtable.wake)(ptr, true);
    }
}

unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: called through `WAKER_VTABLE`; the waker holds a reference for the call.
    unsafe {
        let ptr = from_waker_data(data);
        trace_op(ptr, "waker.wake_by_ref");
        (header(ptr).vtable.wake)(ptr, false);
    }
}

unsafe fn drop_waker(data: *const ()) {
    // SAFETY: called through `WAKER_VTABLE`; the waker's reference is released, after
    // the event (which reads the header).
    unsafe {
        let ptr = from_waker_data(data);
        trace_op(ptr, "waker.drop");
        ref_dec(ptr);
    }
}

/// A clone of a task's waker that the task's executor keeps for its own bookkeeping
/// (the task dump's slot): taking and releasing it emit none of tokio's waker events,
/// which count the wakers the task's own code holds. Waking it is a real wake and is
/// reported. Any other waker is held as a plain clone.
#[cfg(tokio_unstable)]
pub struct QuietWaker(std::mem::ManuallyDrop<Waker>);

#[cfg(tokio_unstable)]
impl QuietWaker {
    /// A clone of `waker`.
    pub fn new(waker: &Waker) -> QuietWaker {
        if !is_task_waker(waker) {
            return QuietWaker(std::mem::ManuallyDrop::new(waker.clone()));
        }
        // SAFETY: a task's waker's data is its header; `waker` holds a reference, so
        // the block is alive, and the new reference is owned by the new waker.
        unsafe {
            let ptr = from_waker_data(waker.data());
            ref_inc(ptr);
            QuietWaker(std::mem::ManuallyDrop::new(Waker::from_raw(raw_waker(ptr))))
        }
    }
}

#[cfg(tokio_unstable)]
impl std::ops::Deref for QuietWaker {
    type Target = Waker;

    fn deref(&self) -> &Waker {
        &self.0
    }
}

#[cfg(tokio_unstable)]
impl Drop for QuietWaker {
    fn drop(&mut self) {
        if is_task_waker(&self.0) {
            // SAFETY: the waker owns one reference (taken in `new`), released here
            // once, without the event; the waker itself is not dropped.
            unsafe { ref_dec(from_waker_data(self.0.data())) };
        } else {
            // SAFETY: dropped once, here.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.0) };
        }
    }
}
