//! The runtime a thread is in: set on every loop thread, and by `enter` / `block_on`.

use std::cell::RefCell;

use super::Handle;

thread_local! {
    static CURRENT: RefCell<Option<Handle>> = const { RefCell::new(None) };
}

/// Restores the previous runtime context when dropped.
pub(crate) struct SetGuard {
    prev: Option<Handle>,
}

pub(crate) fn set(handle: Handle) -> SetGuard {
    let prev = CURRENT.with(|c| c.replace(Some(handle)));
    SetGuard { prev }
}

impl Drop for SetGuard {
    fn drop(&mut self) {
        let prev = self.prev.take();
        let _ = CURRENT.try_with(|c| *c.borrow_mut() = prev);
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
