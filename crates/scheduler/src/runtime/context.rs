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

pub(crate) fn current() -> Option<Handle> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}
