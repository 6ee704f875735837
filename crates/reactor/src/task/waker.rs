//! A task's waker, and the two ways a wake reaches the owner: on its thread with plain
//! loads and stores, from any other thread as a remote runnable.

use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::Schedule;
use super::header::{Header, header, scheduler};
use super::runnable::Runnable;
use super::state::{self, ref_dec, ref_inc};

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
unsafe fn from_waker_data(data: *const ()) -> NonNull<Header> {
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

/// Wakes the task at `ptr`, whose loop type is `S`. `owned`: the caller hands over a
/// reference (a `Waker` consumed by `wake`); otherwise it only borrows one.
///
/// # Safety
/// The caller holds a reference to the task, which was allocated with scheduler `S`.
pub(super) unsafe fn wake<S: Schedule>(ptr: NonNull<Header>, owned: bool) {
    // SAFETY: the caller's reference keeps the task alive.
    let h = unsafe { header(ptr) };
    // The owner check borrows the scheduler from the task only for itself: queueing
    // the task may free it (its loop has terminated), and with it the scheduler.
    let on_owner = S::with_current(|local| match local {
        // SAFETY: per the contract.
        Some(local) if unsafe { scheduler::<S>(ptr) }.is_local(local) => {
            queue_local::<S>(local, ptr);
            true
        }
        _ => false,
    });
    if on_owner {
        if owned {
            // SAFETY: the handed-over reference is released; `ptr` is not used after.
            unsafe { ref_dec(ptr) };
        }
        return;
    }
    if !state::notify_remote(h, owned) {
        if owned {
            // SAFETY: as above.
            unsafe { ref_dec(ptr) };
        }
        return;
    }
    // The runnable holds a reference of its own (the caller's, or one just counted).
    // Keep the loop alive for the whole send: once sent, the runnable may run and the
    // task be freed (with its scheduler) before `schedule_remote` returns.
    // SAFETY: per the contract.
    let scheduler = unsafe { scheduler::<S>(ptr) }.clone();
    // SAFETY: `notify_remote` set NOTIFIED and gave the runnable its reference.
    scheduler.schedule_remote(unsafe { Runnable::from_notified(ptr) });
}

/// A wake on the owner's thread: queues a local runnable unless one is queued or the
/// task is being polled or done. Takes the pointer, not a reference: queueing may free
/// the task.
#[inline]
fn queue_local<S: Schedule>(local: &S::Local, ptr: NonNull<Header>) {
    // SAFETY: the caller holds a reference to the task.
    if state::wake_local(unsafe { header(ptr) }) {
        // SAFETY: `wake_local` just set QUEUED for this runnable.
        S::schedule_local(local, unsafe { Runnable::from_scheduled(ptr) });
    }
}

/// Wakes by reference the task of `waker` if it is one of `local`'s loop's tasks,
/// without `wake`'s thread-local lookup or indirect call: for the loop dispatching I/O
/// events, which already holds its local half. False, doing nothing, for any other
/// waker.
#[inline]
pub(crate) fn wake_in_place<S: Schedule>(local: &S::Local, waker: &Waker) -> bool {
    if !is_task_waker(waker) {
        return false;
    }
    // SAFETY: the waker has `WAKER_VTABLE`.
    let ptr = unsafe { from_waker_data(waker.data()) };
    // SAFETY: the waker holds a reference for the whole call.
    let h = unsafe { header(ptr) };
    if !std::ptr::fn_addr_eq(h.vtable.wake, wake::<S> as unsafe fn(NonNull<Header>, bool)) {
        // A task of another loop type.
        return false;
    }
    // SAFETY: the task's scheduler is an `S` (its vtable's wake is `wake::<S>`).
    if !unsafe { scheduler::<S>(ptr) }.is_local(local) {
        return false;
    }
    queue_local::<S>(local, ptr);
    true
}
