//! The runtime a thread is in: set on every loop thread, and by `enter` / `block_on`.
//!
//! Below everything that needs "the current runtime" (the handle, placement, spawning,
//! the driver checks): it holds the runtime's shared state, not a `Handle`, so it
//! names nothing above [`crate::shared`]. Invariant: the context is only changed
//! through [`SetGuard`]s, which nest, so it is always the one of the newest live guard.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::sync::Arc;

use crate::shared::Shared;

thread_local! {
    static CURRENT: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    /// How many guards are alive on this thread. Each guard records its depth, so a
    /// guard dropped out of order is detected rather than restoring the wrong runtime.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Restores the previous runtime context when dropped. Guards nest: they must be
/// dropped in the reverse order of their creation.
pub(crate) struct SetGuard {
    prev: Option<Arc<Shared>>,
    depth: usize,
}

pub(crate) fn set(runtime: Arc<Shared>) -> SetGuard {
    let prev = CURRENT.with(|c| c.replace(Some(runtime)));
    let depth = DEPTH.with(|d| {
        d.set(d.get() + 1);
        d.get()
    });
    SetGuard { prev, depth }
}

/// [`set`], unless the thread is exiting and its context is already gone (a runtime
/// dropped by a thread-local's destructor): then nothing.
pub(crate) fn try_set(runtime: Arc<Shared>) -> Option<SetGuard> {
    let prev = CURRENT.try_with(|c| c.replace(Some(runtime))).ok()?;
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

/// Calls `f` with the current runtime, borrowed (no reference-count traffic). The
/// borrow is shared, so `f` may read the context again (`Handle::current`); only
/// entering another runtime inside `f` would conflict, and spawning never does that.
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&Shared>) -> R) -> R {
    let mut f = Some(f);
    match CURRENT.try_with(|c| f.take().map(|f| f(c.borrow().as_deref()))) {
        Ok(Some(r)) => r,
        // The thread is exiting and its context is gone; `f` has not run.
        _ => f.take().expect("`f` runs once")(None),
    }
}

/// [`with_current`], panicking outside a runtime with tokio's message.
#[track_caller]
pub(crate) fn with_runtime<R>(f: impl FnOnce(&Shared) -> R) -> R {
    match with_current(|runtime| runtime.map(f)) {
        Some(out) => out,
        // Not in the closure: the panic reports the caller's location.
        None => no_runtime(),
    }
}

/// The current runtime, cloned out of the context.
pub(crate) fn current() -> Result<Arc<Shared>, TryCurrentError> {
    CURRENT
        .try_with(|c| c.borrow().clone())
        .ok()
        .flatten()
        .ok_or(TryCurrentError(()))
}

/// Returned by [`Handle::try_current`](crate::runtime::Handle::try_current) outside a
/// runtime.
///
/// ```
/// use netloop_scheduler::runtime::{Builder, Handle};
///
/// let err = Handle::try_current().unwrap_err(); // a plain thread: no runtime here
/// assert!(err.is_missing_context());
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async { assert!(Handle::try_current().is_ok()) });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TryCurrentError(());

impl TryCurrentError {
    /// True: the thread is not in a runtime's context.
    pub fn is_missing_context(&self) -> bool {
        true
    }

    /// False: netloop's context never outlives its thread-local.
    pub fn is_thread_local_destroyed(&self) -> bool {
        false
    }
}

impl fmt::Display for TryCurrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(NO_RUNTIME)
    }
}

impl std::error::Error for TryCurrentError {}

/// Panics as tokio's functions do outside a runtime. Not called from inside a closure:
/// the panic reports the location of the (track_caller) function the user called.
#[track_caller]
pub(crate) fn no_runtime() -> ! {
    panic!("{}", TryCurrentError(()))
}

/// tokio's words first (programs and tests match on them), then what it means here.
pub(crate) const NO_RUNTIME: &str = "there is no reactor running, must be called from the context of a Tokio 1.x runtime \
     (here a netloop runtime: inside Runtime::block_on, a spawned task, or after Runtime::enter)";
