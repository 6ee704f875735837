//! [`RwLock`]: an async reader-writer lock, fair between readers and writers.
//!
//! Built on the crate's fair semaphore with `max_readers` permits: a reader takes
//! one, a writer takes all of them. Since the semaphore serves requests in order, a
//! waiting writer holds back the readers that come after it, so writers are not
//! starved by a stream of readers.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use crate::TryAcquireError;
use crate::TryLockError;
use crate::batch_semaphore::Semaphore;
use crate::guard::{self, guard_deref, guard_deref_mut};

/// The most readers a lock can admit at once (`u32::MAX >> 3`).
#[cfg(not(loom))]
const MAX_READS: u32 = u32::MAX >> 3;
#[cfg(loom)]
const MAX_READS: u32 = 10;

/// A lock that lets many tasks read a `T` at once, or one task write it.
///
/// Requests are served in arrival order; a writer waits for the readers before it to
/// finish, and readers after a waiting writer wait for it. Guards may be held across
/// `.await`.
///
/// ```
/// use netloop_sync::RwLock;
///
/// let lock = RwLock::new(5);
/// futures::executor::block_on(async {
///     {
///         let a = lock.read().await;
///         let b = lock.read().await;
///         assert_eq!(*a + *b, 10);
///     }
///     *lock.write().await += 1;
///     assert_eq!(*lock.read().await, 6);
/// });
/// ```
pub struct RwLock<T: ?Sized> {
    mr: u32,
    s: Semaphore,
    /// tokio's `runtime.resource` span of the lock.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    resource_span: tracing::Span,
    c: UnsafeCell<T>,
}

/// Shared access to an [`RwLock`]'s value (or a part of it, after
/// [`map`](RwLockReadGuard::map)); releases the read lock when dropped.
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    s: &'a Semaphore,
    data: *const T,
    marker: PhantomData<&'a T>,
}

/// Exclusive access to an [`RwLock`]'s value; releases the write lock when dropped.
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    permits_acquired: u32,
    s: &'a Semaphore,
    data: *mut T,
    marker: PhantomData<&'a mut T>,
}

/// Exclusive access to a part of an [`RwLock`]'s value, made by
/// [`RwLockWriteGuard::map`]; releases the write lock when dropped.
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockMappedWriteGuard<'a, T: ?Sized> {
    permits_acquired: u32,
    s: &'a Semaphore,
    data: *mut T,
    marker: PhantomData<&'a mut T>,
}

/// Shared access to (a part `U` of) an [`RwLock`]'s value that keeps the lock alive
/// through an [`Arc`]; releases the read lock when dropped.
#[clippy::has_significant_drop]
pub struct OwnedRwLockReadGuard<T: ?Sized, U: ?Sized = T> {
    lock: Arc<RwLock<T>>,
    data: *const U,
    _p: PhantomData<T>,
}

/// Exclusive access to an [`RwLock`]'s value that keeps the lock alive through an
/// [`Arc`]; releases the write lock when dropped.
#[clippy::has_significant_drop]
pub struct OwnedRwLockWriteGuard<T: ?Sized> {
    permits_acquired: u32,
    lock: Arc<RwLock<T>>,
    data: *mut T,
    _p: PhantomData<T>,
}

/// Exclusive access to a part `U` of an [`RwLock`]'s value that keeps the lock alive
/// through an [`Arc`]; made by [`OwnedRwLockWriteGuard::map`].
#[clippy::has_significant_drop]
pub struct OwnedRwLockMappedWriteGuard<T: ?Sized, U: ?Sized = T> {
    permits_acquired: u32,
    lock: Arc<RwLock<T>>,
    data: *mut U,
    _p: PhantomData<T>,
}

// SAFETY: the lock owns its `T`; moving it between threads needs `T: Send`.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: readers on several threads share `&T` (`T: Sync`), a writer on any thread
// gets `&mut T` (`T: Send`).
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}
// SAFETY: a read guard is a `&T`: sending it needs `T: Sync`.
unsafe impl<T: ?Sized + Sync> Send for RwLockReadGuard<'_, T> {}
// SAFETY: sharing a read guard shares `&T`.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLockReadGuard<'_, T> {}
// SAFETY: an owned read guard holds an `Arc<RwLock<T>>` and a `&U`.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Sync> Send for OwnedRwLockReadGuard<T, U> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Send + Sync> Sync for OwnedRwLockReadGuard<T, U> {}
// SAFETY: a write guard is a unique `&mut T` into a lock that is `Sync`.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLockWriteGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync> Sync for OwnedRwLockWriteGuard<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLockMappedWriteGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Send + Sync> Sync for OwnedRwLockMappedWriteGuard<T, U> {}
// SAFETY: sending a write guard moves the unique `&mut T` (and may downgrade to a
// shared one), so both bounds are needed.
unsafe impl<T: ?Sized + Send + Sync> Send for RwLockWriteGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync> Send for OwnedRwLockWriteGuard<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync> Send for RwLockMappedWriteGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Send + Sync> Send for OwnedRwLockMappedWriteGuard<T, U> {}

fn no_permits(r: Result<(), TryAcquireError>) -> Result<(), TryLockError> {
    match r {
        Ok(()) => Ok(()),
        Err(TryAcquireError::NoPermits) => Err(TryLockError(())),
        Err(TryAcquireError::Closed) => unreachable!("an RwLock's semaphore is never closed"),
    }
}

impl<T: ?Sized> RwLock<T> {
    /// An unlocked lock holding `value`, admitting up to `u32::MAX >> 3` readers.
    #[track_caller]
    pub fn new(value: T) -> RwLock<T>
    where
        T: Sized,
    {
        Self::with_readers(value, MAX_READS)
    }

    /// An unlocked lock holding `value`, admitting at most `max_reads` readers at once.
    ///
    /// # Panics
    ///
    /// If `max_reads` is 0 or more than `u32::MAX >> 3`.
    #[track_caller]
    pub fn with_max_readers(value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        assert_ne!(max_reads, 0, "a RwLock may not be created with 0 readers");
        assert!(
            max_reads <= MAX_READS,
            "a RwLock may not be created with more than {MAX_READS} readers"
        );
        Self::with_readers(value, max_reads)
    }

    /// A lock of at most `max_reads` readers, with tokio's resource span (made at the
    /// caller's caller) under its `tracing`.
    #[track_caller]
    fn with_readers(value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        {
            let resource_span =
                crate::trace::resource_span!("tokio::sync::rwlock", "RwLock", std::panic::Location::caller());
            resource_span.in_scope(|| {
                tracing::trace!(target: "runtime::resource::state_update", max_readers = max_reads);
                tracing::trace!(target: "runtime::resource::state_update", write_locked = false);
                tracing::trace!(target: "runtime::resource::state_update", current_readers = 0);
            });
            let s = resource_span.in_scope(|| Semaphore::new(max_reads as usize));
            RwLock {
                mr: max_reads,
                s,
                resource_span,
                c: UnsafeCell::new(value),
            }
        }
        #[cfg(not(all(tokio_unstable, feature = "tracing")))]
        RwLock {
            mr: max_reads,
            s: Semaphore::new(max_reads as usize),
            c: UnsafeCell::new(value),
        }
    }

    /// Like [`RwLock::new`], usable to initialize a `static`.
    #[cfg(not(loom))]
    pub const fn const_new(value: T) -> RwLock<T>
    where
        T: Sized,
    {
        RwLock {
            mr: MAX_READS,
            s: Semaphore::const_new(MAX_READS as usize),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: tracing::Span::none(),
            c: UnsafeCell::new(value),
        }
    }

    /// Like [`RwLock::with_max_readers`], usable to initialize a `static`.
    #[cfg(not(loom))]
    pub const fn const_with_max_readers(value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        assert!(max_reads != 0, "a RwLock may not be created with 0 readers");
        assert!(max_reads <= MAX_READS);
        RwLock {
            mr: max_reads,
            s: Semaphore::const_new(max_reads as usize),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: tracing::Span::none(),
            c: UnsafeCell::new(value),
        }
    }

    /// Waits for `n` permits, as tokio's async op `source` with its `tracing`.
    async fn acquire(&self, n: u32, source: &'static str) {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        let acquired = crate::trace::async_op(&self.resource_span, source, false, || self.s.acquire(n as usize)).await;
        #[cfg(not(all(tokio_unstable, feature = "tracing")))]
        let acquired = {
            let _ = source;
            self.s.acquire(n as usize).await
        };
        if acquired.is_err() {
            unreachable!("an RwLock's semaphore is never closed")
        }
    }

    fn read_guard(&self) -> RwLockReadGuard<'_, T> {
        RwLockReadGuard {
            s: &self.s,
            data: self.c.get(),
            marker: PhantomData,
        }
    }

    fn write_guard(&self) -> RwLockWriteGuard<'_, T> {
        RwLockWriteGuard {
            permits_acquired: self.mr,
            s: &self.s,
            data: self.c.get(),
            marker: PhantomData,
        }
    }

    /// The read guard of a permit just acquired; it keeps the lock alive.
    fn read_guard_owned(self: Arc<Self>) -> OwnedRwLockReadGuard<T> {
        OwnedRwLockReadGuard {
            data: self.c.get(),
            lock: self,
            _p: PhantomData,
        }
    }

    /// The write guard of every permit, just acquired; it keeps the lock alive.
    fn write_guard_owned(self: Arc<Self>) -> OwnedRwLockWriteGuard<T> {
        OwnedRwLockWriteGuard {
            permits_acquired: self.mr,
            data: self.c.get(),
            lock: self,
            _p: PhantomData,
        }
    }

    /// Waits for shared access. Cancel safe: dropping the future gives up its turn.
    pub async fn read(&self) -> RwLockReadGuard<'_, T> {
        self.acquire(1, "RwLock::read").await;
        self.read_guard()
    }

    /// Waits for shared access by blocking the thread, for code outside async tasks.
    ///
    /// # Panics
    ///
    /// If called on a thread that drives async tasks (a loop's or a runtime's).
    #[track_caller]
    pub fn blocking_read(&self) -> RwLockReadGuard<'_, T> {
        crate::blocking::block_on(self.read())
    }

    /// Waits for shared access with a guard that keeps the lock alive.
    pub async fn read_owned(self: Arc<Self>) -> OwnedRwLockReadGuard<T> {
        self.acquire(1, "RwLock::read_owned").await;
        self.read_guard_owned()
    }

    /// Takes shared access if it is available now.
    pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
        no_permits(self.s.try_acquire(1))?;
        Ok(self.read_guard())
    }

    /// Takes shared access, with an owned guard, if it is available now.
    pub fn try_read_owned(self: Arc<Self>) -> Result<OwnedRwLockReadGuard<T>, TryLockError> {
        no_permits(self.s.try_acquire(1))?;
        Ok(self.read_guard_owned())
    }

    /// Waits for exclusive access. Cancel safe: dropping the future gives up its turn.
    pub async fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.acquire(self.mr, "RwLock::write").await;
        self.write_guard()
    }

    /// Waits for exclusive access by blocking the thread.
    ///
    /// # Panics
    ///
    /// If called on a thread that drives async tasks.
    #[track_caller]
    pub fn blocking_write(&self) -> RwLockWriteGuard<'_, T> {
        crate::blocking::block_on(self.write())
    }

    /// Waits for exclusive access with a guard that keeps the lock alive.
    pub async fn write_owned(self: Arc<Self>) -> OwnedRwLockWriteGuard<T> {
        self.acquire(self.mr, "RwLock::write_owned").await;
        self.write_guard_owned()
    }

    /// Takes exclusive access if it is available now.
    pub fn try_write(&self) -> Result<RwLockWriteGuard<'_, T>, TryLockError> {
        no_permits(self.s.try_acquire(self.mr as usize))?;
        Ok(self.write_guard())
    }

    /// Takes exclusive access, with an owned guard, if it is available now.
    pub fn try_write_owned(self: Arc<Self>) -> Result<OwnedRwLockWriteGuard<T>, TryLockError> {
        no_permits(self.s.try_acquire(self.mr as usize))?;
        Ok(self.write_guard_owned())
    }

    /// The value, through a unique borrow of the lock (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.c.get_mut()
    }

    /// Consumes the lock and returns its value.
    pub fn into_inner(self) -> T
    where
        T: Sized,
    {
        self.c.into_inner()
    }
}

impl<T> From<T> for RwLock<T> {
    fn from(value: T) -> Self {
        RwLock::new(value)
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Ok(guard) => d.field("data", &&*guard),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

guard_deref!(['a, T: ?Sized] RwLockReadGuard<'a, T> => T);
guard_deref!(['a, T: ?Sized] RwLockWriteGuard<'a, T> => T);
guard_deref!(['a, T: ?Sized] RwLockMappedWriteGuard<'a, T> => T);
guard_deref!([T: ?Sized, U: ?Sized] OwnedRwLockReadGuard<T, U> => U);
guard_deref!([T: ?Sized] OwnedRwLockWriteGuard<T> => T);
guard_deref!([T: ?Sized, U: ?Sized] OwnedRwLockMappedWriteGuard<T, U> => U);
guard_deref_mut!(['a, T: ?Sized] RwLockWriteGuard<'a, T> => T);
guard_deref_mut!(['a, T: ?Sized] RwLockMappedWriteGuard<'a, T> => T);
guard_deref_mut!([T: ?Sized] OwnedRwLockWriteGuard<T> => T);
guard_deref_mut!([T: ?Sized, U: ?Sized] OwnedRwLockMappedWriteGuard<T, U> => U);

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        self.s.release(1);
    }
}

impl<T: ?Sized, U: ?Sized> Drop for OwnedRwLockReadGuard<T, U> {
    fn drop(&mut self) {
        self.lock.s.release(1);
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.s.release(self.permits_acquired as usize);
    }
}

impl<T: ?Sized> Drop for RwLockMappedWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.s.release(self.permits_acquired as usize);
    }
}

impl<T: ?Sized> Drop for OwnedRwLockWriteGuard<T> {
    fn drop(&mut self) {
        self.lock.s.release(self.permits_acquired as usize);
    }
}

impl<T: ?Sized, U: ?Sized> Drop for OwnedRwLockMappedWriteGuard<T, U> {
    fn drop(&mut self) {
        self.lock.s.release(self.permits_acquired as usize);
    }
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    /// The read guard of `data`, taking over `this`'s permit.
    #[inline]
    fn with_data<U: ?Sized>(this: ManuallyDrop<Self>, data: *const U) -> RwLockReadGuard<'a, U> {
        RwLockReadGuard {
            s: this.s,
            data,
            marker: PhantomData,
        }
    }

    /// Narrows the guard to a part of the value. An associated function
    /// (`RwLockReadGuard::map(guard, f)`) so as not to shadow a method of `T`.
    #[inline]
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let (this, data) = guard::narrow_ref(this, f);
        Self::with_data(this, data)
    }

    /// Like [`RwLockReadGuard::map`], but `f` may decline, giving the guard back.
    #[inline]
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let (this, data) = guard::try_narrow_ref(this, f)?;
        Ok(Self::with_data(this, data))
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockReadGuard<T, U> {
    /// The read guard of `data`, taking over `this`'s permit and `Arc`.
    #[inline]
    fn with_data<V: ?Sized>(this: ManuallyDrop<Self>, data: *const V) -> OwnedRwLockReadGuard<T, V> {
        OwnedRwLockReadGuard {
            // SAFETY: `this` is consumed here and never dropped.
            lock: unsafe { guard::take_arc(&this, |g| &g.lock) },
            data,
            _p: PhantomData,
        }
    }

    /// Narrows the guard to a part of the value.
    #[inline]
    pub fn map<F, V: ?Sized>(this: Self, f: F) -> OwnedRwLockReadGuard<T, V>
    where
        F: FnOnce(&U) -> &V,
    {
        let (this, data) = guard::narrow_ref(this, f);
        Self::with_data(this, data)
    }

    /// Like [`OwnedRwLockReadGuard::map`], but `f` may decline, giving the guard back.
    #[inline]
    pub fn try_map<F, V: ?Sized>(this: Self, f: F) -> Result<OwnedRwLockReadGuard<T, V>, Self>
    where
        F: FnOnce(&U) -> Option<&V>,
    {
        let (this, data) = guard::try_narrow_ref(this, f)?;
        Ok(Self::with_data(this, data))
    }

    /// The lock this guard reads.
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    /// The mapped write guard of `data`, taking over `this`'s permits.
    #[inline]
    fn with_data<U: ?Sized>(this: ManuallyDrop<Self>, data: *mut U) -> RwLockMappedWriteGuard<'a, U> {
        RwLockMappedWriteGuard {
            permits_acquired: this.permits_acquired,
            s: this.s,
            data,
            marker: PhantomData,
        }
    }

    /// The read guard of `data`: keeps one of `this`'s permits and returns the rest,
    /// so readers may come in but no writer can before it.
    #[inline]
    fn downgraded<U: ?Sized>(this: ManuallyDrop<Self>, data: *const U) -> RwLockReadGuard<'a, U> {
        this.s.release((this.permits_acquired - 1) as usize);
        RwLockReadGuard {
            s: this.s,
            data,
            marker: PhantomData,
        }
    }

    /// Narrows the guard to a part of the value; the lock stays write-locked.
    #[inline]
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let (this, data) = guard::narrow(this, f);
        Self::with_data(this, data)
    }

    /// Like [`RwLockWriteGuard::map`], but `f` may decline, giving the guard back.
    #[inline]
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (this, data) = guard::try_narrow(this, f)?;
        Ok(Self::with_data(this, data))
    }

    /// Turns the guard into a mapped guard of the whole value.
    #[inline]
    pub fn into_mapped(this: Self) -> RwLockMappedWriteGuard<'a, T> {
        RwLockWriteGuard::map(this, |v| v)
    }

    /// Gives up exclusive access for shared access to a part of the value, without
    /// letting any writer in between. Readers waiting behind this writer may proceed.
    #[inline]
    pub fn downgrade_map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let (this, data) = guard::narrow_ref(this, f);
        Self::downgraded(this, data)
    }

    /// Like [`RwLockWriteGuard::downgrade_map`], but `f` may decline, giving the
    /// write guard back unchanged.
    #[inline]
    pub fn try_downgrade_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let (this, data) = guard::try_narrow_ref(this, f)?;
        Ok(Self::downgraded(this, data))
    }

    /// Gives up exclusive access for shared access, without letting any writer in
    /// between.
    pub fn downgrade(self) -> RwLockReadGuard<'a, T> {
        let data = self.data;
        Self::downgraded(ManuallyDrop::new(self), data)
    }
}

impl<'a, T: ?Sized> RwLockMappedWriteGuard<'a, T> {
    /// This guard narrowed to `data`, taking over `this`'s permits.
    #[inline]
    fn with_data<U: ?Sized>(this: ManuallyDrop<Self>, data: *mut U) -> RwLockMappedWriteGuard<'a, U> {
        RwLockMappedWriteGuard {
            permits_acquired: this.permits_acquired,
            s: this.s,
            data,
            marker: PhantomData,
        }
    }

    /// Narrows the guard further.
    #[inline]
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let (this, data) = guard::narrow(this, f);
        Self::with_data(this, data)
    }

    /// Narrows the guard further if `f` agrees, else gives it back.
    #[inline]
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (this, data) = guard::try_narrow(this, f)?;
        Ok(Self::with_data(this, data))
    }
}

impl<T: ?Sized> OwnedRwLockWriteGuard<T> {
    /// The mapped write guard of `data`, taking over `this`'s permits and `Arc`.
    #[inline]
    fn with_data<U: ?Sized>(this: ManuallyDrop<Self>, data: *mut U) -> OwnedRwLockMappedWriteGuard<T, U> {
        OwnedRwLockMappedWriteGuard {
            permits_acquired: this.permits_acquired,
            // SAFETY: `this` is consumed here and never dropped.
            lock: unsafe { guard::take_arc(&this, |g| &g.lock) },
            data,
            _p: PhantomData,
        }
    }

    /// The read guard of `data`: keeps one of `this`'s permits and returns the rest,
    /// so readers may come in but no writer can before it.
    #[inline]
    fn downgraded<U: ?Sized>(this: ManuallyDrop<Self>, data: *const U) -> OwnedRwLockReadGuard<T, U> {
        // SAFETY: `this` is consumed here and never dropped.
        let lock = unsafe { guard::take_arc(&this, |g| &g.lock) };
        lock.s.release((this.permits_acquired - 1) as usize);
        OwnedRwLockReadGuard {
            lock,
            data,
            _p: PhantomData,
        }
    }

    /// Narrows the guard to a part of the value; the lock stays write-locked.
    #[inline]
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let (this, data) = guard::narrow(this, f);
        Self::with_data(this, data)
    }

    /// Like [`OwnedRwLockWriteGuard::map`], but `f` may decline, giving the guard back.
    #[inline]
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<OwnedRwLockMappedWriteGuard<T, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (this, data) = guard::try_narrow(this, f)?;
        Ok(Self::with_data(this, data))
    }

    /// Turns the guard into a mapped guard of the whole value.
    #[inline]
    pub fn into_mapped(this: Self) -> OwnedRwLockMappedWriteGuard<T> {
        OwnedRwLockWriteGuard::map(this, |v| v)
    }

    /// Gives up exclusive access for shared access to a part of the value, without
    /// letting any writer in between.
    #[inline]
    pub fn downgrade_map<F, U: ?Sized>(this: Self, f: F) -> OwnedRwLockReadGuard<T, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let (this, data) = guard::narrow_ref(this, f);
        Self::downgraded(this, data)
    }

    /// Like [`OwnedRwLockWriteGuard::downgrade_map`], but `f` may decline, giving
    /// the write guard back unchanged.
    #[inline]
    pub fn try_downgrade_map<F, U: ?Sized>(this: Self, f: F) -> Result<OwnedRwLockReadGuard<T, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let (this, data) = guard::try_narrow_ref(this, f)?;
        Ok(Self::downgraded(this, data))
    }

    /// Gives up exclusive access for shared access, without letting any writer in
    /// between.
    pub fn downgrade(self) -> OwnedRwLockReadGuard<T> {
        let data = self.data;
        Self::downgraded(ManuallyDrop::new(self), data)
    }

    /// The lock this guard writes.
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockMappedWriteGuard<T, U> {
    /// This guard narrowed to `data`, taking over `this`'s permits and `Arc`.
    #[inline]
    fn with_data<V: ?Sized>(this: ManuallyDrop<Self>, data: *mut V) -> OwnedRwLockMappedWriteGuard<T, V> {
        OwnedRwLockMappedWriteGuard {
            permits_acquired: this.permits_acquired,
            // SAFETY: `this` is consumed here and never dropped.
            lock: unsafe { guard::take_arc(&this, |g| &g.lock) },
            data,
            _p: PhantomData,
        }
    }

    /// Narrows the guard further.
    #[inline]
    pub fn map<F, V: ?Sized>(this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, V>
    where
        F: FnOnce(&mut U) -> &mut V,
    {
        let (this, data) = guard::narrow(this, f);
        Self::with_data(this, data)
    }

    /// Narrows the guard further if `f` agrees, else gives it back.
    #[inline]
    pub fn try_map<F, V: ?Sized>(this: Self, f: F) -> Result<OwnedRwLockMappedWriteGuard<T, V>, Self>
    where
        F: FnOnce(&mut U) -> Option<&mut V>,
    {
        let (this, data) = guard::try_narrow(this, f)?;
        Ok(Self::with_data(this, data))
    }

    /// The lock this guard writes.
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}
