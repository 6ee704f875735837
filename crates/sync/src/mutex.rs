//! [`Mutex`]: an async mutual-exclusion lock whose guard may be held across `.await`.

use std::cell::UnsafeCell;
use std::error::Error;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use crate::batch_semaphore as ll;
use crate::guard::{self, guard_deref, guard_deref_mut};

/// A lock giving one task at a time access to a `T`, waited for asynchronously.
///
/// Tasks get the lock in the order they asked for it. Unlike `std::sync::Mutex`, the
/// guard may be kept across `.await` points, and the lock is never poisoned: a panic
/// while holding it simply releases it.
///
/// ```
/// use netloop_sync::Mutex;
///
/// let m = Mutex::new(1);
/// futures::executor::block_on(async {
///     *m.lock().await += 1;
///     assert_eq!(*m.lock().await, 2);
/// });
/// ```
pub struct Mutex<T: ?Sized> {
    s: ll::Semaphore,
    /// tokio's `runtime.resource` span of the mutex.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    resource_span: tracing::Span,
    c: UnsafeCell<T>,
}

/// Access to a [`Mutex`]'s value, borrowed from the mutex; unlocks when dropped.
#[clippy::has_significant_drop]
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    lock: &'a Mutex<T>,
}

/// Access to a [`Mutex`]'s value that keeps the mutex alive through an [`Arc`];
/// unlocks when dropped.
#[clippy::has_significant_drop]
pub struct OwnedMutexGuard<T: ?Sized> {
    lock: Arc<Mutex<T>>,
}

/// Access to part of a [`Mutex`]'s value, made by [`MutexGuard::map`]; unlocks the
/// mutex when dropped.
#[clippy::has_significant_drop]
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MappedMutexGuard<'a, T: ?Sized> {
    s: &'a ll::Semaphore,
    data: *mut T,
    marker: PhantomData<&'a mut T>,
}

/// Access to part of a [`Mutex`]'s value (a `U` inside the `T`), made by
/// [`OwnedMutexGuard::map`]; keeps the mutex alive and unlocks it when dropped.
#[clippy::has_significant_drop]
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct OwnedMappedMutexGuard<T: ?Sized, U: ?Sized = T> {
    data: *mut U,
    lock: Arc<Mutex<T>>,
}

// SAFETY: the semaphore (one permit) lets one guard at a time reach `c`, so sharing a
// `Mutex` only ever moves exclusive access to the `T` between threads: `T: Send` is
// what that needs.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above; `&Mutex` gives no shared access to `T` except through a guard.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}
// SAFETY: a shared guard only hands out `&T`, so `T: Sync` is needed; `T: Send`
// because the guard derives from the `Mutex`'s own requirements.
unsafe impl<T: ?Sized + Send + Sync> Sync for MutexGuard<'_, T> {}
// SAFETY: as for `MutexGuard`.
unsafe impl<T: ?Sized + Send + Sync> Sync for OwnedMutexGuard<T> {}
// SAFETY: a mapped guard is a unique `&mut T` plus a semaphore reference (`Sync`).
unsafe impl<'a, T: ?Sized + Sync + 'a> Sync for MappedMutexGuard<'a, T> {}
// SAFETY: sending the guard moves the unique `&mut T` to another thread.
unsafe impl<'a, T: ?Sized + Send + 'a> Send for MappedMutexGuard<'a, T> {}
// SAFETY: a shared owned mapped guard hands out `&U`, and holds an `Arc<Mutex<T>>`.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Send + Sync> Sync for OwnedMappedMutexGuard<T, U> {}
// SAFETY: sending it moves the unique `&mut U` and the `Arc<Mutex<T>>`.
unsafe impl<T: ?Sized + Send, U: ?Sized + Send> Send for OwnedMappedMutexGuard<T, U> {}

/// The error of [`Mutex::try_lock`]: the mutex is locked right now.
#[derive(Debug)]
pub struct TryLockError(pub(crate) ());

impl fmt::Display for TryLockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("operation would block")
    }
}

impl Error for TryLockError {}

impl<T: ?Sized> Mutex<T> {
    /// An unlocked mutex holding `t`.
    #[track_caller]
    pub fn new(t: T) -> Self
    where
        T: Sized,
    {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        {
            let resource_span =
                crate::trace::resource_span!("tokio::sync::mutex", "Mutex", std::panic::Location::caller());
            let s = resource_span.in_scope(|| {
                tracing::trace!(target: "runtime::resource::state_update", locked = false);
                ll::Semaphore::new(1)
            });
            Mutex {
                s,
                resource_span,
                c: UnsafeCell::new(t),
            }
        }
        #[cfg(not(all(tokio_unstable, feature = "tracing")))]
        Mutex {
            s: ll::Semaphore::new(1),
            c: UnsafeCell::new(t),
        }
    }

    /// Like [`Mutex::new`], but usable to initialize a `static`.
    ///
    /// ```
    /// static COUNT: netloop_sync::Mutex<u32> = netloop_sync::Mutex::const_new(0);
    /// ```
    #[cfg(not(loom))]
    pub const fn const_new(t: T) -> Self
    where
        T: Sized,
    {
        Mutex {
            s: ll::Semaphore::const_new(1),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: tracing::Span::none(),
            c: UnsafeCell::new(t),
        }
    }

    /// Waits for the lock; tasks get it in the order they called `lock`.
    ///
    /// Cancel safe: dropping the future gives up its place in the queue.
    pub async fn lock(&self) -> MutexGuard<'_, T> {
        self.acquire("Mutex::lock").await;
        MutexGuard { lock: self }
    }

    /// Waits for the lock by blocking the thread, for code outside async tasks.
    ///
    /// # Panics
    ///
    /// If called on a thread that drives async tasks (a loop's or a runtime's).
    #[track_caller]
    pub fn blocking_lock(&self) -> MutexGuard<'_, T> {
        crate::blocking::block_on(self.lock())
    }

    /// Waits for the lock by blocking the thread; the guard keeps the mutex alive.
    ///
    /// # Panics
    ///
    /// If called on a thread that drives async tasks.
    #[track_caller]
    pub fn blocking_lock_owned(self: Arc<Self>) -> OwnedMutexGuard<T> {
        crate::blocking::block_on(self.lock_owned())
    }

    /// Waits for the lock, returning a guard that keeps the mutex alive through its
    /// [`Arc`] (so it can be moved into a spawned task).
    pub async fn lock_owned(self: Arc<Self>) -> OwnedMutexGuard<T> {
        self.acquire("Mutex::lock_owned").await;
        OwnedMutexGuard { lock: self }
    }

    /// Waits for the semaphore's one permit: tokio's async op `source` with its
    /// `tracing`, then the `locked` update.
    async fn acquire(&self, source: &'static str) {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        let acquired = crate::trace::async_op(&self.resource_span, source, false, || self.s.acquire(1)).await;
        #[cfg(not(all(tokio_unstable, feature = "tracing")))]
        let acquired = {
            let _ = source;
            self.s.acquire(1).await
        };
        if acquired.is_err() {
            // A mutex's semaphore is never closed.
            unreachable!()
        }
        self.trace_locked(true);
    }

    /// tokio's `locked` state update (nothing without its `tracing`).
    #[inline(always)]
    fn trace_locked(&self, locked: bool) {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        crate::trace::state_update!(self.resource_span, locked = locked);
        let _ = locked;
    }

    /// Takes the lock if it is free now.
    pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
        match self.s.try_acquire(1) {
            Ok(()) => {
                self.trace_locked(true);
                Ok(MutexGuard { lock: self })
            }
            Err(_) => Err(TryLockError(())),
        }
    }

    /// The value, through a unique borrow of the mutex (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.c.get_mut()
    }

    /// Takes the lock if it is free now, returning an owned guard.
    pub fn try_lock_owned(self: Arc<Self>) -> Result<OwnedMutexGuard<T>, TryLockError> {
        match self.s.try_acquire(1) {
            Ok(()) => {
                self.trace_locked(true);
                Ok(OwnedMutexGuard { lock: self })
            }
            Err(_) => Err(TryLockError(())),
        }
    }

    /// Consumes the mutex and returns its value.
    pub fn into_inner(self) -> T
    where
        T: Sized,
    {
        self.c.into_inner()
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(t: T) -> Self {
        Mutex::new(t)
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Ok(guard) => d.field("data", &&*guard),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

guard_deref!(['a, T: ?Sized] MutexGuard<'a, T> => T, |this| this.lock.c.get());
guard_deref!([T: ?Sized] OwnedMutexGuard<T> => T, |this| this.lock.c.get());
guard_deref!(['a, T: ?Sized] MappedMutexGuard<'a, T> => T);
guard_deref!([T: ?Sized, U: ?Sized] OwnedMappedMutexGuard<T, U> => U);
guard_deref_mut!(['a, T: ?Sized] MutexGuard<'a, T> => T, |this| this.lock.c.get());
guard_deref_mut!([T: ?Sized] OwnedMutexGuard<T> => T, |this| this.lock.c.get());
guard_deref_mut!(['a, T: ?Sized] MappedMutexGuard<'a, T> => T);
guard_deref_mut!([T: ?Sized, U: ?Sized] OwnedMappedMutexGuard<T, U> => U);

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.s.release(1);
        self.lock.trace_locked(false);
    }
}

impl<T: ?Sized> Drop for OwnedMutexGuard<T> {
    fn drop(&mut self) {
        self.lock.s.release(1);
        self.lock.trace_locked(false);
    }
}

impl<T: ?Sized> Drop for MappedMutexGuard<'_, T> {
    fn drop(&mut self) {
        self.s.release(1);
    }
}

impl<T: ?Sized, U: ?Sized> Drop for OwnedMappedMutexGuard<T, U> {
    fn drop(&mut self) {
        self.lock.s.release(1);
        self.lock.trace_locked(false);
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// The mapped guard of `data`, taking over `this`'s permit.
    #[inline]
    fn with_data<U: ?Sized>(this: ManuallyDrop<Self>, data: *mut U) -> MappedMutexGuard<'a, U> {
        MappedMutexGuard {
            s: &this.lock.s,
            data,
            marker: PhantomData,
        }
    }

    /// Narrows the guard to a part of the value (a field, an element, ...); the
    /// mutex stays locked until the mapped guard is dropped.
    ///
    /// An associated function (`MutexGuard::map(guard, f)`) so as not to shadow a
    /// method of `T`.
    #[inline]
    pub fn map<U, F>(this: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> &mut U,
    {
        let (this, data) = guard::narrow(this, f);
        Self::with_data(this, data)
    }

    /// Like [`MutexGuard::map`], but `f` may decline (return `None`), in which case
    /// the original guard comes back as `Err`.
    #[inline]
    pub fn try_map<U, F>(this: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (this, data) = guard::try_narrow(this, f)?;
        Ok(Self::with_data(this, data))
    }

    /// The mutex this guard locks.
    #[inline]
    pub fn mutex(this: &Self) -> &'a Mutex<T> {
        this.lock
    }
}

impl<T: ?Sized> OwnedMutexGuard<T> {
    /// The mapped guard of `data`, taking over `this`'s permit and `Arc`.
    #[inline]
    fn with_data<U: ?Sized>(this: ManuallyDrop<Self>, data: *mut U) -> OwnedMappedMutexGuard<T, U> {
        OwnedMappedMutexGuard {
            data,
            // SAFETY: `this` is consumed here and never dropped.
            lock: unsafe { guard::take_arc(&this, |g| &g.lock) },
        }
    }

    /// Narrows the guard to a part of the value; the mutex stays locked until the
    /// mapped guard is dropped.
    #[inline]
    pub fn map<U, F>(this: Self, f: F) -> OwnedMappedMutexGuard<T, U>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> &mut U,
    {
        let (this, data) = guard::narrow(this, f);
        Self::with_data(this, data)
    }

    /// Like [`OwnedMutexGuard::map`], but `f` may decline, giving the guard back.
    #[inline]
    pub fn try_map<U, F>(this: Self, f: F) -> Result<OwnedMappedMutexGuard<T, U>, Self>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (this, data) = guard::try_narrow(this, f)?;
        Ok(Self::with_data(this, data))
    }

    /// The mutex this guard locks.
    #[inline]
    pub fn mutex(this: &Self) -> &Arc<Mutex<T>> {
        &this.lock
    }
}

impl<'a, T: ?Sized> MappedMutexGuard<'a, T> {
    /// This guard narrowed to `data`, taking over `this`'s permit.
    #[inline]
    fn with_data<U: ?Sized>(this: ManuallyDrop<Self>, data: *mut U) -> MappedMutexGuard<'a, U> {
        MappedMutexGuard {
            s: this.s,
            data,
            marker: PhantomData,
        }
    }

    /// Narrows the guard further.
    #[inline]
    pub fn map<U, F>(this: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let (this, data) = guard::narrow(this, f);
        Self::with_data(this, data)
    }

    /// Narrows the guard further if `f` agrees, else gives it back.
    #[inline]
    pub fn try_map<U, F>(this: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (this, data) = guard::try_narrow(this, f)?;
        Ok(Self::with_data(this, data))
    }
}

impl<T: ?Sized, U: ?Sized> OwnedMappedMutexGuard<T, U> {
    /// This guard narrowed to `data`, taking over `this`'s permit and `Arc`.
    #[inline]
    fn with_data<S: ?Sized>(this: ManuallyDrop<Self>, data: *mut S) -> OwnedMappedMutexGuard<T, S> {
        OwnedMappedMutexGuard {
            data,
            // SAFETY: `this` is consumed here and never dropped.
            lock: unsafe { guard::take_arc(&this, |g| &g.lock) },
        }
    }

    /// Narrows the guard further.
    #[inline]
    pub fn map<S, F>(this: Self, f: F) -> OwnedMappedMutexGuard<T, S>
    where
        F: FnOnce(&mut U) -> &mut S,
    {
        let (this, data) = guard::narrow(this, f);
        Self::with_data(this, data)
    }

    /// Narrows the guard further if `f` agrees, else gives it back.
    #[inline]
    pub fn try_map<S, F>(this: Self, f: F) -> Result<OwnedMappedMutexGuard<T, S>, Self>
    where
        F: FnOnce(&mut U) -> Option<&mut S>,
    {
        let (this, data) = guard::try_narrow(this, f)?;
        Ok(Self::with_data(this, data))
    }
}
