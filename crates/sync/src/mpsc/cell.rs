//! The few loom-aware pieces the channel needs beyond `crate::loom`: a cell with
//! loom's access-tracking API, `AtomicPtr`, and the pause inside a spin.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicPtr;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicPtr;

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `std`'s `UnsafeCell` behind loom's closure API, so that the same code runs in the
/// models (where loom checks every access) and for real.
#[cfg(not(loom))]
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// One step of a wait for another thread's progress (a write in flight).
#[inline]
pub(crate) fn spin_yield() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
