//! The runtime a thread is in: set on every loop thread, and by `enter` / `block_on`.

use std::cell::{Cell, RefCell};

use super::Handle;

thread_local! {
    static CURRENT: RefCell<Option<Handle>> = const { RefCell::new(None) };
    /// How many guards are alive on this thread: each guard knows its place, so one
    /// dropped out of turn is caught instead of restoring the wrong runtime.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Restores the previous runtime context when dropped. Guards nest: they must be
/// dropped in the reverse order of their creation.
pub(crate) struct SetGuard {
    prev: Option<Handle>,
    depth: usize,
}

pub(crate) fn set(handle: Handle) -> SetGuard {
    let prev = CURRENT.with(|c| c.replace(Some(handle)));
    let depth = DEPTH.with(|d| {
        d.set(d.get() + 1);
        d.get()
    });
    SetGuard { prev, depth }
}

/// [`set`], unless the thread is exiting and its context is already gone (a runtime
/// dropped by a thread-local's destructor): then nothing.
pub(crate) fn try_set(handle: Handle) -> Option<SetGuard> {
    let prev = CURRENT.try_with(|c| c.replace(Some(handle))).ok()?;
    let Ok(depth) = DEPTH.try_with(|d| {
        d.set(d.get() + 1);
        d.get()
    }) else {
        let _ = CURRENT.try_with(|c| *c.borrow_mut() = prev);
        return None;
    };
    Some(SetGuard { prev, depth })
}

impl Drop for SetGuard {
    fn drop(&mut self) {
        let Ok(depth) = DEPTH.try_with(Cell::get) else {
            return; // The thread is exiting: its context is gone.
        };
        if self.depth > depth {
            // Already undone by an outer guard dropped before it (below).
            return;
        }
        // In turn, this restores the context before it. Dropped before the guards
        // made after it, it undoes them too, then says so: the context is left as it
        // was before this guard, whatever the later ones do when they are dropped.
        let prev = self.prev.take();
        let _ = CURRENT.try_with(|c| *c.borrow_mut() = prev);
        let _ = DEPTH.try_with(|d| d.set(self.depth - 1));
        if self.depth < depth && !std::thread::panicking() {
            panic!(
                "`EnterGuard` values dropped out of order. Guards returned by \
                 `netloop::runtime::Handle::enter()` must be dropped in the reverse \
                 order as they were acquired."
            );
        }
    }
}

/// Calls `f` with the current runtime, borrowed. The borrow is shared, so `f` may
/// read the context again (`Handle::current`); only entering another runtime inside
/// `f` would conflict, and spawning never does that.
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&Handle>) -> R) -> R {
    let mut f = Some(f);
    match CURRENT.try_with(|c| f.take().map(|f| f(c.borrow().as_ref()))) {
        Ok(Some(r)) => r,
        // The thread is exiting and its context is gone; `f` has not run.
        _ => f.take().expect("`f` runs once")(None),
    }
}

pub(crate) fn current() -> Option<Handle> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}
