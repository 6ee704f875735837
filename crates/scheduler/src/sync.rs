//! Locks that a panic does not poison: the scheduler's and netloop-net's.
//!
//! Every `std::sync::Mutex` of these crates guards data that each critical section
//! leaves consistent at every point where it could panic (a push, a take, a counter
//! step), so a lock whose holder panicked holds data as good as any other, and is used
//! as such (as tokio's are): one task's panic is not every later user's.

use std::sync::{LockResult, Mutex, MutexGuard, PoisonError, TryLockError};

/// Locks `mutex`, whether or not a holder panicked (see the module's invariant).
#[inline]
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    unpoison(mutex.lock())
}

/// Locks `mutex` if no other thread holds it, whether or not a holder panicked.
#[inline]
pub fn try_lock<T: ?Sized>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match mutex.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// What a lock operation gives (a guard, a wait's result, a mutex's value), whether
/// or not a holder panicked.
#[inline]
pub fn unpoison<G>(result: LockResult<G>) -> G {
    result.unwrap_or_else(PoisonError::into_inner)
}
