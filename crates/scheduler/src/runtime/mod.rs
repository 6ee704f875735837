//! The runtime: tokio's `Runtime`, `Builder` and `Handle`, on a group of pinned loops.
//!
//! ```
//! let rt = netloop_scheduler::runtime::Runtime::new()?;
//! let answer = rt.block_on(async {
//!     let task = netloop_scheduler::task::spawn(async { 6 * 7 });
//!     task.await.unwrap()
//! });
//! assert_eq!(answer, 42);
//! # Ok::<(), std::io::Error>(())
//! ```

mod builder;
#[cfg(feature = "tokio-compat")]
pub(crate) mod compat;
pub(crate) mod context;
mod id;
mod local;
mod metrics;

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{AcqRel, Release};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

use netloop_reactor::{DriveError, EventLoopHandle};

pub use builder::Builder;
pub use id::Id;
pub use local::{LocalOptions, LocalRuntime};
pub use metrics::RuntimeMetrics;

use crate::blocking::BlockingPool;
use crate::group::EventLoopGroup;
use crate::placement::spawn_loop_of;
use crate::task::JoinHandle;
use crate::task::spawn::spawn_on;

/// The index of the loop the calling thread runs, within its runtime: `0..worker_threads`
/// on a multi-thread runtime, `Some(0)` on the thread that drives a current_thread or
/// local runtime. `None` off the loops: outside a runtime, on a blocking-pool thread, on
/// the thread inside a multi-thread runtime's `block_on` (which drives no loop), and on a
/// thread that waits in `block_on` while another thread drives a current_thread runtime.
///
/// A task stays on its loop for life (netloop does not steal work), so unlike on tokio
/// the answer does not change across `.await` points.
///
/// ```
/// assert_eq!(netloop_scheduler::runtime::worker_index(), None);
/// ```
pub fn worker_index() -> Option<usize> {
    let current = EventLoopHandle::current()?;
    let handle = Handle::try_current().ok()?;
    handle.inner.group.iter().position(|l| *l == current)
}

/// Panics as tokio's functions do outside a runtime. Not called from inside a closure:
/// the panic reports the location of the (track_caller) function the user called.
#[track_caller]
pub(crate) fn no_runtime() -> ! {
    panic!("{}", TryCurrentError(()))
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

/// Which kind of runtime this is (tokio's `RuntimeFlavor`).
///
/// Library code can ask, for instance to avoid
/// [`block_in_place`](crate::task::block_in_place), which panics on a current-thread
/// runtime:
///
/// ```
/// use netloop_scheduler::runtime::{Builder, Handle, RuntimeFlavor};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let flavor = Handle::current().runtime_flavor();
///     assert_eq!(flavor, RuntimeFlavor::CurrentThread);
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeFlavor {
    /// One loop, driven by the thread inside `block_on`.
    CurrentThread,
    /// A group of loops, one thread each.
    MultiThread,
}

pub(crate) struct Inner {
    pub(crate) group: EventLoopGroup,
    pub(crate) blocking: BlockingPool,
    flavor: RuntimeFlavor,
    /// current_thread: held by the `block_on` caller that drives the loop.
    driver: Mutex<()>,
    /// current_thread: `block_on` callers waiting for the driver, woken when it is let go.
    driver_waiters: Mutex<Vec<Waker>>,
    /// The thread that created it, for a `LocalRuntime`: the only one that may spawn
    /// `!Send` tasks into it.
    pub(crate) local_owner: std::sync::OnceLock<thread::ThreadId>,
    shutdown_timeout: Duration,
    id: Id,
    name: Option<String>,
    /// `Builder::enable_io` was called: sockets and signals may be created.
    io_enabled: bool,
    /// `Builder::enable_time` was called: timers may be created.
    time_enabled: bool,
    /// The tokio runtime whose context every thread of this one enters.
    #[cfg(feature = "tokio-compat")]
    pub(crate) compat: compat::Compat,
}

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
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("flavor", &self.inner.flavor)
            .field("loops", &self.inner.group.len())
            .finish()
    }
}

/// Returned by [`Handle::try_current`] outside a runtime.
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

/// tokio's words first (programs and tests match on them), then what it means here.
pub(crate) const NO_RUNTIME: &str = "there is no reactor running, must be called from the context of a Tokio 1.x runtime \
     (here a netloop runtime: inside Runtime::block_on, a spawned task, or after Runtime::enter)";

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
}

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
        context::current().ok_or(TryCurrentError(()))
    }

    /// Spawns a future. Called from one of this runtime's loops, it stays on that loop
    /// (unless its task just accepted a connection: see `task::spawn`); otherwise it
    /// goes to the group's next loop.
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_on(spawn_loop_of(self), future)
    }

    /// Runs a blocking closure on the blocking pool.
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
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
            return self.inner.blocking.spawn(f);
        };
        event_loop.clock().inhibit_auto_advance();
        let allow = AllowAutoAdvance(Some(event_loop));
        self.inner.blocking.spawn(move || {
            let _allow = allow;
            f()
        })
    }

    /// Runs `future` to completion on this thread, in this runtime's context.
    ///
    /// On a current-thread runtime the thread also drives the loop meanwhile, so the
    /// runtime's tasks, I/O and timers make progress (tokio's `Handle::block_on` drives
    /// nothing, and a timer awaited in it never fires unless another thread is in
    /// `Runtime::block_on`). The future itself is polled as tokio polls it, off the
    /// loop: it is not one of the loop's tasks, so `worker_index()` is `None` in it,
    /// `block_in_place` runs its closure in place, and `spawn_local` needs a `LocalSet`.
    /// [`Runtime::block_on`] polls its future on the loop.
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.enter_block_on(future, Root::OffLoop)
    }

    #[track_caller]
    fn enter_block_on<F: Future>(&self, future: F, root: Root) -> F::Output {
        if EventLoopHandle::current().is_some() || IN_BLOCK_ON.get() {
            panic!(
                "Cannot start a runtime from within a runtime. This happens because a function (like `block_on`) \
                 attempted to block the current thread while the thread is being used to drive asynchronous tasks. \
                 If you are in an async function, use `.await` on the future instead of blocking on it."
            );
        }
        let _blocking = InBlockOn::enter();
        let _context = context::set(self.clone());
        #[cfg(feature = "tokio-compat")]
        let _tokio = self.inner.compat.handle().enter();
        match self.inner.flavor {
            RuntimeFlavor::MultiThread => park_on(future),
            RuntimeFlavor::CurrentThread => match root {
                Root::OnLoop => self.drive_current_thread(future),
                Root::OffLoop => self.drive_current_thread(OffLoop { future: pin!(future) }),
            },
        }
    }

    fn drive_current_thread<F: Future>(&self, future: F) -> F::Output {
        let mut future = pin!(future);
        let turn = match self.take_driver() {
            Some(turn) => turn,
            None => {
                // Another thread drives the loop: poll the future here, parked between
                // wake-ups, and take over the driving if that thread lets go first.
                let parker = ThreadParker::new();
                let waker = parker.waker();
                let mut cx = Context::from_waker(&waker);
                loop {
                    {
                        let mut waiters = self.inner.driver_waiters.lock().unwrap_or_else(|e| e.into_inner());
                        if !waiters.iter().any(|w| w.will_wake(&waker)) {
                            waiters.push(waker.clone());
                        }
                    }
                    // Checked after joining the waiters: a release in between is not missed.
                    if let Some(turn) = self.take_driver() {
                        break turn;
                    }
                    if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                        return out;
                    }
                    parker.park();
                }
            }
        };
        self.drive_with(turn, future)
    }

    /// The turn to drive the current_thread loop, if no other thread has it.
    fn take_driver(&self) -> Option<DriverTurn<'_>> {
        let guard = match self.inner.driver.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(DriverTurn {
            guard: Some(guard),
            inner: &self.inner,
        })
    }

    fn drive_with<F: Future>(&self, _turn: DriverTurn<'_>, future: Pin<&mut F>) -> F::Output {
        let Some(event_loop) = self.inner.group.take_loop(0) else {
            // Shut down: no loop to drive. The future still runs (as on tokio); I/O and
            // timers in it fail with the runtime-shutdown error.
            return park_on(future);
        };
        // Give the loop back even if the future panics.
        struct PutBack<'a> {
            group: &'a EventLoopGroup,
            event_loop: Option<netloop_reactor::EventLoop>,
        }
        impl Drop for PutBack<'_> {
            fn drop(&mut self) {
                if let Some(el) = self.event_loop.take() {
                    self.group.put_loop(0, el);
                }
            }
        }
        let mut slot = PutBack {
            group: &self.inner.group,
            event_loop: Some(event_loop),
        };
        let result = slot.event_loop.as_mut().expect("present").block_on(future);
        match result {
            Ok(out) => out,
            Err(DriveError::WrongThread) => panic!(
                "a current_thread runtime is pinned to the thread that first called block_on (its !Send tasks live there)"
            ),
            Err(e) => panic!("{e}"),
        }
    }

    /// Enters this runtime's context: `spawn`, `sleep` and friends work on this thread
    /// until the guard is dropped.
    pub fn enter(&self) -> EnterGuard<'_> {
        let guard = context::set(self.clone());
        EnterGuard {
            #[cfg(feature = "tokio-compat")]
            _tokio: self.inner.compat.handle().enter(),
            _guard: guard,
            _handle: std::marker::PhantomData,
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

    /// The name given with [`Builder::name`], if any.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The runtime's metrics (tokio's stable set; netloop's per-loop metrics are on
    /// [`event_loops`](Self::event_loops)).
    pub fn metrics(&self) -> RuntimeMetrics {
        RuntimeMetrics::new(self.clone())
    }

    /// The event loops behind this runtime (Netty-level access: `execute`,
    /// `schedule*`, `in_event_loop`, metrics, `next()`).
    pub fn event_loops(&self) -> &EventLoopGroup {
        &self.inner.group
    }

    /// Calls `f` with the runtime this thread is in, borrowed (no reference-count
    /// traffic, unlike [`current`](Self::current)). Panics outside a runtime.
    #[track_caller]
    /// Whether the builder enabled I/O (see [`crate::drivers`]).
    pub(crate) fn io_enabled(&self) -> bool {
        self.inner.io_enabled
    }

    /// Whether the builder enabled timers (see [`crate::drivers`]).
    pub(crate) fn time_enabled(&self) -> bool {
        self.inner.time_enabled
    }

    pub(crate) fn with_current<R>(f: impl FnOnce(&Handle) -> R) -> R {
        match Handle::try_with_current(f) {
            Some(out) => out,
            None => no_runtime(),
        }
    }

    /// [`with_current`](Self::with_current), or `None` outside a runtime.
    pub(crate) fn try_with_current<R>(f: impl FnOnce(&Handle) -> R) -> Option<R> {
        context::with_current(|handle| handle.map(f))
    }

    fn shutdown(&self, wait: Option<Duration>) {
        // Tasks dropped on this thread (a current-thread runtime's, whose loop is driven
        // here) see the runtime as current in their destructors, as on tokio.
        let _context = (self.inner.flavor == RuntimeFlavor::CurrentThread)
            .then(|| context::try_set(self.clone()))
            .flatten();
        if let Err(e) = self
            .inner
            .group
            .shutdown_gracefully(Duration::ZERO, self.inner.shutdown_timeout)
        {
            tracing::error!(target: "netloop::runtime", error = %e, "runtime shutdown");
        }
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

thread_local! {
    /// True while this thread is inside a runtime's `block_on`: a nested one would
    /// block the outer future's thread, so it panics (tokio's rule), also where the
    /// outer one drives no loop (a multi-thread runtime's `block_on`).
    static IN_BLOCK_ON: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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

/// Marks the thread as inside `block_on` until dropped (also when the future panics).
struct InBlockOn;

impl InBlockOn {
    fn enter() -> InBlockOn {
        IN_BLOCK_ON.set(true);
        InBlockOn
    }
}

impl Drop for InBlockOn {
    fn drop(&mut self) {
        IN_BLOCK_ON.set(false);
    }
}

/// Runs `f` as if outside `block_on` (for `block_in_place`, where blocking is the
/// point): a `block_on` inside `f` is allowed. The mark is put back after, also on a
/// panic.
pub(crate) fn outside_block_on<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_BLOCK_ON.set(self.0);
        }
    }
    let _restore = Restore(IN_BLOCK_ON.replace(false));
    f()
}

/// Where a current-thread `block_on` polls its future.
#[derive(Clone, Copy)]
enum Root {
    /// As one of the loop's own tasks ([`Runtime::block_on`]).
    OnLoop,
    /// In the runtime's context but off the loop ([`Handle::block_on`]).
    OffLoop,
}

/// A future polled outside the loop its thread drives.
struct OffLoop<'a, F> {
    future: Pin<&'a mut F>,
}

impl<F: Future> Future for OffLoop<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        netloop_reactor::outside_loop(|| self.future.as_mut().poll(cx))
    }
}

/// `block_on` for a thread that drives no loop: poll, park until woken, repeat.
fn park_on<F: Future>(future: F) -> F::Output {
    let parker = ThreadParker::new();
    let waker = parker.waker();
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        parker.park();
    }
}

/// A waker that unparks the thread that made it, and the wait for it.
struct ThreadParker(Arc<Unpark>);

struct Unpark {
    thread: Thread,
    woken: AtomicBool,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Release);
        self.thread.unpark();
    }
}

impl ThreadParker {
    fn new() -> ThreadParker {
        ThreadParker(Arc::new(Unpark {
            thread: thread::current(),
            woken: AtomicBool::new(false),
        }))
    }

    fn waker(&self) -> Waker {
        Waker::from(self.0.clone())
    }

    /// Returns once the waker was woken since the last return (at once if it was).
    fn park(&self) {
        while !self.0.woken.swap(false, AcqRel) {
            thread::park();
        }
    }
}

/// A `block_on` caller's turn to drive a current_thread runtime's loop. Letting go of it
/// wakes the callers waiting for it, so one of them takes over the driving.
struct DriverTurn<'a> {
    guard: Option<std::sync::MutexGuard<'a, ()>>,
    inner: &'a Inner,
}

impl Drop for DriverTurn<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        let waiters = std::mem::take(&mut *self.inner.driver_waiters.lock().unwrap_or_else(|e| e.into_inner()));
        for waker in waiters {
            waker.wake();
        }
    }
}

/// What a built runtime is made of.
pub(crate) struct Parts {
    pub(crate) group: EventLoopGroup,
    pub(crate) blocking: BlockingPool,
    pub(crate) flavor: RuntimeFlavor,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) id: Id,
    pub(crate) name: Option<String>,
    pub(crate) io_enabled: bool,
    pub(crate) time_enabled: bool,
    #[cfg(feature = "tokio-compat")]
    pub(crate) compat: compat::Compat,
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
    /// A multi-thread runtime with one loop per core (or `NETLOOP_WORKER_THREADS`).
    pub fn new() -> io::Result<Runtime> {
        Builder::new_multi_thread().enable_all().build()
    }

    pub(crate) fn from_parts(parts: Parts) -> Runtime {
        let Parts {
            group,
            blocking,
            flavor,
            shutdown_timeout,
            id,
            name,
            io_enabled,
            time_enabled,
            #[cfg(feature = "tokio-compat")]
            compat,
        } = parts;
        Runtime {
            handle: Handle {
                inner: Arc::new(Inner {
                    group,
                    blocking,
                    flavor,
                    driver: Mutex::new(()),
                    driver_waiters: Mutex::new(Vec::new()),
                    local_owner: std::sync::OnceLock::new(),
                    shutdown_timeout,
                    id,
                    name,
                    io_enabled,
                    time_enabled,
                    #[cfg(feature = "tokio-compat")]
                    compat,
                }),
            },
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
        self.handle.enter_block_on(future, Root::OnLoop)
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
        if let Err(e) = self
            .handle
            .inner
            .group
            .shutdown_gracefully(Duration::ZERO, self.handle.inner.shutdown_timeout)
        {
            tracing::error!(target: "netloop::runtime", error = %e, "runtime shutdown");
        }
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
        if (IN_BLOCK_ON.get() || on_other_loop) && !thread::panicking() {
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
impl std::panic::UnwindSafe for Handle {}
impl std::panic::RefUnwindSafe for Handle {}
