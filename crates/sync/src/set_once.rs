//! [`SetOnce`]: a value set at most once, which tasks can wait for.

use std::cell::UnsafeCell;
use std::error::Error;
use std::fmt;
use std::mem::MaybeUninit;

use crate::loom::lock;
use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::AtomicBool;
use crate::loom::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use crate::notify::Notify;

/// A cell written at most once; readers get `&T` without locking, and tasks can
/// [`wait`](SetOnce::wait) until the value is there.
///
/// Unlike `OnceCell`, the value is not computed by the cell: some task
/// [`set`](SetOnce::set)s it, and the first `set` wins.
///
/// ```
/// use netloop_sync::SetOnce;
///
/// static READY: SetOnce<u32> = SetOnce::const_new();
/// std::thread::spawn(|| READY.set(7).unwrap());
/// assert_eq!(*futures::executor::block_on(READY.wait()), 7);
/// ```
pub struct SetOnce<T> {
    /// True once `value` is written; never goes back while shared.
    is_set: AtomicBool,
    value: UnsafeCell<MaybeUninit<T>>,
    /// Makes concurrent `set`s take turns, so that a losing `set` returns only once
    /// the winner's value is visible.
    setting: Mutex<()>,
    notify: Notify,
}

// SAFETY: `set` (through `&self`) moves a `T` into the cell from whichever thread calls
// it, so sharing needs `T: Send`; `get` hands out `&T` to every thread, so it needs
// `T: Sync` too. The cell is written once, under `setting`, before `is_set` is
// published with Release; it is read only after an Acquire load of `is_set` saw true.
unsafe impl<T: Send + Sync> Sync for SetOnce<T> {}
// SAFETY: moving the cell moves the `T` it may hold; nothing in it is tied to a thread.
unsafe impl<T: Send> Send for SetOnce<T> {}

impl<T> SetOnce<T> {
    /// An empty cell.
    pub fn new() -> Self {
        SetOnce {
            is_set: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            setting: Mutex::new(()),
            notify: Notify::new(),
        }
    }

    /// An empty cell, usable in a `static`.
    #[cfg(not(loom))]
    pub const fn const_new() -> Self {
        SetOnce {
            is_set: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            setting: Mutex::new(()),
            notify: Notify::const_new(),
        }
    }

    /// An empty cell (loom's types have no `const` constructors).
    #[cfg(loom)]
    pub fn const_new() -> Self {
        Self::new()
    }

    /// A cell holding `value` if it is `Some`, empty otherwise.
    pub fn new_with(value: Option<T>) -> Self {
        match value {
            Some(v) => Self::from(v),
            None => Self::new(),
        }
    }

    /// A cell already holding `value`, usable in a `static`.
    #[cfg(not(loom))]
    pub const fn const_new_with(value: T) -> Self {
        SetOnce {
            is_set: AtomicBool::new(true),
            value: UnsafeCell::new(MaybeUninit::new(value)),
            setting: Mutex::new(()),
            notify: Notify::const_new(),
        }
    }

    /// A cell already holding `value` (loom's types have no `const` constructors).
    #[cfg(loom)]
    pub fn const_new_with(value: T) -> Self {
        Self::from(value)
    }

    /// True once a value has been set.
    pub fn initialized(&self) -> bool {
        self.is_set.load(Acquire)
    }

    /// The value, if set.
    pub fn get(&self) -> Option<&T> {
        if self.initialized() {
            // SAFETY: `is_set` was seen true with Acquire, after the Release store that
            // followed the one write of the value; the value is never written again nor
            // moved out while `&self` lives.
            Some(unsafe { (*self.value.get()).assume_init_ref() })
        } else {
            None
        }
    }

    /// Sets the value, and wakes every task in [`wait`](SetOnce::wait).
    ///
    /// Returns the value back in a [`SetOnceError`] if the cell was already set
    /// (including by a concurrent `set` that won).
    pub fn set(&self, value: T) -> Result<(), SetOnceError<T>> {
        if self.initialized() {
            return Err(SetOnceError(value));
        }
        let guard = lock(&self.setting);
        if self.is_set.load(Relaxed) {
            return Err(SetOnceError(value));
        }
        // SAFETY: the value is unset and we hold `setting`, so no other `set` writes and
        // no reader reads (readers wait for `is_set`, stored only below).
        unsafe { (*self.value.get()).write(value) };
        self.is_set.store(true, Release);
        drop(guard);
        self.notify.notify_waiters();
        Ok(())
    }

    /// Takes the value out of the cell, if it was set.
    pub fn into_inner(mut self) -> Option<T> {
        self.take()
    }

    fn take(&mut self) -> Option<T> {
        if !self.is_set.load(Relaxed) {
            return None;
        }
        self.is_set.store(false, Relaxed);
        // SAFETY: `&mut self` excludes every reader and writer, and `is_set` said the
        // value was written; clearing `is_set` first means it is read out only once.
        Some(unsafe { (*self.value.get()).assume_init_read() })
    }

    /// Waits until the value is set, then returns it (at once if it already is).
    ///
    /// Cancel safe.
    pub async fn wait(&self) -> &T {
        loop {
            if let Some(value) = self.get() {
                return value;
            }
            // Created before the check below, the future sees any `set` from here on.
            let notified = self.notify.notified();
            if let Some(value) = self.get() {
                return value;
            }
            notified.await;
        }
    }
}

impl<T> Default for SetOnce<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> From<T> for SetOnce<T> {
    fn from(value: T) -> Self {
        SetOnce {
            is_set: AtomicBool::new(true),
            value: UnsafeCell::new(MaybeUninit::new(value)),
            setting: Mutex::new(()),
            notify: Notify::new(),
        }
    }
}

impl<T> Drop for SetOnce<T> {
    fn drop(&mut self) {
        drop(self.take());
    }
}

impl<T: fmt::Debug> fmt::Debug for SetOnce<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetOnce").field("value", &self.get()).finish()
    }
}

impl<T: Clone> Clone for SetOnce<T> {
    fn clone(&self) -> Self {
        Self::new_with(self.get().cloned())
    }
}

impl<T: PartialEq> PartialEq for SetOnce<T> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl<T: Eq> Eq for SetOnce<T> {}

/// The error of [`SetOnce::set`] on a cell already set: holds the value not stored.
#[derive(Debug, PartialEq, Eq)]
pub struct SetOnceError<T>(pub T);

impl<T> fmt::Display for SetOnceError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SetOnceError")
    }
}

impl<T: fmt::Debug> Error for SetOnceError<T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn set_wakes_a_waiter_and_second_set_fails() {
        let cell = SetOnce::new();
        let mut w = Box::pin(cell.wait());
        assert!((&mut w).now_or_never().is_none());
        assert_eq!(cell.set(String::from("a")), Ok(()));
        assert_eq!(w.now_or_never().map(|s| s.as_str()), Some("a"));
        assert_eq!(cell.set(String::from("b")), Err(SetOnceError(String::from("b"))));
        assert_eq!(cell.into_inner().as_deref(), Some("a"));
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::loom::sync::Arc;
    use loom::future::block_on;
    use loom::thread;

    /// set racing wait: the waiter always sees the value (no lost wake-up between its
    /// check and its registration).
    #[test]
    fn set_vs_wait() {
        loom::model(|| {
            let cell = Arc::new(SetOnce::new());
            let c2 = cell.clone();
            let t = thread::spawn(move || c2.set(3).unwrap());
            assert_eq!(*block_on(cell.wait()), 3);
            t.join().unwrap();
        });
    }
}
