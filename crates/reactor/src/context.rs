//! Which loop, if any, the current thread is driving.
//!
//! Submissions from the loop's own thread skip the inbox and every atomic: they go
//! straight into the local run queue. To know that it is on the loop's thread, a
//! submitter looks at this thread-local, which points at the loop's `Core` for exactly
//! as long as an [`EnterGuard`] borrowing that core is alive.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;

use crate::core::Core;
use crate::error::DriveError;
use crate::shared::Shared;

thread_local! {
    static CURRENT: Cell<*const Core> = const { Cell::new(ptr::null()) };
    /// True while this thread is inside a runtime's `block_on`: its future is what the
    /// thread waits for, so blocking on anything else (a nested `block_on`, a
    /// `blocking_recv`) would stall it (tokio's rule).
    static IN_BLOCK_ON: Cell<bool> = const { Cell::new(false) };
}

/// Sets whether this thread is inside a runtime's `block_on`, returning the previous
/// mark. The scheduler sets it around `block_on` and clears it around
/// `block_in_place`'s closure, where blocking is the point.
pub fn set_in_block_on(inside: bool) -> bool {
    IN_BLOCK_ON.try_with(|c| c.replace(inside)).unwrap_or(false)
}

/// True while this thread is inside a runtime's `block_on`.
pub fn in_block_on() -> bool {
    IN_BLOCK_ON.try_with(Cell::get).unwrap_or(false)
}

/// True if this thread may block: it drives no loop and is inside no runtime's
/// `block_on`. The `blocking_*` calls of `sync` panic where it is false, as tokio's do
/// inside a runtime.
pub fn may_block() -> bool {
    !in_block_on() && with_core(|core| core.is_none())
}

/// Marks this thread as driving a loop until dropped (also on unwind).
pub(crate) struct EnterGuard<'a> {
    _core: PhantomData<&'a Core>,
}

pub(crate) fn enter(core: &Core) -> Result<EnterGuard<'_>, DriveError> {
    CURRENT.with(|c| {
        if !c.get().is_null() {
            return Err(DriveError::Nested);
        }
        c.set(core);
        #[cfg(tokio_unstable)]
        core.shared.unstable.set_driver(std::thread::current().id());
        Ok(EnterGuard { _core: PhantomData })
    })
}

impl Drop for EnterGuard<'_> {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.set(ptr::null()));
    }
}

/// Runs `f` as if this thread drove no loop, putting the mark back afterwards (also on
/// a panic): for blocking work on a loop thread (`block_in_place`), which may start
/// another runtime or block on a future. Meanwhile everything this thread submits to
/// its loop takes the cross-thread path (the inbox), and runs once `f` has returned
/// and the loop goes on. Wakes deferred until the loop's next I/O poll are made
/// first: that poll now waits for `f`, and a waker must not wait on blocking work.
pub fn outside_loop<R>(f: impl FnOnce() -> R) -> R {
    with_core(|core| {
        if let Some(core) = core {
            core.local.wake_deferred();
            // Bytes the loop's streams accepted reach the kernel before `f` may wait
            // for them (on io_uring they would otherwise wait for the loop's next turn).
            core.submit_now();
        }
    });
    struct Restore(*const Core);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = CURRENT.try_with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CURRENT.try_with(|c| c.replace(ptr::null())).unwrap_or(ptr::null()));
    f()
}

/// Calls `f` with the core this thread is driving, if any.
pub(crate) fn with_core<R>(f: impl FnOnce(Option<&Core>) -> R) -> R {
    let p = CURRENT.try_with(Cell::get).unwrap_or(ptr::null());
    // SAFETY: `p` is non-null only between `enter` and the drop of the returned guard,
    // which borrows the `Core` for that whole time, so the core is alive. It is only
    // ever accessed through shared references (its mutable parts are `Cell`/`RefCell`),
    // so this `&Core` aliases nothing mutable. The reference cannot outlive `f`.
    f(unsafe { p.as_ref() })
}

/// Calls `f` with the core if this thread is driving the loop `shared` belongs to.
pub(crate) fn with_own_core<R>(shared: &Shared, f: impl FnOnce(&Core) -> R) -> Option<R> {
    with_core(|core| match core {
        Some(core) if ptr::eq(&*core.shared, shared) => Some(f(core)),
        _ => None,
    })
}

/// Hands `value` to `f` with the core if this thread drives the loop `shared` belongs
/// to; otherwise gives `value` back untouched.
pub(crate) fn on_own_core<T, R>(shared: &Shared, value: T, f: impl FnOnce(&Core, T) -> R) -> Result<R, T> {
    with_core(|core| match core {
        Some(core) if ptr::eq(&*core.shared, shared) => Ok(f(core, value)),
        _ => Err(value),
    })
}

/// True if this thread is driving the loop `shared` belongs to.
pub(crate) fn is_own_thread(shared: &Shared) -> bool {
    with_own_core(shared, |_| ()).is_some()
}
