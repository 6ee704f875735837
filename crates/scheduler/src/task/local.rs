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
use std::thread::{self, ThreadId};

use async_task::Runnable;

use super::harness::{guard_with_flag, new_abort_state};
use super::{Id, JoinHandle};
use crate::runtime::Runtime;
use crate::sync::lock;

/// Tasks polled per turn of the set before it yields to its caller.
const MAX_TASKS_PER_TURN: usize = 128;

/// The part of a set that wakes can reach from any thread.
struct Queue {
    runnables: Mutex<VecDeque<Runnable>>,
    waker: Mutex<Option<Waker>>,
    owner: ThreadId,
    dropped: std::sync::atomic::AtomicBool,
}

impl Queue {
    fn schedule(&self, runnable: Runnable) {
        if self.dropped.load(std::sync::atomic::Ordering::Acquire) {
            if thread::current().id() == self.owner {
                drop(runnable);
            } else {
                // A !Send task may only be dropped on its own thread; the set is gone,
                // so the task can never run again. Leaking is the safe choice.
                std::mem::forget(runnable);
            }
            return;
        }
        lock(&self.runnables).push_back(runnable);
        if let Some(w) = lock(&self.waker).take() {
            w.wake();
        }
    }
}

struct Shared {
    queue: Arc<Queue>,
    members: Rc<Members>,
}

/// The set's tasks: how many are alive, and the waker of each that has been polled,
/// so dropping the set can close them all on this thread.
#[derive(Default)]
struct Members {
    live: Cell<usize>,
    wakers: RefCell<Option<slab::Slab<Waker>>>,
}

pin_project_lite::pin_project! {
    /// A task of the set: registers its waker at the first poll, leaves on drop.
    struct Member<F> {
        #[pin]
        future: F,
        members: Rc<Members>,
        key: Option<usize>,
    }

    impl<F> PinnedDrop for Member<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            this.members.live.set(this.members.live.get() - 1);
            if let Some(key) = *this.key
                && let Ok(mut wakers) = this.members.wakers.try_borrow_mut()
                && let Some(slab) = wakers.as_mut()
                && slab.contains(key)
            {
                slab.remove(key);
            }
        }
    }
}

impl<F: Future> Future for Member<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if this.key.is_none()
            && let Some(slab) = this.members.wakers.borrow_mut().as_mut()
        {
            *this.key = Some(slab.insert(cx.waker().clone()));
        }
        this.future.poll(cx)
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Shared>>> = const { RefCell::new(None) };
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
pub struct LocalEnterGuard(Option<Rc<Shared>>);

impl Drop for LocalEnterGuard {
    fn drop(&mut self) {
        let prev = self.0.take();
        let _ = CURRENT.try_with(|c| *c.borrow_mut() = prev);
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
    shared: Rc<Shared>,
}

impl fmt::Debug for LocalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSet")
            .field("live_tasks", &self.shared.members.live.get())
            .finish()
    }
}

impl Default for LocalSet {
    fn default() -> Self {
        Self::new()
    }
}

fn spawn_into<F>(shared: &Rc<Shared>, future: F, id: Id) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    shared.members.live.set(shared.members.live.get() + 1);
    let member = Member {
        future,
        members: shared.members.clone(),
        key: None,
    };
    let abort = new_abort_state();
    let guarded = guard_with_flag(member, abort.clone(), id);
    let queue = shared.queue.clone();
    let (runnable, task) = async_task::spawn_local(guarded, move |r| queue.schedule(r));
    runnable.schedule();
    JoinHandle::new_plain(task, abort, id)
}

thread_local! {
    /// The sets of the `LocalRuntime`s created on this thread, by runtime id: where
    /// `spawn_local` puts a task when it runs inside such a runtime's context (after
    /// `enter`) but outside its `block_on`.
    static RUNTIME_SETS: RefCell<Vec<(crate::runtime::Id, Weak<Shared>)>> = const { RefCell::new(Vec::new()) };
}

/// Records `set` as the set of the local runtime `runtime` (on its thread).
pub(crate) fn register_runtime_set(runtime: crate::runtime::Id, set: &LocalSet) {
    RUNTIME_SETS.with(|sets| {
        let mut sets = sets.borrow_mut();
        sets.retain(|(_, s)| s.strong_count() > 0);
        sets.push((runtime, Rc::downgrade(&set.shared)));
    });
}

/// Spawns into the set of the local runtime `runtime`, if it was created on this thread
/// and is alive; gives the future back otherwise.
pub(crate) fn spawn_in_runtime_set<F>(
    runtime: crate::runtime::Id,
    future: F,
    id: Id,
) -> Result<JoinHandle<F::Output>, F>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let shared = RUNTIME_SETS
        .try_with(|sets| {
            sets.borrow()
                .iter()
                .find(|(r, _)| *r == runtime)
                .and_then(|(_, s)| s.upgrade())
        })
        .ok()
        .flatten();
    match shared {
        Some(shared) => Ok(spawn_into(&shared, future, id)),
        None => Err(future),
    }
}

/// True while a `LocalSet` is being driven (or entered) on this thread.
pub(crate) fn in_local_set() -> bool {
    CURRENT.try_with(|c| c.borrow().is_some()).unwrap_or(false)
}

/// Spawns into the set being driven (or entered) on this thread; gives the future back
/// if there is none.
pub(crate) fn spawn_in_current_set<F>(future: F, id: Id) -> Result<JoinHandle<F::Output>, F>
where
    F: Future + 'static,
    F::Output: 'static,
{
    match CURRENT.with(|c| c.borrow().clone()) {
        Some(shared) => Ok(spawn_into(&shared, future, id)),
        None => Err(future),
    }
}

impl LocalSet {
    /// An empty set, owned by this thread.
    pub fn new() -> LocalSet {
        LocalSet {
            shared: Rc::new(Shared {
                queue: Arc::new(Queue {
                    runnables: Mutex::new(VecDeque::new()),
                    waker: Mutex::new(None),
                    owner: thread::current().id(),
                    dropped: std::sync::atomic::AtomicBool::new(false),
                }),
                members: Rc::new(Members {
                    live: Cell::new(0),
                    wakers: RefCell::new(Some(slab::Slab::new())),
                }),
            }),
        }
    }

    /// Adds a `!Send` task to the set; it runs when the set is driven.
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        spawn_into(&self.shared, future, Id::next())
    }

    /// `spawn_local` for a future that needs its own task id.
    pub(crate) fn spawn_local_with_id<M, F>(&self, make: M) -> JoinHandle<F::Output>
    where
        M: FnOnce(Id) -> F,
        F: Future + 'static,
        F::Output: 'static,
    {
        let id = Id::next();
        spawn_into(&self.shared, make(id), id)
    }

    /// Drives the set while `future` runs, and returns its output. Inside, off an
    /// event loop, `task::spawn_local` adds to this set.
    pub async fn run_until<F: Future>(&self, future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        std::future::poll_fn(|cx| {
            let _enter = self.enter();
            if let Poll::Ready(out) = future.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            self.tick(cx);
            Poll::Pending
        })
        .await
    }

    /// Runs `future` on `rt`, driving the set meanwhile.
    #[track_caller]
    pub fn block_on<F: Future>(&self, rt: &Runtime, future: F) -> F::Output {
        rt.block_on(self.run_until(future))
    }

    /// Enters the set's context on this thread until the guard drops: off a loop,
    /// `task::spawn_local` adds to this set meanwhile (tokio's `LocalSet::enter`).
    pub fn enter(&self) -> LocalEnterGuard {
        LocalEnterGuard(CURRENT.with(|c| c.replace(Some(self.shared.clone()))))
    }

    /// Runs queued tasks; keeps `cx` registered for more.
    fn tick(&self, cx: &mut Context<'_>) {
        *lock(&self.shared.queue.waker) = Some(cx.waker().clone());
        for _ in 0..MAX_TASKS_PER_TURN {
            let next = lock(&self.shared.queue.runnables).pop_front();
            match next {
                Some(r) => {
                    r.run();
                }
                None => return,
            }
        }
        // More work left: come back after letting others run.
        cx.waker().wake_by_ref();
    }
}

/// Awaiting a set runs it until every task in it has finished.
impl Future for LocalSet {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let _enter = self.enter();
        self.tick(cx);
        if self.shared.members.live.get() == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for LocalSet {
    fn drop(&mut self) {
        // Entered if this thread's context still exists: a `LocalSet` kept in a
        // thread-local may be dropped after it, as the thread exits.
        let _enter = CURRENT
            .try_with(|c| c.replace(Some(self.shared.clone())))
            .ok()
            .map(LocalEnterGuard);
        self.shared
            .queue
            .dropped
            .store(true, std::sync::atomic::Ordering::Release);
        // Close every queued task here, on the owning thread...
        let queued = std::mem::take(&mut *lock(&self.shared.queue.runnables));
        drop(queued);
        // ...and every waiting one: with `dropped` set, a wake on this thread drops the
        // task's runnable at once, which drops its future and resolves its handle.
        let waiting = self.shared.members.wakers.borrow_mut().take();
        for (_, waker) in waiting.into_iter().flatten() {
            waker.wake();
        }
    }
}
