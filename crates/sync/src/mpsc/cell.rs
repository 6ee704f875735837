//! The few loom-aware pieces the channel needs beyond `crate::loom`: `AtomicPtr` and
//! the pause inside a spin (and the crate's cell, re-exported).

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicPtr;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicPtr;

pub(crate) use crate::loom::cell::UnsafeCell;

/// One step of a wait for another thread's progress (a write in flight).
#[inline]
pub(crate) fn spin_yield() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
