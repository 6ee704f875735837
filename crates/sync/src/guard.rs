//! What the lock guards of [`Mutex`](crate::Mutex) and [`RwLock`](crate::RwLock)
//! share: narrowing a guard to a part of its value, moving the `Arc` out of an owned
//! guard, and forwarding `Deref`, `Debug` and `Display` to the value.
//!
//! Invariant of every guard: it holds the permits that give it its access until it
//! is dropped, and its `Drop` returns them. A guard turned into another guard is
//! wrapped in [`ManuallyDrop`] first, so its permits pass to the new guard instead.

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// Applies a `map` closure to a guard's value: the pointer it returns, with the
/// guard, whose permits now belong to the guard the caller builds from it.
#[inline]
pub(crate) fn narrow<G, U>(mut guard: G, f: impl FnOnce(&mut G::Target) -> &mut U) -> (ManuallyDrop<G>, *mut U)
where
    G: DerefMut,
    U: ?Sized,
{
    let data = f(&mut *guard) as *mut U;
    (ManuallyDrop::new(guard), data)
}

/// Like [`narrow`] for a `try_map` closure: a declined closure gives the guard back
/// untouched (still holding its permits).
#[inline]
pub(crate) fn try_narrow<G, U>(
    mut guard: G,
    f: impl FnOnce(&mut G::Target) -> Option<&mut U>,
) -> Result<(ManuallyDrop<G>, *mut U), G>
where
    G: DerefMut,
    U: ?Sized,
{
    match f(&mut *guard) {
        Some(data) => {
            let data = data as *mut U;
            Ok((ManuallyDrop::new(guard), data))
        }
        None => Err(guard),
    }
}

/// [`narrow`] for a closure that sees the value shared (read guards, downgrades).
#[inline]
pub(crate) fn narrow_ref<G, U>(guard: G, f: impl FnOnce(&G::Target) -> &U) -> (ManuallyDrop<G>, *const U)
where
    G: Deref,
    U: ?Sized,
{
    let data = f(&*guard) as *const U;
    (ManuallyDrop::new(guard), data)
}

/// [`try_narrow`] for a closure that sees the value shared.
#[inline]
pub(crate) fn try_narrow_ref<G, U>(
    guard: G,
    f: impl FnOnce(&G::Target) -> Option<&U>,
) -> Result<(ManuallyDrop<G>, *const U), G>
where
    G: Deref,
    U: ?Sized,
{
    match f(&*guard) {
        Some(data) => {
            let data = data as *const U;
            Ok((ManuallyDrop::new(guard), data))
        }
        None => Err(guard),
    }
}

/// Moves the `Arc` (the field `arc` picks) out of an owned guard that is being
/// turned into another guard without running its `Drop`.
///
/// # Safety
///
/// The caller never uses that field of `guard` again, and `guard` is never dropped,
/// so the `Arc` is moved out exactly once.
#[inline]
pub(crate) unsafe fn take_arc<G, L: ?Sized>(guard: &ManuallyDrop<G>, arc: impl FnOnce(&G) -> &Arc<L>) -> Arc<L> {
    // SAFETY: as the caller promises.
    unsafe { std::ptr::read(arc(guard)) }
}

/// `Deref`, `Debug` and `Display` for a guard, forwarding to the value it reaches
/// through the pointer `|guard| ptr` (by default its `data` field).
macro_rules! guard_deref {
    ([$($g:tt)*] $ty:ty => $target:ty) => {
        $crate::guard::guard_deref!([$($g)*] $ty => $target, |this| this.data);
    };
    ([$($g:tt)*] $ty:ty => $target:ty, |$this:ident| $ptr:expr) => {
        impl<$($g)*> std::ops::Deref for $ty {
            type Target = $target;
            #[inline]
            fn deref(&self) -> &$target {
                let $this = self;
                // SAFETY: the pointer reaches into the lock's value, and this guard
                // holds the permits that keep writers (or, for an exclusive guard,
                // everyone else) out until it is dropped.
                unsafe { &*$ptr }
            }
        }
        impl<$($g)*> std::fmt::Debug for $ty where $target: std::fmt::Debug {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&**self, f)
            }
        }
        impl<$($g)*> std::fmt::Display for $ty where $target: std::fmt::Display {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&**self, f)
            }
        }
    };
}

/// `DerefMut` for an exclusive guard (same pointer forms as [`guard_deref!`]).
macro_rules! guard_deref_mut {
    ([$($g:tt)*] $ty:ty => $target:ty) => {
        $crate::guard::guard_deref_mut!([$($g)*] $ty => $target, |this| this.data);
    };
    ([$($g:tt)*] $ty:ty => $target:ty, |$this:ident| $ptr:expr) => {
        impl<$($g)*> std::ops::DerefMut for $ty {
            #[inline]
            fn deref_mut(&mut self) -> &mut $target {
                let $this = &*self;
                // SAFETY: this guard holds every permit of the lock, so no other
                // access exists; `&mut self` makes this one unique.
                unsafe { &mut *$ptr }
            }
        }
    };
}

pub(crate) use {guard_deref, guard_deref_mut};
