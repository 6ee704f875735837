//! `Runtime`: what owns a group of loops and a blocking pool, and the free functions
//! of tokio's `runtime` module (`worker_index`, `is_rt_shutdown_err`).
//!
//! Below the builder, which builds one (`Runtime::new` is the builder's, in
//! `builder.rs`), and above the handle and `block_on`, which it drives.

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use netloop_reactor::EventLoopHandle;

use super::block_on;
use super::handle::{EnterGuard, Handle};
use super::metrics::RuntimeMetrics;
use crate::shared::Shared;
use crate::task::join::JoinHandle;

/// The index of the loop the calling thread runs, within its runtime: `0..worker_threads`
/// on a multi-thread runtime, `Some(0)` on the thread that drives a current_thread or
/// local runtime. `None` off the loops: outside a runtime, on a blocking-pool thread, on
/// the thread inside a multi-thread runtime's `block_on` (which drives no loop), and on a
/// thread that waits in `block_on` while another thread drives a current_thread runtime.
///
/// A task stays for life on the loop that first polled it (only a task not polled yet
/// may start elsewhere), so unlike on tokio the answer does not change across `.await`
/// points, also while its loop's thread blocks in place and a stand-in runs the task.
///
/// ```
/// assert_eq!(netloop_scheduler::runtime::worker_index(), None);
/// ```
pub fn worker_index() -> Option<usize> {
    let current = EventLoopHandle::current()?;
    let handle = Handle::try_current().ok()?;
    handle.inner.group.iter().position(|l| *l == current)
}

/// True if `err` came from an I/O resource whose runtime has shut down (its loop will
/// never wake it again), as tokio's function of that name; false for every other
/// error, including ones whose message merely looks alike.
///
/// A socket created on a runtime that has since been dropped returns such an error from
/// `accept`, `read` and the readiness waits.
///
/// ```
/// use netloop_scheduler::runtime::is_rt_shutdown_err;
/// assert!(!is_rt_shutdown_err(&std::io::Error::other("some other error")));
/// ```
pub fn is_rt_shutdown_err(err: &io::Error) -> bool {
    netloop_reactor::is_loop_shut_down(err)
}

/// The netloop runtime (tokio's `Runtime`): a group of event loops plus a blocking
/// pool. Dropping it shuts it down: every loop stops, every task is dropped on its
/// own loop's thread.
///
/// Most programs build one in `main` (or let `#[netloop::main]` do it) and run their
/// top-level future with [`block_on`](Self::block_on):
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::runtime::Runtime;
///
/// let rt = Runtime::new()?; // one loop per core
/// let answer = rt.block_on(async {
///     let task = netloop_scheduler::task::spawn(async { 6 * 7 });
///     task.await.unwrap()
/// });
/// assert_eq!(answer, 42);
///
/// // Dropping shuts down too; this bounds the wait for blocking tasks.
/// rt.shutdown_timeout(Duration::from_secs(1));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Runtime {
    handle: Handle,
    shut_down: bool,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime").field("handle", &self.handle).finish()
    }
}

impl Runtime {
    pub(crate) fn from_shared(inner: Shared) -> Runtime {
        Runtime {
            handle: Handle { inner: Arc::new(inner) },
            shut_down: false,
        }
    }

    /// Runs `future` to completion on this thread, in this runtime's context.
    ///
    /// On a current-thread runtime this thread drives the loop meanwhile, and the future
    /// runs on it as the loop's worker (`worker_index()` is `Some(0)`, `spawn_local`
    /// works); a multi-thread runtime's loops run on their own threads, and this thread
    /// only waits for the future.
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.handle.enter_block_on(future, block_on::Root::OnLoop)
    }

    /// Spawns a future onto the runtime; see [`Handle::spawn`].
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }

    /// Runs a blocking closure on the blocking pool.
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
        self.handle.spawn_blocking(f)
    }

    /// A handle to this runtime.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Enters the runtime's context; see [`Handle::enter`].
    pub fn enter(&self) -> EnterGuard<'_> {
        self.handle.enter()
    }

    /// The runtime's metrics; see [`Handle::metrics`].
    pub fn metrics(&self) -> RuntimeMetrics {
        self.handle.metrics()
    }

    /// Shuts down, waiting at most `timeout` for loops and blocking tasks to finish.
    pub fn shutdown_timeout(mut self, timeout: Duration) {
        self.shut_down = true;
        self.handle.shutdown(Some(timeout));
    }

    /// Shuts down without waiting.
    pub fn shutdown_background(mut self) {
        self.shut_down = true;
        self.handle.begin_shutdown();
        self.handle.inner.blocking.shutdown(Some(Duration::ZERO));
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.shut_down {
            return;
        }
        // Dropping waits for the loops to stop: not where the thread runs async code
        // (inside `block_on`, or on another runtime's loop), as on tokio. Its own loop
        // is the exception: there the drop does not wait (see `shutdown`).
        let on_other_loop = EventLoopHandle::current().is_some_and(|l| !self.handle.inner.group.contains(&l));
        if (block_on::in_block_on() || on_other_loop) && !thread::panicking() {
            panic!(
                "Cannot drop a runtime in a context where blocking is not allowed. \
                 This happens when a runtime is dropped from within an asynchronous context."
            );
        }
        self.handle.shutdown(None);
    }
}

// A panic that unwinds out of `block_on` (or through a caller holding a reference)
// leaves the runtime usable: the loop is given back by a drop guard, a task's panic
// is caught at the task, and every shared structure is behind a lock or an atomic that
// a panic cannot leave half-written. So the runtime is unwind-safe, as tokio's is.
impl std::panic::UnwindSafe for Runtime {}
impl std::panic::RefUnwindSafe for Runtime {}
