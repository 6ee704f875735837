//! `LocalSet`: tokio's set of `!Send` tasks, for code written against tokio.
//!
//! On a netloop event loop every task is already pinned to its thread and `!Send`
//! futures are welcome, so `task::spawn_local` there needs no set. A `LocalSet` is still
//! a real executor of its own: tasks given to [`LocalSet::spawn_local`] run whenever the
//! set is driven (`run_until`, `block_on`, or awaiting the set), on the thread that
//! drives it — which is what a multi-thread runtime's `block_on` thread needs.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use netloop_reactor::task::{LocalBlocks, Runnable, Schedule, TaskList, spawn_unchecked};

use super::harness::{Origin, identify};
use super::id::Id;
use super::join::JoinHandle;
use crate::sync::lock;

/// Tasks polled per turn of the set before it yields to its caller.
const MAX_TASKS_PER_TURN: usize = 128;

/// A turn of one of a set's tasks.
type SetRunnable = Runnable<SetHandle>;

/// The part of a set that wakes reach from any thread; every task of the set holds
/// one (it is the set's [`Schedule`] value).
#[derive(Clone)]
struct SetHandle(Arc<Mutex<Remote>>);

/// What other threads reach of a set, under one lock.
struct Remote {
    /// Wakes from other threads, for the set's thread to run; `None` once the set is
    /// dropped (a wake then only releases its reference).
    queue: Option<VecDeque<SetRunnable>>,
    /// Whoever drives the set: woken when a task of the set is.
    driver: Option<Waker>,
    /// A task of the set panicked (for `LocalSet::unhandled_panic`).
    #[cfg(tokio_unstable)]
    panicked: bool,
}

impl SetHandle {
    fn wake_driver(&self) {
        // Taken out first: the lock is not held while the waker runs (it may wake a task
        // of this set, whose wake comes back here).
        let driver = lock(&self.0).driver.take();
        if let Some(waker) = driver {
            waker.wake();
        }
    }
}

/// The set's own half: on its thread only.
struct SetLocal {
    handle: SetHandle,
    /// Tasks to poll, in wake order.
    queue: RefCell<VecDeque<SetRunnable>>,
    /// Tasks that wait; the set's drop closes them.
    tasks: TaskList,
    blocks: LocalBlocks,
    /// Tasks alive in the set (polled or not): awaiting the set waits for none.
    live: Rc<Cell<usize>>,
    /// The set is being polled: whatever is queued now is run before the poll ends.
    driving: Cell<bool>,
    /// The set is being dropped: its drop closes whatever is queued, so a wake needs
    /// no driver.
    dropped: Cell<bool>,
    /// The set's drop is over: nothing will run or close a task queued from now on (a
    /// spawn through an enter guard that outlived the set), so such a spawn closes its
    /// task at once, as tokio's closed set does.
    closed: Cell<bool>,
    /// tokio_unstable: the runtime whose tasks these are (a `LocalRuntime`'s set),
    /// whose hooks and counts they take part in; none for a plain `LocalSet`.
    #[cfg(tokio_unstable)]
    runtime: RefCell<Option<Arc<crate::shared::Shared>>>,
    /// tokio_unstable: `UnhandledPanic::ShutdownRuntime`, as the message to panic with.
    #[cfg(tokio_unstable)]
    shutdown_on_panic: Cell<Option<&'static str>>,
}

// SAFETY: a set's local half lives in an `Rc` on the thread that made the set (a
// `LocalSet` is `!Send`), and `with_current` gives it only there, as the set entered
// on this thread; `is_local` compares the set's identity. Only the set's own turns
// (`tick`, on that thread) run its runnables; local runnables are queued and dropped
// there, and the set's drop closes every task there. Remote runnables cross through
// the `Remote` queue's lock, and after the drop are only released.
unsafe impl Schedule for SetHandle {
    type Local = SetLocal;

    fn with_current<R>(f: impl FnOnce(Option<&SetLocal>) -> R) -> R {
        // Cloned out of the cell: `f` may enter or leave a set.
        let current = CURRENT.try_with(|c| c.borrow().clone()).ok().flatten();
        f(current.as_deref())
    }

    fn is_local(&self, local: &SetLocal) -> bool {
        Arc::ptr_eq(&self.0, &local.handle.0)
    }

    fn schedule_local(local: &SetLocal, runnable: SetRunnable) {
        // Queued also while the set is dropped: its drop closes what is queued, outside
        // the wake. Closing it here would run the task's destructor inside `wake()`,
        // whose caller may hold a lock that destructor takes.
        local.queue.borrow_mut().push_back(runnable);
        if !local.driving.get() && !local.dropped.get() {
            local.handle.wake_driver();
        }
    }

    fn schedule_remote(&self, runnable: SetRunnable) {
        let mut remote = lock(&self.0);
        let Some(queue) = remote.queue.as_mut() else {
            // The set is gone: a remote runnable only holds a reference.
            drop(remote);
            drop(runnable);
            return;
        };
        queue.push_back(runnable);
        let driver = remote.driver.take();
        drop(remote);
        if let Some(waker) = driver {
            waker.wake();
        }
    }

    fn local_blocks(local: &SetLocal) -> Option<&LocalBlocks> {
        Some(&local.blocks)
    }

    fn task_list(local: &SetLocal) -> &TaskList {
        &local.tasks
    }

    #[cfg(tokio_unstable)]
    fn task_panicked(&self, _payload: &(dyn std::any::Any + Send)) {
        lock(&self.0).panicked = true;
    }
}

pin_project_lite::pin_project! {
    /// A task of the set, counted among its live tasks until its future is dropped.
    struct Member<F> {
        #[pin]
        future: F,
        live: Rc<Cell<usize>>,
    }

    impl<F> PinnedDrop for Member<F> {
        fn drop(this: Pin<&mut Self>) {
            let live = this.project().live;
            live.set(live.get() - 1);
        }
    }
}

impl<F: Future> Future for Member<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().future.poll(cx)
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<SetLocal>>> = const { RefCell::new(None) };
}

/// The context of a [`LocalSet`], entered by [`LocalSet::enter`]; dropping it restores
/// the set entered before, if any.
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// let local = task::LocalSet::new();
/// let handle = {
///     let _guard = local.enter();
///     task::spawn_local(async { "queued in the set" }) // not run yet
/// };
/// assert_eq!(local.block_on(&rt, handle).unwrap(), "queued in the set");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct LocalEnterGuard(Option<Rc<SetLocal>>);

impl Drop for LocalEnterGuard {
    fn drop(&mut self) {
        let prev = self.0.take();
        // The set this guard displaces is dropped after the cell is released: it may be
        // the last reference to a set, whose drop runs its tasks' destructors.
        let displaced = CURRENT.try_with(|c| c.replace(prev));
        drop(displaced);
    }
}

impl fmt::Debug for LocalEnterGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LocalEnterGuard")
    }
}

/// A set of `!Send` tasks that run on the thread that drives the set.
///
/// On netloop every loop runs `!Send` tasks ([`spawn_local`](super::spawn_local) works
/// on any loop thread), so a `LocalSet` is needed less than on tokio; it is here for
/// code written for tokio, and for running `!Send` tasks together off the loops.
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// let local = task::LocalSet::new();
/// let counter = Rc::new(Cell::new(0)); // `Rc`: not `Send`
/// let total = local.block_on(&rt, async {
///     let tasks: Vec<_> = (0..3)
///         .map(|_| {
///             let counter = counter.clone();
///             task::spawn_local(async move { counter.set(counter.get() + 1) })
///         })
///         .collect();
///     for task in tasks {
///         task.await.unwrap();
///     }
///     counter.get()
/// });
/// assert_eq!(total, 3);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct LocalSet {
    local: Rc<SetLocal>,
    /// tokio's `LocalSet::id`: from the counter runtimes' ids come from.
    id: crate::runtime::id::Id,
}

impl fmt::Debug for LocalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSet")
            .field("live_tasks", &self.local.live.get())
            .finish()
    }
}

impl Default for LocalSet {
    fn default() -> Self {
        Self::new()
    }
}

/// Spawns into the set whose local half is `local`, on its thread.
fn spawn_into<F>(local: &SetLocal, future: F, id: Id, origin: Origin) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    // A `LocalRuntime`'s tasks are its runtime's (hooks, counts), as on tokio; a plain
    // set's are no runtime's. Neither is traced by `Handle::dump`: only the set's own
    // thread may poll them.
    #[cfg(tokio_unstable)]
    let origin = {
        let runtime = local.runtime.borrow().clone();
        origin.register(id, runtime.as_deref(), false)
    };
    local.live.set(local.live.get() + 1);
    let member = Member {
        future: identify(future, id, origin),
        live: local.live.clone(),
    };
    // SAFETY: this is the set's thread (its local half exists only here), where the
    // runnable is queued: the future is polled by the set's turns and dropped by them
    // or by the set's drop, all on this thread. A `!Send` output makes the handle
    // `!Send`.
    let (runnable, task) = unsafe { spawn_unchecked(&local.handle, member, Some(local), id.as_u64()) };
    if local.closed.get() {
        // SAFETY: `local` is the set's local half, on its thread. Not inside a wake: the
        // spawner's own call.
        unsafe { runnable.cancel(local) };
    } else {
        SetHandle::schedule_local(local, runnable);
    }
    JoinHandle::new(task)
}

thread_local! {
    /// The sets of the `LocalRuntime`s created on this thread, by runtime id: where
    /// `spawn_local` puts a task when it runs inside such a runtime's context (after
    /// `enter`) but outside its `block_on`.
    static RUNTIME_SETS: RefCell<Vec<(crate::runtime::id::Id, Weak<SetLocal>)>> = const { RefCell::new(Vec::new()) };
}

/// Records `set` as the set of the local runtime `runtime` (on its thread).
pub(crate) fn register_runtime_set(runtime: crate::runtime::id::Id, set: &LocalSet) {
    RUNTIME_SETS.with(|sets| {
        let mut sets = sets.borrow_mut();
        sets.retain(|(_, s)| s.strong_count() > 0);
        sets.push((runtime, Rc::downgrade(&set.local)));
    });
}

/// Spawns into the set of the local runtime `runtime`, if it was created on this thread
/// and is alive; gives the future back otherwise.
pub(crate) fn spawn_in_runtime_set<F>(
    runtime: crate::runtime::id::Id,
    future: F,
    id: Id,
    origin: Origin,
) -> Result<JoinHandle<F::Output>, (F, Origin)>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let set = RUNTIME_SETS
        .try_with(|sets| {
            sets.borrow()
                .iter()
                .find(|(r, _)| *r == runtime)
                .and_then(|(_, s)| s.upgrade())
        })
        .ok()
        .flatten();
    match set {
        Some(set) => Ok(spawn_into(&set, future, id, origin)),
        None => Err((future, origin)),
    }
}

/// True while a `LocalSet` is being driven (or entered) on this thread.
pub(crate) fn in_local_set() -> bool {
    CURRENT.try_with(|c| c.borrow().is_some()).unwrap_or(false)
}

/// Spawns into the set being driven (or entered) on this thread; gives the future back
/// if there is none.
pub(crate) fn spawn_in_current_set<F>(future: F, id: Id, origin: Origin) -> Result<JoinHandle<F::Output>, (F, Origin)>
where
    F: Future + 'static,
    F::Output: 'static,
{
    match CURRENT.with(|c| c.borrow().clone()) {
        Some(set) => Ok(spawn_into(&set, future, id, origin)),
        None => Err((future, origin)),
    }
}

impl LocalSet {
    /// The set's id, unique among the sets and runtimes of the process (tokio's
    /// `LocalSet::id`): for telling sets apart in logs and metrics.
    ///
    /// ```
    /// let a = netloop_scheduler::task::LocalSet::new();
    /// let b = netloop_scheduler::task::LocalSet::new();
    /// assert_ne!(a.id(), b.id());
    /// ```
    pub fn id(&self) -> crate::runtime::id::Id {
        self.id
    }

    /// An empty set, owned by this thread.
    pub fn new() -> LocalSet {
        LocalSet {
            local: Rc::new(SetLocal {
                handle: SetHandle(Arc::new(Mutex::new(Remote {
                    queue: Some(VecDeque::new()),
                    driver: None,
                    #[cfg(tokio_unstable)]
                    panicked: false,
                }))),
                queue: RefCell::new(VecDeque::new()),
                tasks: TaskList::default(),
                blocks: LocalBlocks::default(),
                live: Rc::new(Cell::new(0)),
                driving: Cell::new(false),
                dropped: Cell::new(false),
                closed: Cell::new(false),
                #[cfg(tokio_unstable)]
                runtime: RefCell::new(None),
                #[cfg(tokio_unstable)]
                shutdown_on_panic: Cell::new(None),
            }),
            id: crate::runtime::id::Id::fresh(),
        }
    }

    /// Adds a `!Send` task to the set; it runs when the set is driven.
    #[cfg_attr(tokio_unstable, track_caller)]
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        spawn_into(&self.local, future, Id::next(), Origin::caller().kind("local"))
    }

    /// `spawn_local` for a future that needs its own task id.
    pub(crate) fn spawn_local_with_id<M, F>(&self, make: M, origin: Origin) -> JoinHandle<F::Output>
    where
        M: FnOnce(Id) -> F,
        F: Future + 'static,
        F::Output: 'static,
    {
        let id = Id::next();
        spawn_into(&self.local, make(id), id, origin)
    }

    /// Drives the set while `future` runs, and returns its output. Inside, off an
    /// event loop, `task::spawn_local` adds to this set.
    pub async fn run_until<F: Future>(&self, future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        std::future::poll_fn(|cx| {
            self.drive(|| {
                if let Poll::Ready(out) = future.as_mut().poll(cx) {
                    return Poll::Ready(out);
                }
                self.tick(cx);
                Poll::Pending
            })
        })
        .await
    }

    /// Enters the set's context on this thread until the guard drops: off a loop,
    /// `task::spawn_local` adds to this set meanwhile (tokio's `LocalSet::enter`).
    pub fn enter(&self) -> LocalEnterGuard {
        LocalEnterGuard(CURRENT.with(|c| c.replace(Some(self.local.clone()))))
    }

    /// Runs queued tasks; keeps `cx` registered for more.
    fn tick(&self, cx: &mut Context<'_>) {
        #[cfg(tokio_unstable)]
        self.shut_down_on_panic();
        let local = &*self.local;
        {
            let mut remote = lock(&local.handle.0);
            if !remote.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                remote.driver = Some(cx.waker().clone());
            }
            // Wakes from other threads join the back of the queue.
            if let Some(queue) = remote.queue.as_mut()
                && !queue.is_empty()
            {
                local.queue.borrow_mut().append(queue);
            }
        }
        for _ in 0..MAX_TASKS_PER_TURN {
            let next = local.queue.borrow_mut().pop_front();
            match next {
                // SAFETY: `local` is this set's local half, and this is its thread.
                Some(runnable) => unsafe { runnable.run(local) },
                None => return,
            }
            #[cfg(tokio_unstable)]
            self.shut_down_on_panic();
        }
        // More work left: come back after letting others run.
        cx.waker().wake_by_ref();
    }

    /// With `UnhandledPanic::ShutdownRuntime`: once a task of the set has panicked,
    /// every task of the set is dropped and the set's driver panics, now and at every
    /// later turn.
    #[cfg(tokio_unstable)]
    fn shut_down_on_panic(&self) {
        let local = &*self.local;
        let Some(message) = local.shutdown_on_panic.get() else {
            return;
        };
        if !lock(&local.handle.0).panicked {
            return;
        }
        // As the set's drop closes them: queued ones, then waiting ones, until none is
        // left (a closing task's destructor may wake another).
        close_all(local);
        panic!("{message}");
    }

    /// What the set does when one of its tasks panics (tokio's unstable
    /// `LocalSet::unhandled_panic`): with `UnhandledPanic::ShutdownRuntime`, every
    /// other task of the set is dropped and `run_until` (and `block_on`) panics, then
    /// and at every later call. The default, `Ignore`, hands the panic to the task's
    /// `JoinHandle`.
    ///
    /// # Panics
    ///
    /// If the set has started running (it has been driven, or holds tasks), as tokio's.
    #[cfg(tokio_unstable)]
    #[track_caller]
    pub fn unhandled_panic(&mut self, behavior: crate::runtime::unstable::UnhandledPanic) -> &mut Self {
        assert!(
            Rc::strong_count(&self.local) == 1 && self.local.live.get() == 0,
            "Unhandled Panic behavior modified after starting LocalSet"
        );
        let message = matches!(behavior, crate::runtime::unstable::UnhandledPanic::ShutdownRuntime)
            .then_some("a spawned task panicked and the LocalSet is configured to shutdown on unhandled panic");
        self.local.shutdown_on_panic.set(message);
        self
    }

    /// tokio_unstable: makes this set the one of `runtime`'s `LocalRuntime`: its tasks
    /// take part in the runtime's hooks and counts, and its unhandled-panic setting.
    #[cfg(tokio_unstable)]
    pub(crate) fn belong_to(&self, runtime: Arc<crate::shared::Shared>) {
        if runtime.unstable.panicked.is_some() {
            self.local
                .shutdown_on_panic
                .set(Some(crate::runtime::unstable::RUNTIME_PANIC_SHUTDOWN));
        }
        *self.local.runtime.borrow_mut() = Some(runtime);
    }

    /// Polls `f` as the set's own turn: the set entered, and wakes of its tasks on this
    /// thread queued without waking the driver (the turn runs them).
    fn drive<R>(&self, f: impl FnOnce() -> R) -> R {
        let _enter = self.enter();
        let was = self.local.driving.replace(true);
        let _restore = RestoreDriving(&self.local.driving, was);
        f()
    }
}

/// Puts back the set's `driving` flag, also when a poll unwinds.
struct RestoreDriving<'a>(&'a Cell<bool>, bool);

impl Drop for RestoreDriving<'_> {
    fn drop(&mut self) {
        self.0.set(self.1);
    }
}

/// Awaiting a set runs it until every task in it has finished.
impl Future for LocalSet {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.drive(|| {
            self.tick(cx);
            if self.local.live.get() == 0 {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

/// Closes every task of the set, on its thread: queued ones, then waiting ones, until
/// none is left (a closing task's destructor may wake or queue another, which a later
/// round closes). Each is closed with the set's local half named, whatever the
/// destructors do to this thread's context.
fn close_all(local: &SetLocal) {
    loop {
        let queued = local.queue.borrow_mut().pop_front();
        match queued {
            // SAFETY: `local` is this set's local half, on its thread.
            Some(runnable) => unsafe { runnable.cancel(local) },
            None if local.tasks.is_empty() => break,
            // SAFETY: as above; nothing of the set is polled meanwhile.
            None => unsafe { local.tasks.cancel_all::<SetHandle>(local) },
        }
    }
}

impl Drop for LocalSet {
    fn drop(&mut self) {
        // Entered (if this thread's context still exists: a `LocalSet` kept in a
        // thread-local may be dropped after it, as the thread exits), so that a closing
        // task's destructor that spawns or wakes finds this set.
        let _enter = CURRENT
            .try_with(|c| c.replace(Some(self.local.clone())))
            .ok()
            .map(LocalEnterGuard);
        let local = &*self.local;
        local.dropped.set(true);
        // Wakes from other threads are released from now on, and the driver is let go
        // (its waker may be a task's, which holds this set).
        let (queue, driver) = {
            let mut remote = lock(&local.handle.0);
            (remote.queue.take(), remote.driver.take())
        };
        drop((queue, driver));
        // Every task is closed here, on the set's thread, outside any wake.
        close_all(local);
        local.closed.set(true);
    }
}
