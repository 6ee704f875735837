//! The atomics used by the cross-thread protocols, swapped for loom's under
//! `--cfg loom` so the models next to that code explore every interleaving.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, fence};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// A mutex whose lock outlives a panic of a previous holder.
pub(crate) trait Lock {
    /// The guard.
    type Guard<'a>
    where
        Self: 'a;

    /// Locks, taking over a lock that a panicking holder poisoned.
    fn lock_or_recover(&self) -> Self::Guard<'_>;
}

macro_rules! impl_lock {
    ($($mutex:ident)::+, $($guard:ident)::+) => {
        impl<T> Lock for $($mutex)::+<T> {
            type Guard<'a>
                = $($guard)::+<'a, T>
            where
                Self: 'a;

            fn lock_or_recover(&self) -> Self::Guard<'_> {
                self.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
            }
        }
    };
}

impl_lock!(std::sync::Mutex, std::sync::MutexGuard);
#[cfg(loom)]
impl_lock!(loom::sync::Mutex, loom::sync::MutexGuard);

/// Locks `mutex`, recovering from poisoning. Every mutex of the loop guards data that
/// is whole between any two statements of its critical sections (a list pushed to or
/// taken, a flag set), so a panic elsewhere while it was held leaves nothing half
/// done, and the loop must go on (design §7) rather than propagate the panic.
pub(crate) fn lock<M: Lock>(mutex: &M) -> M::Guard<'_> {
    mutex.lock_or_recover()
}
