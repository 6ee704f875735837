//! Task ids: `task::Id`, and which task this thread is polling (`task::id`).

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

/// An opaque id of a spawned task, unique among the tasks of a process.
///
/// Useful to tell tasks apart in logs, or to match a [`JoinError`](super::JoinError) or a
/// [`JoinSet`](super::JoinSet) result with the task it came from:
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let handle = task::spawn(async { task::id() }); // the id, seen from inside
///     let id = handle.id();
///     assert_eq!(handle.await.unwrap(), id);
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(u64);

/// Ids a thread takes from the global counter at a time, so that spawning threads do
/// not all bounce one cache line for every task.
const ID_BLOCK: u64 = 1024;

impl Id {
    pub(crate) fn as_u64(self) -> u64 {
        self.0
    }

    /// The id a task's header holds (every task of this crate is spawned with one).
    pub(crate) fn from_u64(id: u64) -> Id {
        Id(id)
    }

    pub(crate) fn next() -> Id {
        static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);
        thread_local! {
            /// The next id of this thread's block, and the end of the block.
            static BLOCK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        }
        let take_block = || {
            let start = NEXT_BLOCK.fetch_add(ID_BLOCK, Relaxed);
            (start, start + ID_BLOCK)
        };
        BLOCK
            .try_with(|b| {
                let (mut next, mut end) = b.get();
                if next == end {
                    (next, end) = take_block();
                }
                b.set((next + 1, end));
                Id(next)
            })
            // During thread teardown: a block of one.
            .unwrap_or_else(|_| Id(take_block().0))
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Sets the current task id for a poll and puts the outer one back when dropped, also
/// when the poll unwinds (the loop task catches the panic; the thread goes on).
pub(super) struct IdGuard(Option<Id>);

impl IdGuard {
    #[inline]
    pub(super) fn enter(id: Id) -> IdGuard {
        IdGuard(CURRENT_ID.with(|c| c.replace(Some(id))))
    }
}

impl Drop for IdGuard {
    #[inline]
    fn drop(&mut self) {
        CURRENT_ID.with(|c| c.set(self.0));
    }
}

thread_local! {
    /// The id of the task being polled on this thread, for `task::id()`.
    static CURRENT_ID: Cell<Option<Id>> = const { Cell::new(None) };
}

/// The id of the task polled on this thread, if any (tokio's `task::try_id`).
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// assert!(task::try_id().is_none()); // not in a task
/// let rt = Builder::new_current_thread().build()?;
/// let id = rt.block_on(async { task::spawn(async { task::try_id() }).await.unwrap() });
/// assert!(id.is_some());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn try_id() -> Option<Id> {
    CURRENT_ID.try_with(Cell::get).ok().flatten()
}

/// The id of the running task; panics outside a task (tokio's `task::id`).
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let a = task::spawn(async { task::id() });
///     let b = task::spawn(async { task::id() });
///     assert_ne!(a.await.unwrap(), b.await.unwrap());
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn id() -> Id {
    try_id().expect("can't get a task id when not inside a task")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_across_threads_and_blocks() {
        let per_thread = 3 * ID_BLOCK as usize + 7;
        let threads: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(move || (0..per_thread).map(|_| Id::next()).collect::<Vec<_>>()))
            .collect();
        let mut seen = HashSet::new();
        for t in threads {
            for id in t.join().unwrap() {
                assert!(seen.insert(id), "duplicate task id {id}");
            }
        }
        assert_eq!(seen.len(), 4 * per_thread);
        assert!(!seen.contains(&Id(0)), "0 is never handed out");
    }
}
