//! `Handle`: what spawns onto a runtime and enters it, and the guard of its context.
//!
//! Above the context, placement and spawning, which it uses; `block_on` and the metrics
//! add their methods to `Handle` from their own modules, above this one.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use netloop_reactor::EventLoopHandle;

use super::id::Id;
use crate::context::{self, TryCurrentError};
use crate::group::EventLoopGroup;
use crate::placement::spawn_loop_of;
use crate::runtime::flavor::RuntimeFlavor;
use crate::shared::Shared;
use crate::task::join::JoinHandle;

/// A handle to a runtime: spawn onto it, enter it, block on it (tokio's `Handle`).
///
/// Cheap to clone and `Send`: give one to code that runs outside the runtime, such as
/// a plain thread, so that it can hand work to the runtime and wait for the result.
/// Inside the runtime, [`Handle::current`] gets one.
///
/// ```
/// use netloop_scheduler::runtime::Runtime;
///
/// let rt = Runtime::new()?;
/// let handle = rt.handle().clone();
/// let thread = std::thread::spawn(move || {
///     let task = handle.spawn(async { "computed on a loop" });
///     handle.block_on(task).unwrap()
/// });
/// assert_eq!(thread.join().unwrap(), "computed on a loop");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Handle {
    pub(crate) inner: Arc<Shared>,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("flavor", &self.inner.flavor)
            .field("loops", &self.inner.group.len())
            .finish()
    }
}

/// Keeps a runtime's context entered on this thread until dropped.
///
/// What needs a runtime (spawning, creating sockets or timers) then works on this
/// thread without `block_on`, as when a synchronous `main` sets things up:
///
/// ```
/// use netloop_scheduler::{runtime::Runtime, task};
///
/// let rt = Runtime::new()?;
/// let task = {
///     let _guard = rt.enter();
///     task::spawn(async { 1 + 1 }) // would panic outside the context
/// };
/// assert_eq!(rt.block_on(task).unwrap(), 2);
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "the context is left when the guard is dropped"]
pub struct EnterGuard<'a> {
    // Declared first, so dropped first: tokio's context was entered last.
    #[cfg(feature = "tokio-compat")]
    _tokio: tokio::runtime::EnterGuard<'a>,
    _guard: context::SetGuard,
    _handle: std::marker::PhantomData<&'a Handle>,
    /// The guard restores this thread's context: it must be dropped on this thread.
    _not_send: NotSend,
}

/// `!Send` but `Sync`, as tokio's `EnterGuard` is.
struct NotSend(std::marker::PhantomData<*const ()>);

// SAFETY: it holds nothing; the raw pointer is there only to opt out of `Send`.
unsafe impl Sync for NotSend {}

impl fmt::Debug for EnterGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnterGuard")
    }
}

impl Handle {
    /// The runtime this thread is in. Panics outside one; see
    /// [`try_current`](Self::try_current).
    #[track_caller]
    pub fn current() -> Handle {
        match Self::try_current() {
            Ok(handle) => handle,
            // Not in a closure: the panic reports the caller's location.
            Err(e) => panic!("{e}"),
        }
    }

    /// The runtime this thread is in, if any.
    pub fn try_current() -> Result<Handle, TryCurrentError> {
        context::current().map(|inner| Handle { inner })
    }

    /// Spawns a future. Called from one of this runtime's loops, it is queued on that
    /// loop (unless its task just accepted a connection: see `task::spawn`), and an idle
    /// loop may start it instead; otherwise it goes to the group's next loop.
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.spawn_at(future, crate::task::harness::Origin::caller())
    }

    /// [`spawn`](Self::spawn) from a spawn at `origin`.
    pub(crate) fn spawn_at<F>(&self, future: F, origin: crate::task::harness::Origin) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (event_loop, movable) = spawn_loop_of(&self.inner.group);
        crate::task::spawn::spawn_movable(event_loop, future, Some(&self.inner), movable, origin)
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
        self.spawn_blocking_at(f, crate::task::harness::Origin::caller())
    }

    /// [`spawn_blocking`](Self::spawn_blocking) from a spawn at `origin`.
    pub(crate) fn spawn_blocking_at<F, R>(&self, f: F, origin: crate::task::harness::Origin) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        // With time paused, the loop must not jump to its next timer while the closure
        // runs: the closure may be what that timer's task is waiting for.
        let paused_loop = match self.inner.flavor {
            RuntimeFlavor::CurrentThread => self.inner.group.get(0).filter(|l| l.clock().is_paused()).cloned(),
            RuntimeFlavor::MultiThread => None,
        };
        let Some(event_loop) = paused_loop else {
            return self.inner.blocking.spawn_at(f, origin);
        };
        event_loop.clock().inhibit_auto_advance();
        let allow = AllowAutoAdvance(Some(event_loop));
        let origin = origin.blocking::<F>();
        self.inner.blocking.spawn_with_id(
            move |_| {
                let _allow = allow;
                f()
            },
            origin,
        )
    }

    /// Enters this runtime's context: `spawn`, `sleep` and friends work on this thread
    /// until the guard is dropped.
    pub fn enter(&self) -> EnterGuard<'_> {
        let guard = context::set(self.inner.clone());
        EnterGuard {
            #[cfg(feature = "tokio-compat")]
            _tokio: self.inner.compat.handle().enter(),
            _guard: guard,
            _handle: std::marker::PhantomData,
            _not_send: NotSend(std::marker::PhantomData),
        }
    }

    /// Which kind of runtime this is.
    pub fn runtime_flavor(&self) -> RuntimeFlavor {
        self.inner.flavor
    }

    /// The runtime's id, the same for every handle of it.
    pub fn id(&self) -> Id {
        self.inner.id
    }

    /// The name given with [`Builder::name`](super::Builder::name), if any.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The event loops behind this runtime (Netty-level access: `execute`,
    /// `schedule*`, `in_event_loop`, metrics, `next()`).
    pub fn event_loops(&self) -> &EventLoopGroup {
        &self.inner.group
    }

    /// Stops every loop as tokio stops its workers, without waiting for them: the
    /// polls in progress finish, and no task is polled again (each is dropped on its
    /// loop). Netty's graceful shutdown stays with `event_loops().shutdown_gracefully`.
    pub(super) fn begin_shutdown(&self) {
        self.inner.group.shutdown_now();
    }

    /// Shuts the runtime down, then waits up to `wait` (by default the shutdown timeout
    /// and a second) for its loops and its blocking pool, unless this thread is one of
    /// its loops.
    pub(super) fn shutdown(&self, wait: Option<Duration>) {
        // Tasks dropped on this thread (a current-thread runtime's, whose loop is driven
        // here) see the runtime as current in their destructors, as on tokio.
        let _context = (self.inner.flavor == RuntimeFlavor::CurrentThread)
            .then(|| context::try_set(self.inner.clone()))
            .flatten();
        self.begin_shutdown();
        let on_our_loop = EventLoopHandle::current().is_some_and(|l| self.inner.group.contains(&l));
        if on_our_loop {
            // Waiting here would wait for ourselves.
            return;
        }
        let wait = wait.unwrap_or(self.inner.shutdown_timeout.saturating_add(Duration::from_secs(1)));
        if !self.inner.group.await_termination(wait) {
            tracing::warn!(target: "netloop::runtime", "runtime shutdown timed out; some loops are still running");
        }
        self.inner.blocking.shutdown(Some(wait));
    }
}

/// Ends a blocking task's hold on auto-advance when dropped (also if it panics, or is
/// never run), and wakes the loop to look again.
///
/// On a blocking-pool thread the release waits until the task has published its output
/// and woken its handle's task: released before, the loop could find nothing to run
/// and jump past the timer of a task about to get the output.
struct AllowAutoAdvance(Option<EventLoopHandle>);

impl Drop for AllowAutoAdvance {
    fn drop(&mut self) {
        if let Some(event_loop) = self.0.take() {
            crate::blocking::after_this_task(move || {
                event_loop.clock().allow_auto_advance();
                // Only a wake-up: a loop that has shut down needs none.
                let _ = event_loop.execute(|| {});
            });
        }
    }
}

// A handle is a reference-counted pointer to state that a panic cannot leave
// half-written (see `Runtime`'s unwind-safety): it may cross `catch_unwind`.
impl std::panic::UnwindSafe for Handle {}
impl std::panic::RefUnwindSafe for Handle {}
