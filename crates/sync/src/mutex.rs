//! [`Mutex`]: an async mutual-exclusion lock whose guard may be held across `.await`.

use std::cell::UnsafeCell;
use std::error::Error;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::batch_semaphore as ll;

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
            c: UnsafeCell::new(t),
        }
    }

    /// Waits for the lock; tasks get it in the order they called `lock`.
    ///
    /// Cancel safe: dropping the future gives up its place in the queue.
    pub async fn lock(&self) -> MutexGuard<'_, T> {
        self.acquire().await;
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
        self.acquire().await;
        OwnedMutexGuard { lock: self }
    }

    async fn acquire(&self) {
        if self.s.acquire(1).await.is_err() {
            // A mutex's semaphore is never closed.
            unreachable!()
        }
    }

    /// Takes the lock if it is free now.
    pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
        match self.s.try_acquire(1) {
            Ok(()) => Ok(MutexGuard { lock: self }),
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
            Ok(()) => Ok(OwnedMutexGuard { lock: self }),
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

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// Narrows the guard to a part of the value (a field, an element, ...); the
    /// mutex stays locked until the mapped guard is dropped.
    ///
    /// An associated function (`MutexGuard::map(guard, f)`) so as not to shadow a
    /// method of `T`.
    #[inline]
    pub fn map<U, F>(mut this: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = f(&mut *this) as *mut U;
        let this = ManuallyDrop::new(this);
        MappedMutexGuard {
            s: &this.lock.s,
            data,
            marker: PhantomData,
        }
    }

    /// Like [`MutexGuard::map`], but `f` may decline (return `None`), in which case
    /// the original guard comes back as `Err`.
    #[inline]
    pub fn try_map<U, F>(mut this: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut U,
            None => return Err(this),
        };
        let this = ManuallyDrop::new(this);
        Ok(MappedMutexGuard {
            s: &this.lock.s,
            data,
            marker: PhantomData,
        })
    }

    /// The mutex this guard locks.
    #[inline]
    pub fn mutex(this: &Self) -> &'a Mutex<T> {
        this.lock
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.s.release(1);
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the mutex's only permit, so no other access exists.
        unsafe { &*self.lock.c.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this borrow unique.
        unsafe { &mut *self.lock.c.get() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized> OwnedMutexGuard<T> {
    /// Takes the `Arc` out without running the guard's `Drop` (no unlock).
    fn into_lock(self) -> Arc<Mutex<T>> {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again, so the `Arc` is moved out
        // exactly once.
        unsafe { std::ptr::read(&this.lock) }
    }

    /// Narrows the guard to a part of the value; the mutex stays locked until the
    /// mapped guard is dropped.
    #[inline]
    pub fn map<U, F>(mut this: Self, f: F) -> OwnedMappedMutexGuard<T, U>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = f(&mut *this) as *mut U;
        OwnedMappedMutexGuard {
            data,
            lock: this.into_lock(),
        }
    }

    /// Like [`OwnedMutexGuard::map`], but `f` may decline, giving the guard back.
    #[inline]
    pub fn try_map<U, F>(mut this: Self, f: F) -> Result<OwnedMappedMutexGuard<T, U>, Self>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut U,
            None => return Err(this),
        };
        Ok(OwnedMappedMutexGuard {
            data,
            lock: this.into_lock(),
        })
    }

    /// The mutex this guard locks.
    #[inline]
    pub fn mutex(this: &Self) -> &Arc<Mutex<T>> {
        &this.lock
    }
}

impl<T: ?Sized> Drop for OwnedMutexGuard<T> {
    fn drop(&mut self) {
        self.lock.s.release(1);
    }
}

impl<T: ?Sized> Deref for OwnedMutexGuard<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the mutex's only permit.
        unsafe { &*self.lock.c.get() }
    }
}

impl<T: ?Sized> DerefMut for OwnedMutexGuard<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the mutex's only permit; `&mut self` is unique.
        unsafe { &mut *self.lock.c.get() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for OwnedMutexGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for OwnedMutexGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<'a, T: ?Sized> MappedMutexGuard<'a, T> {
    /// Narrows the guard further.
    #[inline]
    pub fn map<U, F>(mut this: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = f(&mut *this) as *mut U;
        let this = ManuallyDrop::new(this);
        MappedMutexGuard {
            s: this.s,
            data,
            marker: PhantomData,
        }
    }

    /// Narrows the guard further if `f` agrees, else gives it back.
    #[inline]
    pub fn try_map<U, F>(mut this: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut U,
            None => return Err(this),
        };
        let this = ManuallyDrop::new(this);
        Ok(MappedMutexGuard {
            s: this.s,
            data,
            marker: PhantomData,
        })
    }
}

impl<T: ?Sized> Drop for MappedMutexGuard<'_, T> {
    fn drop(&mut self) {
        self.s.release(1);
    }
}

impl<T: ?Sized> Deref for MappedMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `data` points into the locked value, and this guard holds the lock.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized> DerefMut for MappedMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` is unique.
        unsafe { &mut *self.data }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MappedMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MappedMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized> OwnedMappedMutexGuard<T, U> {
    fn into_lock(self) -> Arc<Mutex<T>> {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again: the `Arc` moves out once.
        unsafe { std::ptr::read(&this.lock) }
    }

    /// Narrows the guard further.
    #[inline]
    pub fn map<S, F>(mut this: Self, f: F) -> OwnedMappedMutexGuard<T, S>
    where
        F: FnOnce(&mut U) -> &mut S,
    {
        let data = f(&mut *this) as *mut S;
        OwnedMappedMutexGuard {
            data,
            lock: this.into_lock(),
        }
    }

    /// Narrows the guard further if `f` agrees, else gives it back.
    #[inline]
    pub fn try_map<S, F>(mut this: Self, f: F) -> Result<OwnedMappedMutexGuard<T, S>, Self>
    where
        F: FnOnce(&mut U) -> Option<&mut S>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut S,
            None => return Err(this),
        };
        Ok(OwnedMappedMutexGuard {
            data,
            lock: this.into_lock(),
        })
    }
}

impl<T: ?Sized, U: ?Sized> Drop for OwnedMappedMutexGuard<T, U> {
    fn drop(&mut self) {
        self.lock.s.release(1);
    }
}

impl<T: ?Sized, U: ?Sized> Deref for OwnedMappedMutexGuard<T, U> {
    type Target = U;
    fn deref(&self) -> &U {
        // SAFETY: `data` points into the locked value, and this guard holds the lock.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized, U: ?Sized> DerefMut for OwnedMappedMutexGuard<T, U> {
    fn deref_mut(&mut self) -> &mut U {
        // SAFETY: as in `deref`; `&mut self` is unique.
        unsafe { &mut *self.data }
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Debug> fmt::Debug for OwnedMappedMutexGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Display> fmt::Display for OwnedMappedMutexGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
