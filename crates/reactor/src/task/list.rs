//! The owner's list of waiting tasks, threaded through their headers.
//!
//! A loop must drop every future it owns on its own thread before it terminates (a
//! `!Send` future dropped anywhere else would be unsound), so it has to find the tasks
//! that are still waiting. A task joins the list the first time a poll returns
//! `Pending` (most short tasks never do) and leaves it when its future is dropped. The
//! links live in the header, so joining and leaving allocate nothing and take no
//! reference: the owner's reference keeps a listed task alive, and a task leaves the
//! list before that reference is released.

use std::cell::Cell;
use std::ptr::NonNull;

use super::header::{Header, header};
use super::state;

/// The owner's list of its waiting tasks, doubly linked through their headers; owner
/// thread only. An executor keeps one in its local half (see
/// [`Schedule::task_list`](super::Schedule::task_list)).
#[derive(Default)]
pub struct TaskList {
    head: Cell<Option<NonNull<Header>>>,
    len: Cell<usize>,
}

// SAFETY: the list moves with its loop (an `EventLoop` may be created on one thread
// and driven on another), but only the thread driving the loop ever reads or changes
// it or the tasks it names: the loop refuses to be driven from a second thread, unless
// every task it holds is `Send` (`EventLoop::move_to_current_thread`, which takes the
// loop by `&mut`, so the new thread sees every write of the old), and a loop dropped
// off its thread with a `!Send` task leaks its tasks untouched.
unsafe impl Send for TaskList {}

impl TaskList {
    /// True if no task is waiting.
    pub fn is_empty(&self) -> bool {
        self.len.get() == 0
    }

    /// Tasks in the list.
    pub fn len(&self) -> usize {
        self.len.get()
    }

    /// True if every listed task is `Send` (see [`Runnable::is_send`](super::Runnable::is_send)): no task here
    /// is bound to the owner's thread.
    ///
    /// # Safety
    /// On the owner's thread (which the caller proves by holding the executor's local
    /// half).
    pub unsafe fn all_send(&self) -> bool {
        let mut next = self.head.get();
        while let Some(ptr) = next {
            // SAFETY: a listed task is alive; on the owner's thread, nothing unlists it
            // meanwhile.
            let h = unsafe { header(ptr) };
            if !state::is_send(h) {
                return false;
            }
            next = h.next.get();
        }
        true
    }

    /// Adds the task at `ptr` at the front.
    ///
    /// # Safety
    /// On the owner's thread; the task is live, not in any list, and its `LISTED` bit
    /// is set.
    pub(super) unsafe fn push(&self, ptr: NonNull<Header>) {
        // SAFETY: the owner's reference keeps the task alive.
        let h = unsafe { header(ptr) };
        let old = self.head.replace(Some(ptr));
        h.prev.set(None);
        h.next.set(old);
        if let Some(old) = old {
            // SAFETY: a listed task is alive (it leaves before it is freed).
            unsafe { header(old) }.prev.set(Some(ptr));
        }
        self.len.set(self.len.get() + 1);
    }

    /// Removes the task at `ptr`.
    ///
    /// # Safety
    /// On the owner's thread; the task is in this list.
    pub(super) unsafe fn remove(&self, ptr: NonNull<Header>) {
        // SAFETY: a listed task is alive, and so are its neighbours.
        let h = unsafe { header(ptr) };
        let (prev, next) = (h.prev.take(), h.next.take());
        match prev {
            // SAFETY: as above.
            Some(prev) => unsafe { header(prev) }.next.set(next),
            None => self.head.set(next),
        }
        if let Some(next) = next {
            // SAFETY: as above.
            unsafe { header(next) }.prev.set(prev);
        }
        self.len.set(self.len.get() - 1);
    }

    /// Takes the task at the front out of the list, its `LISTED` bit cleared; `None`
    /// once the list is empty.
    ///
    /// # Safety
    /// On the owner's thread.
    pub(super) unsafe fn pop(&self) -> Option<NonNull<Header>> {
        let ptr = self.head.get()?;
        // SAFETY: the task is in this list.
        unsafe { self.remove(ptr) };
        // SAFETY: a listed task is alive until its future is dropped.
        state::set_unlisted(unsafe { header(ptr) });
        Some(ptr)
    }
}
