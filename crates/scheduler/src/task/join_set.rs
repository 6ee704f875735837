//! `JoinSet`: a collection of tasks, joined in the order they finish.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use super::error::JoinError;
use super::harness::Origin;
use super::id::Id;
use super::join::{AbortHandle, JoinHandle};
use super::local::LocalSet;
use super::spawn::{spawn_local_with_id, spawn_movable_with, spawn_with};
use crate::blocking::BlockingPool;
use crate::context;
use crate::placement::{spawn_loop_of, with_spawn_loop};
use crate::runtime::handle::Handle;
use crate::sync::lock;

/// Completed task ids, pushed by the tasks themselves as they finish.
#[derive(Default)]
struct Finished {
    ids: VecDeque<Id>,
    waker: Option<Waker>,
}

type FinishedRef = Arc<Mutex<Finished>>;

fn notify(finished: &FinishedRef, id: Id) {
    let waker = {
        let mut f = lock(finished);
        f.ids.push_back(id);
        f.waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
}

/// Tells the set when its task is done, however it ends (output, panic, abort,
/// shutdown): the future is dropped in every case.
struct OnDone {
    finished: FinishedRef,
    id: Id,
}

impl Drop for OnDone {
    fn drop(&mut self) {
        notify(&self.finished, self.id);
    }
}

/// `future`, reporting to the set when it is dropped (finished, cancelled or closed).
fn reporting_done<F: Future>(finished: FinishedRef, id: Id, future: F) -> impl Future<Output = F::Output> {
    let done = OnDone { finished, id };
    async move {
        let _done = done;
        future.await
    }
}

/// A set of tasks of one output type, joined as they finish (tokio's `JoinSet`).
///
/// Joining costs O(1) per finished task: each task reports its own completion, so the
/// set never polls tasks that are still running. Dropping the set aborts every task.
///
/// ```
/// use netloop_scheduler::{runtime::Runtime, task::JoinSet};
///
/// let rt = Runtime::new()?;
/// let sum = rt.block_on(async {
///     let mut set = JoinSet::new();
///     for i in 0..10u64 {
///         set.spawn(async move { i * i });
///     }
///     let mut sum = 0;
///     while let Some(res) = set.join_next().await {
///         sum += res.unwrap();
///     }
///     sum
/// });
/// assert_eq!(sum, 285);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct JoinSet<T> {
    tasks: HashMap<Id, JoinHandle<T>>,
    finished: FinishedRef,
    /// Reported finished, but their output was not yet visible when last polled.
    landing: VecDeque<Id>,
}

impl<T> Default for JoinSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.tasks.len()).finish()
    }
}

impl<T> JoinSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        JoinSet {
            tasks: HashMap::new(),
            finished: FinishedRef::default(),
            landing: VecDeque::new(),
        }
    }

    /// Number of tasks not yet joined.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// True if no task is left to join.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    fn insert(&mut self, handle: JoinHandle<T>) -> AbortHandle {
        let abort = handle.abort_handle();
        self.tasks.insert(handle.id(), handle);
        abort
    }

    /// Aborts every task; they are still joined (as cancelled) by `join_next`.
    pub fn abort_all(&mut self) {
        self.tasks.values().for_each(JoinHandle::abort);
    }

    /// Forgets every task, letting them run on.
    pub fn detach_all(&mut self) {
        self.tasks.clear();
        self.landing.clear();
    }

    /// Waits for the next task to finish; `None` once the set is empty.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        std::future::poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// The next finished task's result, without waiting.
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        // Not async, so it cannot yield: the budget does not apply (as in tokio).
        match netloop_reactor::coop::with_unconstrained(|| self.poll_join_next(&mut Context::from_waker(Waker::noop())))
        {
            Poll::Ready(r) => r,
            Poll::Pending => None,
        }
    }

    /// Like [`join_next`](Self::join_next), with the finished task's id.
    pub async fn join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        std::future::poll_fn(|cx| self.poll_join_next_with_id(cx)).await
    }

    /// Like [`try_join_next`](Self::try_join_next), with the finished task's id.
    pub fn try_join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        match netloop_reactor::coop::with_unconstrained(|| {
            self.poll_join_next_with_id(&mut Context::from_waker(Waker::noop()))
        }) {
            Poll::Ready(r) => r,
            Poll::Pending => None,
        }
    }

    /// Like [`poll_join_next`](Self::poll_join_next), with the finished task's id.
    pub fn poll_join_next_with_id(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<(Id, T), JoinError>>> {
        let mut finished_id = None;
        let polled = self.poll_join_next_inner(cx, &mut finished_id);
        polled.map(|o| o.map(|r| r.map(|v| (finished_id.expect("set with the output"), v))))
    }

    /// Polls for the next finished task.
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        self.poll_join_next_inner(cx, &mut None)
    }

    fn poll_join_next_inner(
        &mut self,
        cx: &mut Context<'_>,
        finished_id: &mut Option<Id>,
    ) -> Poll<Option<Result<T, JoinError>>> {
        if self.tasks.is_empty() {
            return Poll::Ready(None);
        }
        // The waker it replaces is dropped after the lock is released: its destructor
        // may run anything, a task of this set finishing (and taking the lock) included.
        let replaced = {
            let mut f = lock(&self.finished);
            self.landing.extend(f.ids.drain(..));
            match &f.waker {
                Some(w) if w.will_wake(cx.waker()) => None,
                _ => f.waker.replace(cx.waker().clone()),
            }
        };
        drop(replaced);
        for _ in 0..self.landing.len() {
            let Some(id) = self.landing.pop_front() else { break };
            let Some(handle) = self.tasks.get_mut(&id) else {
                continue;
            };
            match Pin::new(handle).poll(cx) {
                Poll::Ready(out) => {
                    self.tasks.remove(&id);
                    *finished_id = Some(id);
                    return Poll::Ready(Some(out));
                }
                // Its future is gone but the output is not stored yet: the handle's
                // own wake (registered just now) brings us back.
                Poll::Pending => self.landing.push_back(id),
            }
        }
        Poll::Pending
    }

    /// Aborts every task and waits until all have finished.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    /// Waits for every task and returns their outputs in completion order. Panics if a
    /// task failed (after aborting the rest), as tokio's does.
    pub async fn join_all(mut self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len());
        while let Some(res) = self.join_next().await {
            match res {
                Ok(v) => out.push(v),
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => panic!("{e}"),
            }
        }
        out
    }
}

impl<T: Send + 'static> JoinSet<T> {
    /// Spawns a task into the set, with [`spawn`](super::spawn)'s placement rules.
    #[track_caller]
    pub fn spawn<F>(&mut self, future: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
    {
        self.spawn_at(future, Origin::caller())
    }

    /// [`spawn`](Self::spawn), from a spawn at `origin`.
    #[inline]
    pub(crate) fn spawn_at<F>(&mut self, future: F, origin: Origin) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
    {
        with_spawn_loop(|event_loop, movable| {
            let id = Id::next();
            #[cfg(tokio_unstable)]
            let origin = origin.register(id, super::spawn::runtime_of(event_loop).as_deref(), true);
            self.spawn_on_loop(event_loop, movable, future, id, origin)
        })
    }

    /// Spawns a task into the set on `handle`'s runtime.
    #[cfg_attr(tokio_unstable, track_caller)]
    pub fn spawn_on<F>(&mut self, future: F, handle: &Handle) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
    {
        self.spawn_on_at(future, handle, Origin::caller())
    }

    /// [`spawn_on`](Self::spawn_on), from a spawn at `origin`.
    #[inline]
    pub(crate) fn spawn_on_at<F>(&mut self, future: F, handle: &Handle, origin: Origin) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
    {
        let (event_loop, movable) = spawn_loop_of(&handle.inner.group);
        let id = Id::next();
        #[cfg(tokio_unstable)]
        let origin = origin.register(id, Some(&handle.inner), true);
        self.spawn_on_loop(event_loop, movable, future, id, origin)
    }

    /// Spawns task `id`, its origin registered, on `event_loop`.
    fn spawn_on_loop<F>(
        &mut self,
        event_loop: &netloop_reactor::EventLoopHandle,
        movable: bool,
        future: F,
        id: Id,
        origin: Origin,
    ) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
    {
        let future = reporting_done(self.finished.clone(), id, future);
        let handle = if movable {
            spawn_movable_with(event_loop, future, id, origin)
        } else {
            spawn_with(event_loop, future, id, origin)
        };
        self.insert(handle)
    }

    /// Runs a blocking closure on the blocking pool as a member of the set.
    #[track_caller]
    pub fn spawn_blocking<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
    {
        let origin = Origin::caller();
        context::with_runtime(|rt| self.spawn_blocking_in(&rt.blocking, f, origin))
    }

    /// Runs a blocking closure on `handle`'s blocking pool as a member of the set.
    #[track_caller]
    pub fn spawn_blocking_on<F>(&mut self, f: F, handle: &Handle) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
    {
        self.spawn_blocking_in(&handle.inner.blocking, f, Origin::caller())
    }

    /// Runs a blocking closure on `pool` as a member of the set.
    #[track_caller]
    pub(crate) fn spawn_blocking_in<F>(&mut self, pool: &BlockingPool, f: F, origin: Origin) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
    {
        let finished = self.finished.clone();
        let handle = pool.spawn_with_id(
            move |id| {
                let _done = OnDone { finished, id };
                f()
            },
            origin.blocking::<F>(),
        );
        self.insert(handle)
    }
}

impl<T: 'static> JoinSet<T> {
    /// Spawns a `!Send` task into the set on the current loop (or `LocalSet`).
    #[track_caller]
    pub fn spawn_local<F>(&mut self, future: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        self.spawn_local_at(future, Origin::caller())
    }

    /// [`spawn_local`](Self::spawn_local), from a spawn at `origin`.
    #[inline]
    #[track_caller]
    pub(crate) fn spawn_local_at<F>(&mut self, future: F, origin: Origin) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        let finished = self.finished.clone();
        let handle = spawn_local_with_id(move |id| reporting_done(finished, id, future), origin.kind("local"));
        self.insert(handle)
    }

    /// Spawns a `!Send` task into the set on `local_set`: it runs when the set is
    /// driven.
    #[cfg_attr(tokio_unstable, track_caller)]
    pub fn spawn_local_on<F>(&mut self, future: F, local_set: &LocalSet) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        self.spawn_local_on_at(future, local_set, Origin::caller())
    }

    /// [`spawn_local_on`](Self::spawn_local_on), from a spawn at `origin`.
    #[inline]
    pub(crate) fn spawn_local_on_at<F>(&mut self, future: F, local_set: &LocalSet, origin: Origin) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        let finished = self.finished.clone();
        let handle =
            local_set.spawn_local_with_id(move |id| reporting_done(finished, id, future), origin.kind("local"));
        self.insert(handle)
    }
}

impl<T> Drop for JoinSet<T> {
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl<T, F> std::iter::FromIterator<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    fn from_iter<I: IntoIterator<Item = F>>(iter: I) -> Self {
        let mut set = JoinSet::new();
        for f in iter {
            set.spawn(f);
        }
        set
    }
}

impl<T, F> std::iter::Extend<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    /// Spawns each future of `iter` into the set, as [`JoinSet::spawn`] does.
    fn extend<I: IntoIterator<Item = F>>(&mut self, iter: I) {
        for f in iter {
            self.spawn(f);
        }
    }
}

/// Spawns a task into a [`JoinSet`] with options (tokio's unstable
/// `task::join_set::Builder`, from [`JoinSet::build_task`]).
#[cfg(tokio_unstable)]
#[must_use = "a builder spawns nothing until one of its spawn methods is called"]
pub struct Builder<'a, T> {
    joinset: &'a mut JoinSet<T>,
    builder: super::builder::Builder<'a>,
}

#[cfg(tokio_unstable)]
impl<T> fmt::Debug for Builder<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("join_set::Builder")
            .field("joinset", &self.joinset)
            .field("builder", &self.builder)
            .finish()
    }
}

#[cfg(tokio_unstable)]
impl<T> JoinSet<T> {
    /// A builder for a task of this set (tokio's unstable `JoinSet::build_task`).
    pub fn build_task(&mut self) -> Builder<'_, T> {
        Builder {
            joinset: self,
            builder: super::builder::Builder::new(),
        }
    }
}

#[cfg(tokio_unstable)]
impl<'a, T: 'static> Builder<'a, T> {
    /// Names the task (see [`task::Builder::name`](super::Builder::name)).
    pub fn name(self, name: &'a str) -> Self {
        Builder {
            builder: self.builder.name(name),
            ..self
        }
    }

    /// Spawns `future` into the set, as [`JoinSet::spawn`] does.
    #[track_caller]
    pub fn spawn<F>(self, future: F) -> std::io::Result<AbortHandle>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        Ok(self.joinset.spawn_at(future, self.builder.origin()))
    }

    /// Spawns `future` into the set on `handle`'s runtime, as [`JoinSet::spawn_on`].
    #[track_caller]
    pub fn spawn_on<F>(self, future: F, handle: &Handle) -> std::io::Result<AbortHandle>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        Ok(self.joinset.spawn_on_at(future, handle, self.builder.origin()))
    }

    /// Runs `f` on the blocking pool as a member of the set, as
    /// [`JoinSet::spawn_blocking`].
    #[track_caller]
    pub fn spawn_blocking<F>(self, f: F) -> std::io::Result<AbortHandle>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        let origin = self.builder.origin();
        Ok(context::with_runtime(|rt| {
            self.joinset.spawn_blocking_in(&rt.blocking, f, origin)
        }))
    }

    /// Runs `f` on `handle`'s blocking pool as a member of the set, as
    /// [`JoinSet::spawn_blocking_on`].
    #[track_caller]
    pub fn spawn_blocking_on<F>(self, f: F, handle: &Handle) -> std::io::Result<AbortHandle>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        Ok(self
            .joinset
            .spawn_blocking_in(&handle.inner.blocking, f, self.builder.origin()))
    }

    /// Spawns a `!Send` future into the set, as [`JoinSet::spawn_local`].
    #[track_caller]
    pub fn spawn_local<F>(self, future: F) -> std::io::Result<AbortHandle>
    where
        F: Future<Output = T> + 'static,
    {
        Ok(self.joinset.spawn_local_at(future, self.builder.origin()))
    }

    /// Spawns a `!Send` future into the set on `local_set`, as
    /// [`JoinSet::spawn_local_on`].
    #[track_caller]
    pub fn spawn_local_on<F>(self, future: F, local_set: &LocalSet) -> std::io::Result<AbortHandle>
    where
        F: Future<Output = T> + 'static,
    {
        Ok(self.joinset.spawn_local_on_at(future, local_set, self.builder.origin()))
    }
}
