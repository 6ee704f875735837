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

unsafe fn clone_waker(data: *const ()) -> RawWaker {
    // SAFETY: called through `WAKER_VTABLE`.
    let ptr = unsafe { from_waker_data(data) };
    // SAFETY: the waker being cloned holds a reference.
    unsafe { ref_inc(ptr) };
    raw_waker(ptr)
}

unsafe fn wake_owned(data: *const ()) {
    // SAFETY: called through `WAKER_VTABLE`; the waker's reference is handed over.
    unsafe {
        let ptr = from_waker_data(data);
        (header(ptr).vtable.wake)(ptr, true);
    }
}

unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: called through `WAKER_VTABLE`; the waker holds a reference for the call.
    unsafe {
        let ptr = from_waker_data(data);
        (header(ptr).vtable.wake)(ptr, false);
    }
}

unsafe fn drop_waker(data: *const ()) {
    // SAFETY: called through `WAKER_VTABLE`; the waker's reference is released.
    unsafe { ref_dec(from_waker_data(data)) };
}
