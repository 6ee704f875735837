//! [`OnceCell`]: a cell written at most once, whose initialization may be async.

use std::cell::UnsafeCell;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::mem::MaybeUninit;

use crate::loom::sync::atomic::{AtomicBool, Ordering};
use crate::{Semaphore, SemaphorePermit, TryAcquireError};

/// A cell that is set at most once and then read freely, for values whose
/// initialization is asynchronous (a connection, a config fetched over the network).
///
/// When several tasks call [`get_or_init`](OnceCell::get_or_init) at once, one runs
/// its initializer and the others wait for it; if that task is cancelled (or its
/// fallible initializer fails), the next waiter gets to try.
///
/// ```
/// use netloop_sync::OnceCell;
///
/// static CONFIG: OnceCell<u32> = OnceCell::const_new();
/// futures::executor::block_on(async {
///     let v = CONFIG.get_or_init(|| async { 7 }).await;
///     assert_eq!(*v, 7);
///     assert_eq!(CONFIG.get(), Some(&7));
/// });
/// ```
pub struct OnceCell<T> {
    value_set: AtomicBool,
    value: UnsafeCell<MaybeUninit<T>>,
    /// One permit: the right to initialize. Closed once the value is set, which
    /// wakes every waiter to read it.
    semaphore: Semaphore,
}

impl<T> Default for OnceCell<T> {
    fn default() -> OnceCell<T> {
        OnceCell::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnceCell").field("value", &self.get()).finish()
    }
}

impl<T: Clone> Clone for OnceCell<T> {
    fn clone(&self) -> OnceCell<T> {
        OnceCell::new_with(self.get().cloned())
    }
}

impl<T: PartialEq> PartialEq for OnceCell<T> {
    fn eq(&self, other: &OnceCell<T>) -> bool {
        self.get() == other.get()
    }
}

impl<T: Eq> Eq for OnceCell<T> {}

impl<T> Drop for OnceCell<T> {
    fn drop(&mut self) {
        if self.initialized_mut() {
            // SAFETY: the flag says the value was written, and nothing reads it any
            // more (we have `&mut self`).
            unsafe { self.value.get_mut().assume_init_drop() };
        }
    }
}

impl<T> From<T> for OnceCell<T> {
    fn from(value: T) -> Self {
        OnceCell {
            value_set: AtomicBool::new(true),
            value: UnsafeCell::new(MaybeUninit::new(value)),
            semaphore: Semaphore::new_closed(),
        }
    }
}

impl<T> OnceCell<T> {
    /// An empty cell.
    pub fn new() -> Self {
        OnceCell {
            value_set: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            semaphore: Semaphore::new(1),
        }
    }

    /// An empty cell, usable to initialize a `static`.
    #[cfg(not(loom))]
    pub const fn const_new() -> Self {
        OnceCell {
            value_set: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            semaphore: Semaphore::const_new(1),
        }
    }

    /// A cell holding `value` if it is `Some`, else an empty one.
    pub fn new_with(value: Option<T>) -> Self {
        match value {
            Some(v) => OnceCell::from(v),
            None => OnceCell::new(),
        }
    }

    /// A cell already holding `value`, usable to initialize a `static`.
    #[cfg(not(loom))]
    pub const fn const_new_with(value: T) -> Self {
        OnceCell {
            value_set: AtomicBool::new(true),
            value: UnsafeCell::new(MaybeUninit::new(value)),
            semaphore: Semaphore::const_new_closed(),
        }
    }

    /// True once the cell holds a value.
    pub fn initialized(&self) -> bool {
        self.value_set.load(Ordering::Acquire)
    }

    fn initialized_mut(&mut self) -> bool {
        // Exclusive access: a plain load is enough (and loom's atomics have no
        // `get_mut`).
        self.value_set.load(Ordering::Relaxed)
    }

    /// # Safety
    ///
    /// The value must have been written (`initialized()` returned true).
    unsafe fn get_unchecked(&self) -> &T {
        // SAFETY: written once before `value_set` was published, never written
        // again while `&self` borrows exist; the caller saw the flag.
        unsafe { (*self.value.get()).assume_init_ref() }
    }

    /// Writes the value while holding the initialization permit, publishes it, and
    /// closes the semaphore so that every waiter (and later caller) reads it.
    fn set_value(&self, value: T, permit: SemaphorePermit<'_>) -> &T {
        // SAFETY: the permit is the only one and is never returned once the value is
        // set, so no one else writes; no one reads before `value_set` is published.
        unsafe { (*self.value.get()).write(value) };
        self.value_set.store(true, Ordering::Release);
        self.semaphore.close();
        permit.forget();
        // SAFETY: just written.
        unsafe { self.get_unchecked() }
    }

    /// The value, if the cell holds one.
    pub fn get(&self) -> Option<&T> {
        if self.initialized() {
            // SAFETY: `initialized()` saw the flag.
            Some(unsafe { self.get_unchecked() })
        } else {
            None
        }
    }

    /// The value, mutably, if the cell holds one.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        if self.initialized_mut() {
            // SAFETY: the value was written; `&mut self` makes this borrow unique.
            Some(unsafe { self.value.get_mut().assume_init_mut() })
        } else {
            None
        }
    }

    /// Sets the value if the cell is empty and no one is initializing it; otherwise
    /// gives `value` back inside the error.
    pub fn set(&self, value: T) -> Result<(), SetError<T>> {
        if self.initialized() {
            return Err(SetError::AlreadyInitializedError(value));
        }
        match self.semaphore.try_acquire() {
            Ok(permit) => {
                self.set_value(value, permit);
                Ok(())
            }
            Err(TryAcquireError::NoPermits) => Err(SetError::InitializingError(value)),
            Err(TryAcquireError::Closed) => Err(SetError::AlreadyInitializedError(value)),
        }
    }

    /// The value, running `f` to make it if the cell is empty. Only one caller at a
    /// time runs its `f`; if it is cancelled, another waiting caller runs its own.
    pub async fn get_or_init<F, Fut>(&self, f: F) -> &T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        if self.initialized() {
            // SAFETY: `initialized()` saw the flag.
            return unsafe { self.get_unchecked() };
        }
        match self.semaphore.acquire().await {
            Ok(permit) => {
                let value = f().await;
                self.set_value(value, permit)
            }
            // Closed: the value was set while we waited.
            // SAFETY: the semaphore is closed only after the value is published.
            Err(_) => unsafe { self.get_unchecked() },
        }
    }

    /// Like [`OnceCell::get_or_init`] with a fallible `f`: on `Err` the cell stays
    /// empty and the next waiting caller gets to try.
    pub async fn get_or_try_init<E, F, Fut>(&self, f: F) -> Result<&T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if self.initialized() {
            // SAFETY: `initialized()` saw the flag.
            return Ok(unsafe { self.get_unchecked() });
        }
        match self.semaphore.acquire().await {
            Ok(permit) => {
                let value = f().await?;
                Ok(self.set_value(value, permit))
            }
            // SAFETY: the semaphore is closed only after the value is published.
            Err(_) => Ok(unsafe { self.get_unchecked() }),
        }
    }

    /// Consumes the cell and returns its value, if any.
    pub fn into_inner(mut self) -> Option<T> {
        if self.initialized_mut() {
            self.value_set.store(false, Ordering::Relaxed);
            // SAFETY: the value was written; clearing the flag keeps `Drop` from
            // dropping it a second time.
            Some(unsafe { self.value.get_mut().assume_init_read() })
        } else {
            None
        }
    }

    /// Takes the value out, leaving the cell empty (and usable again).
    pub fn take(&mut self) -> Option<T> {
        std::mem::take(self).into_inner()
    }
}

// SAFETY: shared access hands out `&T` on any thread (`T: Sync`) and the value may
// be written from any thread (`T: Send`).
unsafe impl<T: Sync + Send> Sync for OnceCell<T> {}
// SAFETY: the cell owns its `T`.
unsafe impl<T: Send> Send for OnceCell<T> {}

/// Why [`OnceCell::set`] did not store the value (which it gives back).
#[derive(Debug, PartialEq, Eq)]
pub enum SetError<T> {
    /// The cell already held a value.
    AlreadyInitializedError(T),
    /// Another caller was initializing the cell at that moment.
    InitializingError(T),
}

impl<T> fmt::Display for SetError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetError::AlreadyInitializedError(_) => f.write_str("AlreadyInitializedError"),
            SetError::InitializingError(_) => f.write_str("InitializingError"),
        }
    }
}

impl<T: fmt::Debug> Error for SetError<T> {}

impl<T> SetError<T> {
    /// True if the cell already held a value.
    pub fn is_already_init_err(&self) -> bool {
        matches!(self, SetError::AlreadyInitializedError(_))
    }

    /// True if another caller was initializing the cell.
    pub fn is_initializing_err(&self) -> bool {
        matches!(self, SetError::InitializingError(_))
    }
}
