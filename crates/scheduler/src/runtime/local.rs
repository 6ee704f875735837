//! `LocalRuntime`: a current-thread runtime that is `!Send` and spawns `!Send` tasks
//! from outside `block_on` (tokio's `runtime::LocalRuntime`); and what joins a runtime
//! to a `LocalSet` (`Builder::build_local`, `LocalSet::block_on`), kept here, above
//! both, so that the builder and the task layer name neither.

use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::time::Duration;

use super::builder::{Builder, invalid_input};
use super::handle::{EnterGuard, Handle};
use super::metrics::RuntimeMetrics;
use super::runtime::Runtime;
use crate::runtime::flavor::RuntimeFlavor;
use crate::task::join::JoinHandle;
use crate::task::local::LocalSet;

/// Options for [`Builder::build_local`](super::Builder::build_local); none yet, as
/// in tokio.
///
/// ```
/// use std::rc::Rc;
/// use netloop_scheduler::runtime::{Builder, LocalOptions};
///
/// let rt = Builder::new_current_thread().enable_all().build_local(LocalOptions::default())?;
/// let not_send = Rc::new("shared on this thread");
/// let task = rt.spawn_local(async move { *not_send });
/// assert_eq!(rt.block_on(task).unwrap(), "shared on this thread");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Default, Debug)]
#[non_exhaustive]
pub struct LocalOptions {
    _not_send: PhantomData<*mut u8>,
}

/// A runtime whose one loop runs on the thread that owns it, and which spawns `!Send`
/// tasks onto it from anywhere on that thread (tokio's `LocalRuntime`).
///
/// It is a current-thread runtime with a [`LocalSet`] driven by every `block_on`:
/// tasks given to [`spawn_local`](Self::spawn_local) run while this thread is in
/// `block_on`, beside the loop's own tasks. `LocalRuntime` is `!Send`, so they never
/// leave this thread.
///
/// ```
/// use std::rc::Rc;
///
/// let rt = netloop_scheduler::runtime::LocalRuntime::new()?;
/// let shared = Rc::new(5);
/// let task = rt.spawn_local({
///     let shared = shared.clone();
///     async move { *shared * 2 }
/// });
/// assert_eq!(rt.block_on(task).unwrap(), 10);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct LocalRuntime {
    // Field order is drop order: the set's tasks are dropped before the runtime.
    local: LocalSet,
    runtime: Runtime,
    _not_send: PhantomData<*mut u8>,
}

impl fmt::Debug for LocalRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalRuntime")
            .field("handle", self.runtime.handle())
            .finish()
    }
}

impl LocalRuntime {
    /// A local runtime with I/O and time enabled (tokio's `LocalRuntime::new`).
    pub fn new() -> std::io::Result<LocalRuntime> {
        Builder::new_current_thread()
            .enable_all()
            .build_local(LocalOptions::default())
    }

    pub(crate) fn from_runtime(runtime: Runtime) -> LocalRuntime {
        let local = LocalSet::new();
        // `spawn_local` in this runtime's context (after `enter`) finds the set here.
        let _ = runtime.handle().inner.local_owner.set(std::thread::current().id());
        crate::task::local::register_runtime_set(runtime.handle().id(), &local);
        #[cfg(tokio_unstable)]
        local.belong_to(runtime.handle().inner.clone());
        LocalRuntime {
            local,
            runtime,
            _not_send: PhantomData,
        }
    }

    /// The runtime's handle: spawn `Send` tasks onto it from other threads.
    pub fn handle(&self) -> &Handle {
        self.runtime.handle()
    }

    /// Spawns a `!Send` future; it runs while this thread is in
    /// [`block_on`](Self::block_on).
    #[track_caller]
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        self.local.spawn_local(future)
    }

    /// Runs a blocking closure on the runtime's blocking pool.
    ///
    /// # Panics
    ///
    /// If no pool thread exists and the OS refuses to start one (tokio's panic).
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.runtime.spawn_blocking(f)
    }

    /// Runs `future` to completion on this thread, driving the loop and the tasks of
    /// [`spawn_local`](Self::spawn_local) meanwhile.
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(self.local.run_until(future))
    }

    /// Enters the runtime's context; see [`Handle::enter`].
    pub fn enter(&self) -> EnterGuard<'_> {
        self.runtime.enter()
    }

    /// The runtime's metrics.
    pub fn metrics(&self) -> RuntimeMetrics {
        self.runtime.metrics()
    }

    /// Shuts down, waiting at most `timeout`; see [`Runtime::shutdown_timeout`].
    pub fn shutdown_timeout(self, timeout: Duration) {
        let LocalRuntime { local, runtime, .. } = self;
        drop(local);
        runtime.shutdown_timeout(timeout);
    }

    /// Shuts down without waiting; see [`Runtime::shutdown_background`].
    pub fn shutdown_background(self) {
        let LocalRuntime { local, runtime, .. } = self;
        drop(local);
        runtime.shutdown_background();
    }
}

impl Builder {
    /// Creates a [`LocalRuntime`]: a current-thread runtime that
    /// is `!Send` and spawns `!Send` tasks with `spawn_local` from outside `block_on`.
    /// On a multi-thread builder it is an `InvalidInput` error (tokio panics).
    pub fn build_local(&mut self, _options: LocalOptions) -> io::Result<LocalRuntime> {
        if self.flavor != RuntimeFlavor::CurrentThread {
            return Err(invalid_input(
                "multi_thread is not supported for LocalRuntime; use Builder::new_current_thread",
            ));
        }
        self.build().map(LocalRuntime::from_runtime)
    }
}

impl LocalSet {
    /// Runs `future` on `rt`, driving the set meanwhile.
    #[track_caller]
    pub fn block_on<F: Future>(&self, rt: &Runtime, future: F) -> F::Output {
        rt.block_on(self.run_until(future))
    }
}

// As for `Runtime`: a panic out of `block_on` leaves the runtime usable.
impl std::panic::UnwindSafe for LocalRuntime {}
impl std::panic::RefUnwindSafe for LocalRuntime {}
