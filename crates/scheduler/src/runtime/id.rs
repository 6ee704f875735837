//! `runtime::Id`: which runtime a handle belongs to.

use std::fmt;
use std::num::NonZeroU64;

/// An opaque id of a runtime, unique among the runtimes of a process (tokio's
/// `runtime::Id`). Two handles of one runtime have the same id.
///
/// ```
/// use netloop_scheduler::runtime::Builder;
///
/// let a = Builder::new_current_thread().build()?;
/// let b = Builder::new_current_thread().build()?;
/// assert_eq!(a.handle().id(), a.handle().clone().id());
/// assert_ne!(a.handle().id(), b.handle().id());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Hash, Eq, PartialEq)]
pub struct Id(NonZeroU64);

impl Id {
    /// The id of the runtime whose loop group has process-wide number `group`.
    pub(crate) fn from_group(group: usize) -> Id {
        Id(NonZeroU64::new(group as u64).expect("group numbers start at 1"))
    }

    /// A fresh id from the counter runtimes take theirs from, for what tokio numbers
    /// in the same space (a `LocalSet`): it never equals a runtime's.
    pub(crate) fn fresh() -> Id {
        Id::from_group(crate::group::next_group_number())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
