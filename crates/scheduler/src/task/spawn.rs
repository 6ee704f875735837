//! Spawning futures onto loops.

use std::future::Future;
use std::sync::Arc;

use netloop_reactor::{EventLoopHandle, SpawnLocalError};

use super::harness::{Origin, WithId, identify};
use super::id::Id;
use super::join::JoinHandle;
use super::local::{spawn_in_current_set, spawn_in_runtime_set};
use crate::context;
use crate::placement::{with_pinned_loop, with_spawn_loop};

/// Spawns `future` on a specific event loop, for life.
///
/// For placing tasks by hand, such as all the tasks of one shard on one loop:
///
/// ```
/// use netloop_scheduler::runtime::{Builder, Handle};
/// use netloop_scheduler::task;
///
/// let rt = Builder::new_multi_thread().worker_threads(2).build()?;
/// let on_second = rt.block_on(async {
///     let second = Handle::current().event_loops().get(1).unwrap().clone();
///     task::spawn_on(&second, async { netloop_scheduler::runtime::worker_index() }).await
/// });
/// assert_eq!(on_second.unwrap(), Some(1));
/// # Ok::<(), std::io::Error>(())
/// ```
#[cfg_attr(tokio_unstable, track_caller)]
pub fn spawn_on<F>(event_loop: &EventLoopHandle, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let id = Id::next();
    let origin = Origin::caller();
    #[cfg(tokio_unstable)]
    let origin = origin.register(id, runtime_of(event_loop).as_deref(), true);
    spawn_with(event_loop, future, id, origin)
}

/// The runtime whose loop `event_loop` is, if it is the current runtime's.
#[cfg(tokio_unstable)]
pub(crate) fn runtime_of(event_loop: &EventLoopHandle) -> Option<Arc<crate::shared::Shared>> {
    context::current().ok().filter(|rt| rt.group.contains(event_loop))
}

#[cfg(tokio_unstable)]
impl Origin {
    /// A task `id` spawned onto `runtime` (none: a runtime it is not known to belong
    /// to): the runtime counts it and runs its spawn hook, and the task keeps the
    /// runtime if it has hooks for its polls or its end, and enters the runtime's list
    /// of traceable tasks if `traceable` (`Handle::dump`; not a `LocalRuntime`'s).
    pub(crate) fn register(mut self, id: Id, runtime: Option<&crate::shared::Shared>, traceable: bool) -> Origin {
        let Some(runtime) = runtime else {
            return self;
        };
        let tasks = &runtime.unstable.tasks;
        tasks.spawned.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(hook) = &tasks.hooks.spawn {
            // Not caught: a panic in the spawn hook reaches the spawner, as on tokio.
            hook(&crate::runtime::hooks::TaskMeta::new(id, self.spawned_at));
        }
        if tasks.follows_tasks() {
            self.runtime = Some(tasks.clone());
        }
        #[cfg(feature = "taskdump")]
        if traceable {
            self.traced = Some(runtime.unstable.tracer.enter(id));
        }
        let _ = traceable;
        self
    }
}

/// Spawns `future` as `task::spawn` does: on `event_loop`, but free to start on
/// another loop of its group while it has not been polled (see `docs/affinity.md`).
/// When every loop of the runtime blocks in place, it runs on the blocking pool
/// instead, so that it is not left waiting for the closures that may wait for it.
/// `runtime`: the runtime spawned onto, if the caller knows it (else the current one).
/// `movable`: false for a task the chooser placed (a new connection's), which stays.
///
/// tokio's `rt_threaded::blocking` spawns 1,000 tasks while every worker blocks in
/// place, and waits for them before the blocks end: placed on a loop, they would wait
/// for those blocks.
pub(crate) fn spawn_movable<F>(
    event_loop: &EventLoopHandle,
    future: F,
    runtime: Option<&Arc<crate::shared::Shared>>,
    movable: bool,
    origin: Origin,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if event_loop.group_blocked_in_place()
        && let Some(rt) = runtime.cloned().or_else(|| context::current().ok())
    {
        let pool = rt.blocking.clone();
        return pool.spawn(move || {
            let _context = context::set(rt);
            park_on(future)
        });
    }
    let id = Id::next();
    #[cfg(tokio_unstable)]
    let origin = match runtime {
        Some(rt) => origin.register(id, Some(rt), true),
        None => origin.register(id, runtime_of(event_loop).as_deref(), true),
    };
    #[cfg(tokio_unstable)]
    if let Some(other) = spawned_elsewhere(event_loop, runtime, movable) {
        return spawn_with(&other, future, id, origin);
    }
    if movable {
        spawn_movable_with(event_loop, future, id, origin)
    } else {
        spawn_with(event_loop, future, id, origin)
    }
}

/// With `Builder::disable_lifo_slot`: the loop a task spawned on its spawner's loop
/// starts on instead (the spawner's group's next other loop), handed over as that
/// loop's steal; `None` to spawn as usual.
#[cfg(tokio_unstable)]
fn spawned_elsewhere(
    event_loop: &EventLoopHandle,
    runtime: Option<&Arc<crate::shared::Shared>>,
    movable: bool,
) -> Option<EventLoopHandle> {
    if !movable || !event_loop.in_event_loop() {
        return None;
    }
    let rt = runtime.cloned().or_else(|| runtime_of(event_loop))?;
    if !rt.unstable.disable_lifo_slot || rt.group.len() < 2 {
        return None;
    }
    let other = (0..rt.group.len())
        .map(|_| rt.group.next())
        .find(|l| *l != event_loop)?
        .clone();
    other.count_handoff();
    Some(other)
}

/// Runs `future` to completion on this (blocking-pool) thread, parking it while the
/// future waits: the fallback of [`spawn_movable`] when no loop can take a task.
fn park_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// [`spawn_movable`] with the task id chosen by the caller, and its origin registered
/// with its runtime.
pub(crate) fn spawn_movable_with<F>(
    event_loop: &EventLoopHandle,
    future: F,
    id: Id,
    origin: Origin,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    joined(
        event_loop.spawn_movable_with_id(id.as_u64(), identify(future, id, origin)),
        id,
    )
}

/// `spawn_on` with the task id chosen by the caller (who needs it first), and its
/// origin registered with its runtime.
pub(crate) fn spawn_with<F>(event_loop: &EventLoopHandle, future: F, id: Id, origin: Origin) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    joined(event_loop.spawn_with_id(id.as_u64(), identify(future, id, origin)), id)
}

/// The handle of a spawn onto a loop: one that the loop rejected (it has shut down)
/// resolves as cancelled.
fn joined<T: 'static, E>(spawned: Result<netloop_reactor::Task<WithId<T>>, E>, id: Id) -> JoinHandle<T> {
    match spawned {
        Ok(task) => JoinHandle::new(task),
        Err(_) => JoinHandle::rejected(id),
    }
}

/// Spawns a `Send` future (tokio's `task::spawn`).
///
/// Called on an event loop, the task is queued on that loop, and an idle loop of the
/// runtime may take it before it starts; wherever it is first polled, it stays for
/// life. Called elsewhere in a runtime's context, it goes to the runtime's next loop. One exception spreads
/// connections as Netty does: the first spawn by a task after it accepted a connection
/// goes to the runtime's next loop (see `docs/affinity.md`). Panics outside a runtime.
/// After shutdown the returned handle resolves to a cancelled [`JoinError`](super::JoinError).
///
/// The task runs concurrently with the spawner; await the handle for its output, or
/// drop the handle to let it run on, detached.
///
/// ```
/// use netloop_scheduler::{runtime::Runtime, task};
///
/// let rt = Runtime::new()?;
/// rt.block_on(async {
///     let greeting = task::spawn(async { "hello from a task" });
///     // ... meanwhile, other work ...
///     assert_eq!(greeting.await.unwrap(), "hello from a task");
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let origin = Origin::caller();
    with_spawn_loop(|event_loop, movable| spawn_movable(event_loop, future, None, movable, origin))
}

/// Spawns a `!Send` future on the current event loop (tokio's `task::spawn_local`).
///
/// Every netloop loop runs `!Send` futures: no `LocalSet` is needed on a loop thread.
/// Inside [`LocalSet::run_until`](super::LocalSet::run_until) off a loop, the task
/// joins that set. Panics anywhere else.
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let log = Rc::new(RefCell::new(Vec::new())); // not `Send`: `spawn` would refuse it
///     let task = task::spawn_local({
///         let log = log.clone();
///         async move { log.borrow_mut().push("from the task") }
///     });
///     task.await.unwrap();
///     assert_eq!(*log.borrow(), ["from the task"]);
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    spawn_local_with_id(move |_| future, Origin::caller().kind("local"))
}

/// `spawn_local` for a future that needs its own task id.
#[track_caller]
pub(crate) fn spawn_local_with_id<M, F>(make: M, origin: Origin) -> JoinHandle<F::Output>
where
    M: FnOnce(Id) -> F,
    F: Future + 'static,
    F::Output: 'static,
{
    let id = Id::next();
    // Inside a `LocalSet` (being driven or entered), the task joins the set, as on
    // tokio: awaiting the set waits for it too. Else it joins this thread's loop.
    let (future, origin) = match spawn_in_current_set(make(id), id, origin) {
        Ok(handle) => return handle,
        Err(future) => future,
    };
    if let Some(current) = EventLoopHandle::current() {
        #[cfg(tokio_unstable)]
        let origin = origin.register(id, runtime_of(&current).as_deref(), true);
        return match current.spawn_local_with_id(id.as_u64(), identify(future, id, origin)) {
            Ok(task) => JoinHandle::new(task),
            Err(SpawnLocalError::Shutdown) => JoinHandle::rejected(id),
            Err(e) => panic!("{e}"),
        };
    }
    // In a `LocalRuntime`'s context outside its `block_on`: its set, on its thread.
    let local_runtime = context::with_current(|rt| rt.and_then(|rt| rt.local_owner.get().map(|owner| (rt.id, *owner))));
    let future = match local_runtime {
        Some((_, owner)) if owner != std::thread::current().id() => {
            panic!("Local tasks can only be spawned on a LocalRuntime from the thread the runtime was created on")
        }
        Some((runtime, _)) => match spawn_in_runtime_set(runtime, future, id, origin) {
            Ok(handle) => return handle,
            Err((future, _)) => future,
        },
        None => future,
    };
    drop(future);
    panic!(
        "`spawn_local` called from outside of a `task::LocalSet` or `runtime::LocalRuntime` \
         (nor on a netloop event loop); use `spawn`, or `spawn_pinned` to build a !Send future on a loop"
    )
}

/// Builds a `!Send` future on one of the runtime's loops and runs it there for life.
/// `make` is `Send`; the future it returns need not be. One hop: no channel, no
/// intermediate task.
///
/// From code that is not on a loop (or is on a different one), this is how to start a
/// `!Send` task:
///
/// ```
/// use std::rc::Rc;
/// use netloop_scheduler::{runtime::Runtime, task};
///
/// let rt = Runtime::new()?;
/// let task = rt.block_on(async {
///     // Only the closure crosses threads; the `Rc` is made on the loop.
///     task::spawn_pinned(|| async {
///         let shared = Rc::new(21);
///         task::yield_now().await;
///         *shared * 2
///     })
/// });
/// assert_eq!(rt.block_on(task).unwrap(), 42);
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn spawn_pinned<M, Fut>(make: M) -> JoinHandle<Fut::Output>
where
    M: FnOnce() -> Fut + Send + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    let origin = Origin::caller().kind("local");
    with_pinned_loop(|event_loop| spawn_pinned_at(event_loop, make, origin))
}

/// [`spawn_pinned`] on a chosen loop: `make` runs there and builds the `!Send`
/// future, which stays there for life.
///
/// ```
/// use std::cell::Cell;
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_multi_thread().worker_threads(2).build()?;
/// let first = rt.handle().event_loops().get(0).unwrap().clone();
/// let task = task::spawn_pinned_on(&first, || async {
///     let counter = Cell::new(0); // `!Sync`, held across an await
///     task::yield_now().await;
///     counter.set(counter.get() + 1);
///     (counter.get(), netloop_scheduler::runtime::worker_index())
/// });
/// assert_eq!(rt.block_on(task).unwrap(), (1, Some(0)));
/// # Ok::<(), std::io::Error>(())
/// ```
#[cfg_attr(tokio_unstable, track_caller)]
pub fn spawn_pinned_on<M, Fut>(event_loop: &EventLoopHandle, make: M) -> JoinHandle<Fut::Output>
where
    M: FnOnce() -> Fut + Send + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    spawn_pinned_at(event_loop, make, Origin::caller().kind("local"))
}

/// [`spawn_pinned_on`], from a spawn at `origin`.
#[inline]
fn spawn_pinned_at<M, Fut>(event_loop: &EventLoopHandle, make: M, origin: Origin) -> JoinHandle<Fut::Output>
where
    M: FnOnce() -> Fut + Send + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    let id = Id::next();
    #[cfg(tokio_unstable)]
    let origin = origin.register(id, runtime_of(event_loop).as_deref(), true);
    joined(
        event_loop.spawn_pinned_with_id(id.as_u64(), move || identify(make(), id, origin)),
        id,
    )
}

/// Yields to the loop once: the task goes to the back of its loop's run queue, so
/// everything already queued runs first (tokio's `task::yield_now`).
///
/// For a long computation in a task: yielding now and then lets the other tasks of
/// the loop (and its I/O) have their turn.
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let other = task::spawn(async { "the other task ran" });
///     let mut sum = 0u64;
///     for i in 0..10_000 {
///         sum += i;
///         if i % 1_000 == 0 {
///             task::yield_now().await;
///         }
///     }
///     assert!(other.is_finished());
///     assert_eq!(sum, 49_995_000);
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        // A leaf of a task trace (tokio_unstable).
        #[cfg(tokio_unstable)]
        std::task::ready!(netloop_reactor::trace::trace_leaf(cx));
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            netloop_reactor::defer(cx.waker());
            std::task::Poll::Pending
        }
    })
    .await
}
