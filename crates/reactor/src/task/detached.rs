//! The handle of a task that never ran. A spawn that its executor refuses (it has shut
//! down) still gives its caller a handle, with the task's id, that resolves as
//! cancelled: this makes one, with an executor that never runs anything.

use std::future::pending;

use super::join::Task;
use super::list::TaskList;
use super::runnable::{Runnable, Schedule};
use super::spawn_unchecked;

/// An executor with no thread: its tasks are only ever dropped unrun.
#[derive(Clone, Copy)]
struct Detached;

// SAFETY: no thread is ever the owner (`with_current` gives no local half), and every
// runnable is dropped as soon as it exists; a task of this executor never runs.
unsafe impl Schedule for Detached {
    type Local = TaskList;

    fn with_current<R>(f: impl FnOnce(Option<&TaskList>) -> R) -> R {
        f(None)
    }

    fn is_local(&self, _: &TaskList) -> bool {
        false
    }

    /// Never called (no thread is the owner). Dropping here is allowed against the
    /// trait's rule only because such a task's future is `pending()`, with no
    /// destructor to run.
    fn schedule_local(_: &TaskList, runnable: Runnable<Self>) {
        drop(runnable);
    }

    fn schedule_remote(&self, runnable: Runnable<Self>) {
        drop(runnable);
    }

    fn task_list(local: &TaskList) -> &TaskList {
        local
    }
}

/// A handle, with id `id`, for a task that never ran: it is finished, and resolves as
/// cancelled (`None` from a [`FallibleTask`](super::FallibleTask)).
///
/// ```
/// let task = netloop_reactor::task::cancelled::<u32>(7).fallible();
/// assert!(task.is_finished());
/// assert_eq!(task.id(), 7);
/// assert_eq!(futures::executor::block_on(task), None);
/// ```
pub fn cancelled<T: 'static>(id: u64) -> Task<T> {
    // SAFETY: the future holds nothing, and its runnable is dropped here, unpolled, on
    // the thread that made it.
    let (runnable, task) = unsafe { spawn_unchecked(&Detached, pending::<T>(), None, id) };
    drop(runnable);
    task
}
