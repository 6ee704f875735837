//! `Task<T>`: the handle that awaits a loop task's output.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::resume_unwind;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::Acquire;
use std::task::{Context, Poll};
use std::thread;

use super::header::{Header, header};
use super::state::{self, CANCEL, COMPLETE, FINAL, HandleRelease, JoinPoll, ref_dec, ref_inc};

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
// SAFETY: `&Task` only reads the atomic state. The bound is not needed for that; it
// keeps a handle whose output may not cross threads from being shared across them, as
// tokio's `JoinHandle` (`Sync` only if `T: Send`).
unsafe impl<T: Send> Sync for Task<T> {}
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

    /// The id given at spawn (by the `*_with_id` spawns, or [`spawn_unchecked`]); 0 if
    /// none was.
    ///
    /// [`spawn_unchecked`]: super::spawn_unchecked
    pub fn id(&self) -> u64 {
        self.header().id
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
        // SAFETY: this is the task's one handle, holding a reference.
        match unsafe { state::poll_join(self.header(), cx.waker()) } {
            JoinPoll::Final(state) => Poll::Ready(self.take_outcome(state)),
            JoinPoll::Pending => Poll::Pending,
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

/// Gives up a handle, dropping the output on this thread if it is already there.
///
/// # Safety
/// Called once per handle, with the handle's reference.
unsafe fn release(ptr: NonNull<Header>) {
    // SAFETY: the handle's reference keeps the task alive until it is released.
    let h = unsafe { header(ptr) };
    match state::release_handle(h) {
        HandleRelease::DropOutput => {
            // SAFETY: after COMPLETE the stage belongs to the handle; then the handle's
            // reference is released.
            unsafe {
                (h.vtable.drop_stage)(ptr);
                ref_dec(ptr);
            }
        }
        // SAFETY: that was the last reference (the task was closed without an output).
        HandleRelease::Released { last: true } => unsafe { (h.vtable.dealloc)(ptr) },
        HandleRelease::Released { last: false } => {}
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

/// Asks the task to stop: the first time on a live task, gives its owner a turn of it,
/// where it sees CANCEL and drops the future.
///
/// # Safety
/// The caller holds a reference.
unsafe fn request_cancel(ptr: NonNull<Header>) {
    // SAFETY: per the contract.
    let h = unsafe { header(ptr) };
    if state::request_cancel(h) {
        // SAFETY: the caller's reference is borrowed for the call.
        unsafe { (h.vtable.wake)(ptr, false) };
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
        f.debug_struct("Task").field("finished", &self.is_finished()).finish()
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

    /// See [`Task::id`].
    pub fn id(&self) -> u64 {
        self.task.id()
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
    fn header(&self) -> &Header {
        // SAFETY: the abort handle holds a reference.
        unsafe { header(self.ptr) }
    }

    fn state(&self) -> usize {
        self.header().state.load(Acquire)
    }

    /// See [`Task::id`].
    pub fn id(&self) -> u64 {
        self.header().id
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
        state::ref_count(self.header().state.load(Acquire))
    }
}
