//! The leaves of a task trace (tokio's unstable `taskdump`): while a trace is being
//! taken on this thread ([`trace_with`]), every netloop future that would wait at a
//! leaf (a sleep, `yield_now`, a channel, a lock, a socket, a `JoinHandle`) calls the
//! tracer back from [`trace_leaf`] instead and returns `Pending`, so that the tracer
//! sees the stack of futures above the leaf. The task is woken afterwards (its waker
//! deferred to after the loop's next I/O poll), so it is polled again for real.
//!
//! [`Root`] marks where a trace's frames begin: the tracer keeps the frames between
//! the leaf and the innermost `Root` being polled. Without the `taskdump` feature no
//! trace is ever taken and [`trace_leaf`] is always ready; without
//! `--cfg tokio_unstable` none of this is built, and no leaf calls it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// What a leaf tells the tracer (tokio's `runtime::dump::TraceMeta`): the address of
/// the innermost [`Root`]'s `poll` (the frame a trace stops at), if any, and the
/// address of [`trace_leaf`] (the frame it starts above).
#[non_exhaustive]
#[derive(Debug)]
pub struct TraceMeta {
    /// `Root::poll`'s address, of the innermost root being polled on this thread.
    pub root_addr: Option<*const std::ffi::c_void>,
    /// [`trace_leaf`]'s address.
    pub trace_leaf_addr: *const std::ffi::c_void,
}

pin_project_lite::pin_project! {
    /// A future whose polls start a trace's frames (tokio's `runtime::dump::Root`):
    /// made by `Trace::root`. netloop's tasks are roots of their own.
    #[derive(Debug, Clone)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Root<T> {
        #[pin]
        future: T,
    }
}

impl<T> Root<T> {
    /// Marks `future` as a root.
    pub fn new(future: T) -> Root<T> {
        Root { future }
    }
}

impl<T: Future> Future for Root<T> {
    type Output = T::Output;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T::Output> {
        let _root = enter_root(Self::poll as *const std::ffi::c_void);
        self.project().future.poll(cx)
    }
}

#[cfg(feature = "taskdump")]
mod imp {
    use std::cell::Cell;
    use std::ffi::c_void;
    use std::ptr::NonNull;
    use std::task::{Context, Poll};

    use crate::trace::TraceMeta;

    /// The tracer, as a pointer to a closure that lives on the stack of `trace_with`.
    type Tracer = NonNull<dyn FnMut(&TraceMeta)>;

    thread_local! {
        /// `Root::poll`'s address while a root is being polled on this thread.
        static ROOT: Cell<Option<*const c_void>> = const { Cell::new(None) };
        /// The tracer while a trace is taken on this thread.
        static TRACER: Cell<Option<Tracer>> = const { Cell::new(None) };
    }

    /// Restores a thread-local cell when dropped (also on unwind).
    struct Restore<'a, T: Copy + 'static>(
        &'static std::thread::LocalKey<Cell<T>>,
        T,
        std::marker::PhantomData<&'a ()>,
    );

    impl<T: Copy + 'static> Drop for Restore<'_, T> {
        fn drop(&mut self) {
            let _ = self.0.try_with(|c| c.set(self.1));
        }
    }

    /// Puts the previous root back when dropped.
    pub struct RootGuard(Option<*const c_void>);

    impl Drop for RootGuard {
        fn drop(&mut self) {
            let _ = ROOT.try_with(|r| r.set(self.0));
        }
    }

    pub(super) fn enter_root(addr: *const c_void) -> RootGuard {
        RootGuard(ROOT.with(|r| r.replace(Some(addr))))
    }

    pub(super) fn trace_with<R>(f: impl FnOnce() -> R, mut tracer: impl FnMut(&TraceMeta)) -> R {
        let tracer: &mut dyn FnMut(&TraceMeta) = &mut tracer;
        // SAFETY: only the lifetime is erased. The pointer is in the thread-local from
        // here until `_restore` puts the previous value back, which happens before this
        // function returns or unwinds, while `tracer` is still alive on this stack; it
        // is only used on this thread, by `trace_leaf`, which takes it out of the cell
        // while it runs (so it is never borrowed twice).
        let tracer: Tracer = unsafe {
            std::mem::transmute::<NonNull<dyn FnMut(&TraceMeta) + '_>, NonNull<dyn FnMut(&TraceMeta) + 'static>>(
                NonNull::from(tracer),
            )
        };
        let prev = TRACER.with(|t| t.replace(Some(tracer)));
        let _restore = Restore(&TRACER, prev, std::marker::PhantomData);
        f()
    }

    pub(super) fn is_tracing() -> bool {
        TRACER.try_with(|t| t.get().is_some()).unwrap_or(false)
    }

    #[inline(never)]
    pub(super) fn trace_leaf(cx: &mut Context<'_>) -> Poll<()> {
        let Ok(Some(mut tracer)) = TRACER.try_with(|t| t.take()) else {
            return Poll::Ready(());
        };
        // Put back even if the tracer panics.
        let _restore = Restore(&TRACER, Some(tracer), std::marker::PhantomData);
        let meta = TraceMeta {
            root_addr: ROOT.try_with(Cell::get).ok().flatten(),
            trace_leaf_addr: trace_leaf as *const c_void,
        };
        // SAFETY: the tracer is alive (see `trace_with`) and taken out of the cell, so
        // this is the only reference to it for the call.
        unsafe { tracer.as_mut()(&meta) };
        // Polled again for real once the loop has looked at I/O (or at once, off a
        // loop): the leaf did none of its work.
        crate::defer(cx.waker());
        Poll::Pending
    }
}

#[cfg(not(feature = "taskdump"))]
mod imp {
    use std::ffi::c_void;
    use std::task::{Context, Poll};

    use crate::trace::TraceMeta;

    /// Nothing to put back.
    pub struct RootGuard;

    #[inline(always)]
    pub(super) fn enter_root(_: *const c_void) -> RootGuard {
        RootGuard
    }

    #[inline(always)]
    pub(super) fn trace_with<R>(f: impl FnOnce() -> R, _: impl FnMut(&TraceMeta)) -> R {
        f()
    }

    #[inline(always)]
    pub(super) fn is_tracing() -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn trace_leaf(_: &mut Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }
}

pub use imp::RootGuard;

/// Makes the function at `addr`, which the caller is (and must not be inlined), the
/// root of the traces taken until the guard is dropped: their frames end below it
/// (see [`Root`]).
#[inline]
pub fn enter_root(addr: *const std::ffi::c_void) -> RootGuard {
    imp::enter_root(addr)
}

/// Runs `f` with `tracer` called at every leaf that `f`'s polls reach (tokio's
/// `runtime::dump::trace_with`). Each such leaf returns `Pending` and wakes its task
/// later, so `f` should be the poll of a future that tolerates a spurious wake-up, as
/// every future must. Without the `taskdump` feature `f` simply runs.
pub fn trace_with<FN, FT, R>(f: FN, tracer: FT) -> R
where
    FN: FnOnce() -> R,
    FT: FnMut(&TraceMeta),
{
    imp::trace_with(f, tracer)
}

/// Whether a trace is being taken on this thread.
pub fn is_tracing() -> bool {
    imp::is_tracing()
}

/// A leaf of a task trace: ready at once, unless a trace is being taken on this
/// thread; then it reports to the tracer, defers the task's wake and is `Pending`.
/// Every waiting point of netloop's futures calls it first, as tokio's do.
#[inline]
pub fn trace_leaf(cx: &mut Context<'_>) -> Poll<()> {
    imp::trace_leaf(cx)
}
