//! `Task<T>`: the handle that awaits a loop task's output.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::resume_unwind;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::task::{Context, Poll};
use std::thread;

use super::raw::{CANCEL, COMPLETE, FINAL, HANDLE, Header, JOIN_WAKER, REF_ONE, header, ref_count, ref_dec, ref_inc};

/// A future spawned on an event loop: await it for the output.
///
/// Dropping a `Task` cancels the future: it is dropped on its loop at its next turn.
/// Use [`detach`](Task::detach) to let it run to completion unobserved. If the future
/// panicked, awaiting the task resumes the panic; if it was cancelled or its loop
/// terminated first, awaiting panics (use [`fallible`](Task::fallible) to get `None`
/// instead).
///
/// ```
/// use netloop_reactor::EventLoop;
///
/// let mut event_loop = EventLoop::new()?;
/// let task = event_loop.handle().spawn(async { 6 * 7 })?;
/// assert!(!task.is_finished());
/// assert_eq!(event_loop.block_on(task)?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a Task cancels it; call `detach` to let it run"]
pub struct Task<T> {
    ptr: NonNull<Header>,
    _output: PhantomData<T>,
}

// SAFETY: the handle only touches the atomic state, its waker slot under the
// JOIN_WAKER protocol, and the output once COMPLETE is published; moving it to another
// thread moves the output's consumer there, hence `T: Send`.
unsafe impl<T: Send> Send for Task<T> {}
// SAFETY: `&Task` only reads the atomic state.
unsafe impl<T> Sync for Task<T> {}
impl<T> Unpin for Task<T> {}

impl<T> Task<T> {
    /// # Safety
    /// `ptr` is a task allocated with output type `T`, and this handle owns its
    /// `HANDLE` bit and reference.
    pub(super) unsafe fn from_raw(ptr: NonNull<Header>) -> Self {
        Task {
            ptr,
            _output: PhantomData,
        }
    }

    fn header(&self) -> &Header {
        // SAFETY: the handle holds a reference.
        unsafe { header(self.ptr) }
    }

    /// Lets the task run to completion with nobody awaiting it; its output is dropped.
    pub fn detach(self) {
        let this = ManuallyDrop::new(self);
        // SAFETY: the handle's bit and reference are given up once.
        unsafe { release(this.ptr) };
    }

    /// True once the future completed, panicked, or was dropped.
    pub fn is_finished(&self) -> bool {
        self.header().state.load(Acquire) & FINAL != 0
    }

    /// Cancels the task but keeps the handle: the future is dropped at its next turn
    /// on its loop (never in the middle of a poll), and the handle then resolves as
    /// cancelled. No effect on a task that has finished.
    pub fn abort(&self) {
        // SAFETY: the handle holds a reference.
        unsafe { request_cancel(self.ptr) };
    }

    /// A handle that can [`abort`](Self::abort) the task, and outlives this one.
    pub fn abort_handle(&self) -> AbortHandle {
        // SAFETY: the handle holds a reference; the new one is the abort handle's.
        unsafe { ref_inc(self.ptr) };
        AbortHandle { ptr: self.ptr }
    }

    /// Converts into a handle that resolves to `None`, instead of panicking, if the
    /// task was cancelled or its loop terminated before it finished.
    pub fn fallible(self) -> FallibleTask<T> {
        FallibleTask { task: self }
    }

    /// The outcome once final: `None` if the future was dropped without one.
    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Option<thread::Result<T>>> {
        let h = self.header();
        let mut cur = h.state.load(Acquire);
        loop {
            if cur & FINAL != 0 {
                return Poll::Ready(self.take_outcome(cur));
            }
            if cur & JOIN_WAKER != 0 {
                // SAFETY: while JOIN_WAKER is set the slot is only read, by anyone.
                let slot = unsafe { &*h.join_waker.get() };
                if slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    return Poll::Pending;
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
            // SAFETY: JOIN_WAKER is clear, so the task side does not read the slot.
            unsafe { *h.join_waker.get() = Some(cx.waker().clone()) };
            match h.state.compare_exchange_weak(cur, cur | JOIN_WAKER, AcqRel, Acquire) {
                Ok(_) => return Poll::Pending,
                Err(actual) => cur = actual,
            }
        }
    }

    fn take_outcome(&mut self, state: usize) -> Option<thread::Result<T>> {
        if state & COMPLETE == 0 {
            return None;
        }
        let mut out: Option<thread::Result<T>> = None;
        // SAFETY: COMPLETE is published, so the stage belongs to this handle, and `out`
        // has the task's output type.
        unsafe { (self.header().vtable.take_output)(self.ptr, (&raw mut out).cast()) };
        assert!(out.is_some(), "`Task` polled after it completed");
        out
    }
}

/// Gives up a handle: clears `HANDLE` and releases the handle's reference in one
/// step, or, if the output is already there, drops it on this thread first.
///
/// # Safety
/// Called once per handle, with the handle's reference.
unsafe fn release(ptr: NonNull<Header>) {
    // SAFETY: the handle's reference keeps the task alive until it is released.
    let h = unsafe { header(ptr) };
    let mut cur = h.state.load(Acquire);
    loop {
        if cur & COMPLETE != 0 {
            // The task side saw HANDLE set and left the output to this handle.
            // SAFETY: after COMPLETE the stage belongs to the handle.
            unsafe { (h.vtable.drop_stage)(ptr) };
            // SAFETY: the handle's reference is released.
            unsafe { ref_dec(ptr) };
            return;
        }
        // One read-modify-write for both: a detached or dropped handle is the common
        // case, once per spawn.
        match h
            .state
            .compare_exchange_weak(cur, (cur & !HANDLE) - REF_ONE, AcqRel, Acquire)
        {
            Ok(_) => {
                if ref_count(cur) == 1 {
                    // That was the last reference (the loop is done with the task, which
                    // was closed without an output). AcqRel ordered every earlier
                    // release before this point.
                    // SAFETY: nothing else refers to the block.
                    unsafe { (h.vtable.dealloc)(ptr) };
                }
                return;
            }
            Err(actual) => cur = actual,
        }
    }
}

impl<T> Future for Task<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.poll_outcome(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(output))) => Poll::Ready(output),
            Poll::Ready(Some(Err(payload))) => resume_unwind(payload),
            Poll::Ready(None) => panic!("the task was cancelled or its event loop terminated"),
        }
    }
}

/// Sets CANCEL and, the first time on a live task, gives the loop a turn of the task,
/// where it sees CANCEL and drops the future.
///
/// # Safety
/// The caller holds a reference.
unsafe fn request_cancel(ptr: NonNull<Header>) {
    // SAFETY: per the contract.
    if unsafe { header(ptr) }.state.fetch_or(CANCEL, AcqRel) & (FINAL | CANCEL) == 0 {
        // SAFETY: the caller's reference is borrowed for the call.
        unsafe { super::schedule::wake(ptr, false) };
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        // SAFETY: the handle holds a reference.
        unsafe { request_cancel(self.ptr) };
        // SAFETY: the handle's bit and reference are given up once.
        unsafe { release(self.ptr) };
    }
}

impl<T> fmt::Debug for Task<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("loop_id", &self.header().meta.shared.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// A [`Task`] that resolves to `None` if the future was dropped before it finished
/// (cancelled, or its loop terminated). Dropping it cancels the task too.
#[must_use = "dropping a FallibleTask cancels it; call `detach` to let it run"]
pub struct FallibleTask<T> {
    task: Task<T>,
}

impl<T> FallibleTask<T> {
    /// See [`Task::detach`].
    pub fn detach(self) {
        self.task.detach();
    }

    /// See [`Task::abort`]; the handle then resolves to `None`.
    pub fn abort(&self) {
        self.task.abort();
    }

    /// See [`Task::abort_handle`].
    pub fn abort_handle(&self) -> AbortHandle {
        self.task.abort_handle()
    }

    /// See [`Task::is_finished`].
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Polls for the task's outcome without unwinding: `Some(Ok(output))`,
    /// `Some(Err(payload))` if the future panicked (the loop caught it and went on), or
    /// `None` if the future was dropped first.
    ///
    /// This is how a runtime built on loop tasks turns a panic into an error value
    /// (the scheduler's `JoinError::is_panic`) without a second `catch_unwind` inside
    /// every poll of the task.
    pub fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Option<thread::Result<T>>> {
        self.task.poll_outcome(cx)
    }
}

impl<T> Future for FallibleTask<T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match self.task.poll_outcome(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(output))) => Poll::Ready(Some(output)),
            Poll::Ready(Some(Err(payload))) => resume_unwind(payload),
            Poll::Ready(None) => Poll::Ready(None),
        }
    }
}

impl<T> fmt::Debug for FallibleTask<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.task.fmt(f)
    }
}

/// Cancels a loop task from anywhere, without owning its output; see [`Task::abort`].
///
/// It keeps the task's allocation (not its future) alive, so it may outlive the task
/// and its `Task` handle.
pub struct AbortHandle {
    ptr: NonNull<Header>,
}

// SAFETY: an abort handle only touches the atomic state and sends wakes, which any
// thread may do.
unsafe impl Send for AbortHandle {}
// SAFETY: as above, through `&self`.
unsafe impl Sync for AbortHandle {}

impl AbortHandle {
    fn state(&self) -> usize {
        // SAFETY: the abort handle holds a reference.
        unsafe { header(self.ptr) }.state.load(Acquire)
    }

    /// See [`Task::abort`].
    pub fn abort(&self) {
        // SAFETY: the abort handle holds a reference.
        unsafe { request_cancel(self.ptr) };
    }

    /// True once the future completed, panicked, or was dropped.
    pub fn is_finished(&self) -> bool {
        self.state() & FINAL != 0
    }

    /// True once the task was aborted, or its `Task` dropped (which cancels it).
    pub fn is_aborted(&self) -> bool {
        self.state() & CANCEL != 0
    }
}

impl Clone for AbortHandle {
    fn clone(&self) -> Self {
        // SAFETY: the abort handle holds a reference; the clone gets its own.
        unsafe { ref_inc(self.ptr) };
        AbortHandle { ptr: self.ptr }
    }
}

impl Drop for AbortHandle {
    fn drop(&mut self) {
        // SAFETY: the abort handle's reference is released once.
        unsafe { ref_dec(self.ptr) };
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("finished", &self.is_finished())
            .field("aborted", &self.is_aborted())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
impl<T> Task<T> {
    /// References held right now (loop + handle + wakers + remote wakes in flight).
    pub(super) fn refs(&self) -> usize {
        ref_count(self.header().state.load(Acquire))
    }
}
