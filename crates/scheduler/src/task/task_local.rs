//! Task-local storage (tokio's `task_local!` and `task::LocalKey`).
//!
//! A task-local value lives in a future ([`TaskLocalFuture`]) and is moved into a
//! thread-local slot for exactly the span of each poll of that future, then moved back
//! out. So the value follows the future wherever it is polled, code called from the
//! future sees it, and a future polled elsewhere (another task, another scope) does not.
//!
//! ```
//! netloop_scheduler::task_local! {
//!     static REQUEST_ID: u64;
//! }
//!
//! let rt = netloop_scheduler::runtime::Builder::new_current_thread().build()?;
//! rt.block_on(REQUEST_ID.scope(7, async {
//!     assert_eq!(REQUEST_ID.get(), 7);
//!     assert!(REQUEST_ID.sync_scope(8, || REQUEST_ID.get() == 8));
//!     assert_eq!(REQUEST_ID.get(), 7, "the inner scope gave the slot back");
//! }));
//! assert!(REQUEST_ID.try_get().is_err(), "outside every scope");
//! # Ok::<(), std::io::Error>(())
//! ```

use std::cell::RefCell;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Declares task-local keys: `static NAME: Type;`, each a [`LocalKey`] (tokio's
/// `task_local!`).
#[macro_export]
macro_rules! task_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty; $($rest:tt)*) => {
        $crate::__task_local_key!($(#[$attr])* $vis $name, $t);
        $crate::task_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty) => {
        $crate::__task_local_key!($(#[$attr])* $vis $name, $t);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __task_local_key {
    ($(#[$attr:meta])* $vis:vis $name:ident, $t:ty) => {
        $(#[$attr])*
        $vis static $name: $crate::task::LocalKey<$t> = {
            ::std::thread_local! {
                static SLOT: ::std::cell::RefCell<::std::option::Option<$t>> =
                    const { ::std::cell::RefCell::new(::std::option::Option::None) };
            }
            $crate::task::LocalKey { inner: SLOT }
        };
    };
}

/// A key to a task-local value; made by [`task_local!`](crate::task_local).
///
/// Context that code deep in a call chain needs, without passing it through every
/// function, such as the id of the request being served:
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// netloop_scheduler::task_local! {
///     static REQUEST_ID: u64;
/// }
///
/// fn log(message: &str) -> String {
///     format!("[request {}] {message}", REQUEST_ID.get())
/// }
///
/// let rt = Builder::new_current_thread().build()?;
/// let line = rt.block_on(REQUEST_ID.scope(42, async { log("handled") }));
/// assert_eq!(line, "[request 42] handled");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct LocalKey<T: 'static> {
    /// The thread's slot, holding the value while a scope of this key runs. Public
    /// only for the macro.
    #[doc(hidden)]
    pub inner: std::thread::LocalKey<RefCell<Option<T>>>,
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("LocalKey { .. }")
    }
}

/// Why a scope could not be entered.
enum EnterError {
    /// The slot is borrowed (a scope entered from inside `with`).
    Borrowed,
    /// The thread-local is being destroyed.
    Destroyed,
}

impl EnterError {
    #[track_caller]
    fn panic(self) -> ! {
        match self {
            EnterError::Borrowed => {
                panic!("cannot enter a task-local scope while the task-local storage is borrowed")
            }
            EnterError::Destroyed => {
                panic!("cannot enter a task-local scope during or after destruction of the underlying thread-local")
            }
        }
    }
}

impl<T: 'static> LocalKey<T> {
    /// Runs `future` with `value` set for this key during each of its polls.
    pub fn scope<F: Future>(&'static self, value: T, future: F) -> TaskLocalFuture<T, F> {
        TaskLocalFuture {
            key: self,
            value: Some(value),
            future: Some(future),
            _pinned: PhantomPinned,
        }
    }

    /// Runs `f` with `value` set for this key.
    #[track_caller]
    pub fn sync_scope<F: FnOnce() -> R, R>(&'static self, value: T, f: F) -> R {
        let mut value = Some(value);
        match self.enter(&mut value, f) {
            Ok(out) => out,
            Err(e) => e.panic(),
        }
    }

    /// Swaps `held` into the thread's slot, runs `f`, and swaps it back, even if `f`
    /// panics. The slot's previous content (an outer scope's value) is in `held`
    /// meanwhile, so scopes nest.
    fn enter<R>(&'static self, held: &mut Option<T>, f: impl FnOnce() -> R) -> Result<R, EnterError> {
        struct SwapBack<'a, T: 'static> {
            key: &'static LocalKey<T>,
            held: &'a mut Option<T>,
        }
        impl<T: 'static> Drop for SwapBack<'_, T> {
            fn drop(&mut self) {
                // The slot is not borrowed here: `f` has returned or unwound, and
                // every borrow it took ended with it.
                self.key
                    .inner
                    .with(|slot| std::mem::swap(self.held, &mut *slot.borrow_mut()));
            }
        }
        self.inner
            .try_with(|slot| {
                let mut slot = slot.try_borrow_mut().map_err(|_| EnterError::Borrowed)?;
                std::mem::swap(held, &mut *slot);
                Ok(())
            })
            .map_err(|_| EnterError::Destroyed)??;
        let _swap_back = SwapBack { key: self, held };
        Ok(f())
    }

    /// Calls `f` with the value of the innermost scope. Panics outside every scope of
    /// this key; see [`try_with`](Self::try_with).
    #[track_caller]
    pub fn with<F: FnOnce(&T) -> R, R>(&'static self, f: F) -> R {
        match self.try_with(f) {
            Ok(out) => out,
            Err(_) => panic!("cannot access a task-local storage value without setting it first"),
        }
    }

    /// Calls `f` with the value of the innermost scope, or fails outside every scope.
    pub fn try_with<F: FnOnce(&T) -> R, R>(&'static self, f: F) -> Result<R, AccessError> {
        match self.inner.try_with(|slot| slot.borrow().as_ref().map(f)) {
            Ok(Some(out)) => Ok(out),
            Ok(None) | Err(_) => Err(AccessError(())),
        }
    }
}

impl<T: Clone + 'static> LocalKey<T> {
    /// A clone of the innermost scope's value. Panics outside every scope.
    #[track_caller]
    pub fn get(&'static self) -> T {
        self.with(T::clone)
    }

    /// A clone of the innermost scope's value, or an error outside every scope.
    pub fn try_get(&'static self) -> Result<T, AccessError> {
        self.try_with(T::clone)
    }
}

pin_project_lite::pin_project! {
    /// A future run inside a task-local scope; see [`LocalKey::scope`].
    ///
    /// The value travels with the future: spawned as a task, it keeps its scope on
    /// whichever loop runs it.
    ///
    /// ```
    /// use netloop_scheduler::{runtime::Builder, task};
    ///
    /// netloop_scheduler::task_local! {
    ///     static USER: String;
    /// }
    ///
    /// let rt = Builder::new_current_thread().build()?;
    /// rt.block_on(async {
    ///     let scoped = USER.scope("ada".to_string(), async { USER.get() });
    ///     assert_eq!(task::spawn(scoped).await.unwrap(), "ada");
    /// });
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub struct TaskLocalFuture<T, F>
    where
        T: 'static,
    {
        key: &'static LocalKey<T>,
        // The value between polls; in the thread's slot during one.
        value: Option<T>,
        #[pin]
        future: Option<F>,
        #[pin]
        _pinned: PhantomPinned,
    }

    impl<T: 'static, F> PinnedDrop for TaskLocalFuture<T, F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            // The future's destructor may read the value too: drop it inside the scope.
            if std::mem::needs_drop::<F>() && this.future.is_some() {
                let mut future = this.future;
                let _ = this.key.enter(this.value, || future.set(None));
            }
        }
    }
}

impl<T: 'static, F> TaskLocalFuture<T, F> {
    /// Takes the value out (`None` once taken, or while the future is being polled).
    pub fn take_value(self: Pin<&mut Self>) -> Option<T> {
        self.project().value.take()
    }
}

impl<T: 'static, F: Future> Future for TaskLocalFuture<T, F> {
    type Output = F::Output;

    #[track_caller]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let mut future = this.future;
        let polled = this.key.enter(this.value, || {
            let out = future.as_mut().as_pin_mut().map(|f| f.poll(cx));
            if matches!(out, Some(Poll::Ready(_))) {
                future.set(None);
            }
            out
        });
        match polled {
            Ok(Some(out)) => out,
            Ok(None) => panic!("`TaskLocalFuture` polled after completion"),
            Err(e) => e.panic(),
        }
    }
}

impl<T: fmt::Debug + 'static, F> fmt::Debug for TaskLocalFuture<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("TaskLocalFuture");
        match &self.value {
            Some(value) => d.field("value", value),
            None => d.field("value", &format_args!("<missing>")),
        };
        d.finish()
    }
}

/// Returned by [`LocalKey::try_with`] outside every scope of the key.
///
/// ```
/// netloop_scheduler::task_local! {
///     static DEPTH: u32;
/// }
///
/// assert!(DEPTH.try_with(|d| *d).is_err()); // no scope: AccessError
/// assert_eq!(DEPTH.sync_scope(1, || DEPTH.try_with(|d| *d)), Ok(1));
/// ```
#[derive(Clone, Copy, Eq, PartialEq)]
pub struct AccessError(());

impl fmt::Debug for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessError").finish()
    }
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("task-local value not set")
    }
}

impl Error for AccessError {}
