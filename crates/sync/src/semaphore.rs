//! [`Semaphore`]: a fair counting semaphore for async code, and its permits.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::batch_semaphore as ll;
use crate::{AcquireError, TryAcquireError};

/// A counting semaphore: a pool of permits that tasks take before doing something
/// limited (open connections, concurrent requests, ...) and give back afterwards.
///
/// Waiters are served in the order they asked, each getting all the permits it asked
/// for before anyone behind it gets any. A permit goes back to the pool when its
/// [`SemaphorePermit`] (or [`OwnedSemaphorePermit`]) is dropped.
///
/// ```
/// use netloop_sync::Semaphore;
///
/// let sem = Semaphore::new(2);
/// futures::executor::block_on(async {
///     let a = sem.acquire().await.unwrap();
///     let _b = sem.acquire().await.unwrap();
///     assert!(sem.try_acquire().is_err());
///     drop(a);
///     assert_eq!(sem.available_permits(), 1);
/// });
/// ```
pub struct Semaphore {
    ll_sem: ll::Semaphore,
    /// tokio's `runtime.resource` span of the semaphore.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    resource_span: tracing::Span,
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore").field("ll_sem", &self.ll_sem).finish()
    }
}

/// Permits taken from a [`Semaphore`] by borrowing it; they go back when this is
/// dropped (unless [`forget`](SemaphorePermit::forget) is called).
#[must_use]
#[clippy::has_significant_drop]
#[derive(Debug)]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    permits: usize,
}

/// Permits taken from a [`Semaphore`] held in an [`Arc`]; the permit keeps the
/// semaphore alive, so it can be moved into a spawned task.
#[must_use]
#[clippy::has_significant_drop]
#[derive(Debug)]
pub struct OwnedSemaphorePermit {
    sem: Arc<Semaphore>,
    permits: usize,
}

impl Semaphore {
    /// The largest number of permits a semaphore can hold (`usize::MAX >> 3`).
    pub const MAX_PERMITS: usize = ll::Semaphore::MAX_PERMITS;

    /// A semaphore with `permits` permits to hand out.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub fn new(permits: usize) -> Self {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        {
            let resource_span = crate::trace::resource_span!(
                "tokio::sync::semaphore",
                "Semaphore",
                std::panic::Location::caller(),
                inherits_child_attrs = true
            );
            let ll_sem = resource_span.in_scope(|| ll::Semaphore::new(permits));
            Semaphore { ll_sem, resource_span }
        }
        #[cfg(not(all(tokio_unstable, feature = "tracing")))]
        Semaphore {
            ll_sem: ll::Semaphore::new(permits),
        }
    }

    /// The low-level acquire of `n` permits: without tokio's `tracing` the batch
    /// semaphore's own future, with it that future as tokio's async op `source`.
    #[inline(always)]
    fn acquire_ll(&self, n: usize, source: &'static str) -> impl Future<Output = Result<(), AcquireError>> + '_ {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        return crate::trace::async_op(&self.resource_span, source, true, move || self.ll_sem.acquire(n));
        #[cfg(not(all(tokio_unstable, feature = "tracing")))]
        {
            let _ = source;
            self.ll_sem.acquire(n)
        }
    }

    /// Like [`Semaphore::new`], but usable to initialize a `static`.
    ///
    /// ```
    /// static LIMIT: netloop_sync::Semaphore = netloop_sync::Semaphore::const_new(4);
    /// assert_eq!(LIMIT.available_permits(), 4);
    /// ```
    #[cfg(not(loom))]
    pub const fn const_new(permits: usize) -> Self {
        Semaphore {
            ll_sem: ll::Semaphore::const_new(permits),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: tracing::Span::none(),
        }
    }

    /// A semaphore that is closed from the start, with no permits.
    #[allow(dead_code)]
    pub(crate) fn new_closed() -> Self {
        Semaphore {
            ll_sem: ll::Semaphore::new_closed(),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: tracing::Span::none(),
        }
    }

    /// Like [`Semaphore::new_closed`], usable in a `static`.
    #[cfg(not(loom))]
    #[allow(dead_code)]
    pub(crate) const fn const_new_closed() -> Self {
        Semaphore {
            ll_sem: ll::Semaphore::const_new_closed(),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: tracing::Span::none(),
        }
    }

    /// How many permits are free right now.
    pub fn available_permits(&self) -> usize {
        self.ll_sem.available_permits()
    }

    /// Puts `n` more permits into the pool, serving waiting acquirers first.
    ///
    /// # Panics
    ///
    /// If the pool would then exceed [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub fn add_permits(&self, n: usize) {
        self.ll_sem.release(n);
    }

    /// Takes up to `n` free permits out of the pool for good and returns how many
    /// were taken (fewer than `n` if fewer were free).
    pub fn forget_permits(&self, n: usize) -> usize {
        self.ll_sem.forget_permits(n)
    }

    /// Waits for one permit.
    ///
    /// Fails only if the semaphore is closed. Cancel safe: dropping the future gives
    /// up its place in the queue (and gives back anything it had been handed).
    pub async fn acquire(&self) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.acquire_ll(1, "Semaphore::acquire").await?;
        Ok(SemaphorePermit { sem: self, permits: 1 })
    }

    /// Waits for `n` permits, taken as one unit.
    ///
    /// Fails only if the semaphore is closed. Cancel safe, as [`Semaphore::acquire`].
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    pub async fn acquire_many(&self, n: u32) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.acquire_ll(n as usize, "Semaphore::acquire_many").await?;
        Ok(SemaphorePermit {
            sem: self,
            permits: n as usize,
        })
    }

    /// Takes one permit if one is free now.
    pub fn try_acquire(&self) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.ll_sem.try_acquire(1)?;
        Ok(SemaphorePermit { sem: self, permits: 1 })
    }

    /// Takes `n` permits if that many are free now.
    pub fn try_acquire_many(&self, n: u32) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.ll_sem.try_acquire(n as usize)?;
        Ok(SemaphorePermit {
            sem: self,
            permits: n as usize,
        })
    }

    /// Waits for one permit by blocking the thread, for code outside async tasks.
    ///
    /// # Panics
    ///
    /// If called on a thread that drives async tasks (a loop's or a runtime's).
    #[track_caller]
    pub fn blocking_acquire(&self) -> Result<SemaphorePermit<'_>, AcquireError> {
        crate::blocking::block_on(self.acquire())
    }

    /// Waits for `n` permits by blocking the thread.
    ///
    /// # Panics
    ///
    /// If called on a thread that drives async tasks.
    #[track_caller]
    pub fn blocking_acquire_many(&self, n: u32) -> Result<SemaphorePermit<'_>, AcquireError> {
        crate::blocking::block_on(self.acquire_many(n))
    }

    /// Waits for one permit that holds the semaphore through its [`Arc`].
    pub async fn acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, AcquireError> {
        self.acquire_ll(1, "Semaphore::acquire_owned").await?;
        Ok(OwnedSemaphorePermit { sem: self, permits: 1 })
    }

    /// Waits for `n` permits that hold the semaphore through its [`Arc`].
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    pub async fn acquire_many_owned(self: Arc<Self>, n: u32) -> Result<OwnedSemaphorePermit, AcquireError> {
        self.acquire_ll(n as usize, "Semaphore::acquire_many_owned").await?;
        Ok(OwnedSemaphorePermit {
            sem: self,
            permits: n as usize,
        })
    }

    /// Takes one owned permit if one is free now.
    pub fn try_acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.ll_sem.try_acquire(1)?;
        Ok(OwnedSemaphorePermit { sem: self, permits: 1 })
    }

    /// Takes `n` owned permits if that many are free now.
    pub fn try_acquire_many_owned(self: Arc<Self>, n: u32) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.ll_sem.try_acquire(n as usize)?;
        Ok(OwnedSemaphorePermit {
            sem: self,
            permits: n as usize,
        })
    }

    /// Waits for one owned permit by blocking the thread.
    ///
    /// # Panics
    ///
    /// If called on a thread that drives async tasks.
    #[track_caller]
    pub fn blocking_acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, AcquireError> {
        crate::blocking::block_on(self.acquire_owned())
    }

    /// Waits for `n` owned permits by blocking the thread.
    ///
    /// # Panics
    ///
    /// If called on a thread that drives async tasks.
    #[track_caller]
    pub fn blocking_acquire_many_owned(self: Arc<Self>, n: u32) -> Result<OwnedSemaphorePermit, AcquireError> {
        crate::blocking::block_on(self.acquire_many_owned(n))
    }

    /// Closes the semaphore: pending and later acquires fail with [`AcquireError`],
    /// `try_acquire*` with [`TryAcquireError::Closed`]. Permits already held stay
    /// valid and can still be returned.
    pub fn close(&self) {
        self.ll_sem.close();
    }

    /// True once the semaphore is closed.
    pub fn is_closed(&self) -> bool {
        self.ll_sem.is_closed()
    }
}

// What `SemaphorePermit` and `OwnedSemaphorePermit` share: a permit is a count of
// permits taken from one semaphore, returned to it when the permit drops.

/// Moves the count `other` into `permits`, for `merge`.
///
/// # Panics
///
/// If the two permits come from different semaphores, or the sum overflows.
#[track_caller]
fn merge_counts(permits: &mut usize, other: &mut usize, same_semaphore: bool) {
    assert!(same_semaphore, "merging permits from different semaphore instances");
    *permits = permits.checked_add(*other).expect("number of permits overflowed");
    *other = 0;
}

/// Takes `n` of `permits` for a new permit, for `split`; `None` if fewer are held.
fn take_count(permits: &mut usize, n: usize) -> Option<()> {
    *permits = permits.checked_sub(n)?;
    Some(())
}

impl<'a> SemaphorePermit<'a> {
    /// Drops the permit without returning it: the semaphore has that many fewer.
    pub fn forget(mut self) {
        self.permits = 0;
    }

    /// Adds `other`'s permits to this one.
    ///
    /// # Panics
    ///
    /// If the two permits come from different semaphores.
    #[track_caller]
    pub fn merge(&mut self, mut other: Self) {
        merge_counts(&mut self.permits, &mut other.permits, std::ptr::eq(self.sem, other.sem));
    }

    /// Moves `n` of this permit's permits into a new permit; `None` if it holds
    /// fewer than `n`.
    pub fn split(&mut self, n: usize) -> Option<Self> {
        take_count(&mut self.permits, n)?;
        Some(SemaphorePermit {
            sem: self.sem,
            permits: n,
        })
    }

    /// The semaphore the permits came from.
    pub fn semaphore(&self) -> &Semaphore {
        self.sem
    }

    /// How many permits this holds.
    pub fn num_permits(&self) -> usize {
        self.permits
    }
}

impl OwnedSemaphorePermit {
    /// Drops the permit without returning it: the semaphore has that many fewer.
    pub fn forget(mut self) {
        self.permits = 0;
    }

    /// Adds `other`'s permits to this one.
    ///
    /// # Panics
    ///
    /// If the two permits come from different semaphores.
    #[track_caller]
    pub fn merge(&mut self, mut other: Self) {
        merge_counts(
            &mut self.permits,
            &mut other.permits,
            Arc::ptr_eq(&self.sem, &other.sem),
        );
    }

    /// Moves `n` of this permit's permits into a new permit; `None` if it holds
    /// fewer than `n`.
    pub fn split(&mut self, n: usize) -> Option<Self> {
        take_count(&mut self.permits, n)?;
        Some(OwnedSemaphorePermit {
            sem: self.sem.clone(),
            permits: n,
        })
    }

    /// The semaphore the permits came from.
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }

    /// How many permits this holds.
    pub fn num_permits(&self) -> usize {
        self.permits
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.sem.add_permits(self.permits);
    }
}

impl Drop for OwnedSemaphorePermit {
    fn drop(&mut self) {
        self.sem.add_permits(self.permits);
    }
}
