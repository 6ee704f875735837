//! `JoinHandle`, `JoinError` and `AbortHandle`, with tokio's semantics.

use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

/// An opaque id of a spawned task, unique among the tasks of a process.
///
/// Useful to tell tasks apart in logs, or to match a [`JoinError`] or a
/// [`JoinSet`](super::JoinSet) result with the task it came from:
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let handle = task::spawn(async { task::id() }); // the id, seen from inside
///     let id = handle.id();
///     assert_eq!(handle.await.unwrap(), id);
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(u64);

/// Ids a thread takes from the global counter at a time, so that spawning threads do
/// not all bounce one cache line for every task.
const ID_BLOCK: u64 = 1024;

impl Id {
    pub(crate) fn as_u64(self) -> u64 {
        self.0
    }

    pub(crate) fn next() -> Id {
        static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);
        thread_local! {
            /// The next id of this thread's block, and the end of the block.
            static BLOCK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        }
        let take_block = || {
            let start = NEXT_BLOCK.fetch_add(ID_BLOCK, Relaxed);
            (start, start + ID_BLOCK)
        };
        BLOCK
            .try_with(|b| {
                let (mut next, mut end) = b.get();
                if next == end {
                    (next, end) = take_block();
                }
                b.set((next + 1, end));
                Id(next)
            })
            // During thread teardown: a block of one.
            .unwrap_or_else(|_| Id(take_block().0))
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

enum Repr {
    Cancelled,
    /// In a mutex only so that `JoinError` is `Sync` (as tokio's is): the payload is
    /// only ever reached through `&mut self` or by value.
    Panic(Mutex<Box<dyn Any + Send + 'static>>),
}

/// A task failed to complete: it was cancelled (aborted, or its runtime shut down) or
/// it panicked.
///
/// A panic in a task does not bring down the program: it ends the task, and whoever
/// awaits the task gets the panic as an error:
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::{runtime::Builder, task, time};
///
/// let rt = Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     let err = task::spawn(async { panic!("boom") }).await.unwrap_err();
///     assert!(err.is_panic());
///     assert_eq!(*err.into_panic().downcast::<&str>().unwrap(), "boom");
///
///     let sleeper = task::spawn(time::sleep(Duration::from_secs(60)));
///     sleeper.abort();
///     assert!(sleeper.await.unwrap_err().is_cancelled());
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct JoinError {
    repr: Repr,
    id: Id,
}

impl JoinError {
    pub(crate) fn cancelled(id: Id) -> JoinError {
        JoinError {
            repr: Repr::Cancelled,
            id,
        }
    }

    pub(crate) fn panic(id: Id, payload: Box<dyn Any + Send + 'static>) -> JoinError {
        JoinError {
            repr: Repr::Panic(Mutex::new(payload)),
            id,
        }
    }

    /// True if the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// True if the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// The panic payload. Panics if the task did not panic; see
    /// [`try_into_panic`](Self::try_into_panic).
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic().expect("`JoinError` reason is not a panic.")
    }

    /// The panic payload, or the error back if the task was cancelled.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panic(p) => Ok(p.into_inner().unwrap_or_else(|e| e.into_inner())),
            Repr::Cancelled => Err(self),
        }
    }

    /// The id of the task that failed.
    pub fn id(&self) -> Id {
        self.id
    }
}

/// The message of a `&str` or `String` panic payload. Takes the mutex itself, not
/// `&dyn Any`: a `&Mutex<..>` would coerce to `&dyn Any` and never downcast.
fn panic_message(p: &Mutex<Box<dyn Any + Send>>) -> Option<String> {
    let p = p.lock().unwrap_or_else(|e| e.into_inner());
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "task {} was cancelled", self.id),
            Repr::Panic(p) => match panic_message(p) {
                Some(msg) => write!(f, "task {} panicked with message {msg:?}", self.id),
                None => write!(f, "task {} panicked", self.id),
            },
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "JoinError::Cancelled({:?})", self.id),
            Repr::Panic(p) => match panic_message(p) {
                Some(msg) => write!(f, "JoinError::Panic({:?}, {msg:?}, ...)", self.id),
                None => write!(f, "JoinError::Panic({:?}, ...)", self.id),
            },
        }
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for std::io::Error {
    fn from(e: JoinError) -> Self {
        std::io::Error::other(e.to_string())
    }
}

/// The abort flag shared by a task and its handles.
pub(crate) struct AbortState {
    aborted: AtomicBool,
    /// Set when the task's future completes or is dropped.
    finished: AtomicBool,
    /// The task's own waker, recorded at its first poll. An async-task waker never
    /// changes for a given task, so it is set once and read without a lock.
    waker: OnceLock<Waker>,
    /// The panic of the future's destructor, when it was dropped unfinished: the
    /// handle reports it (tokio's `JoinError::Panic`) instead of a cancellation.
    drop_panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl AbortState {
    fn abort(&self) {
        if !self.aborted.swap(true, AcqRel)
            && let Some(w) = self.waker.get()
        {
            w.wake_by_ref();
        }
    }
}

pin_project_lite::pin_project! {
    /// What runs for a task off the loops (blocking pool, `LocalSet`): the user's
    /// future, plus panic handling, the task id and the abort flag. async-task neither
    /// catches panics nor knows abort, so this layer does both.
    pub(crate) struct Guarded<F> {
        // Dropped by hand, in `drop`: with the task id set, and with a panic caught
        // (async-task would abort the process on it).
        #[pin]
        future: ManuallyDrop<F>,
        abort: Arc<AbortState>,
        id: Id,
    }

    impl<F> PinnedDrop for Guarded<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let dropped = {
                let _id = IdGuard::enter(*this.id);
                // SAFETY: the future is dropped once, here, where it lies (it is pinned),
                // and the struct holding it is being dropped: nothing uses it after.
                catch_unwind(AssertUnwindSafe(|| unsafe { ManuallyDrop::drop(this.future.get_unchecked_mut()) }))
            };
            if let Err(payload) = dropped {
                *this.abort.drop_panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(payload);
            }
            this.abort.finished.store(true, Release);
        }
    }
}

pin_project_lite::pin_project! {
    /// What runs for a loop task: the user's future with its task id, for
    /// [`task::id`](id). Nothing else: the loop task catches panics itself and keeps
    /// abort requests in its header, and the handle turns both into a [`JoinError`].
    /// Its output is the future's own, so no `Result` is built or copied per poll.
    pub(crate) struct Identified<F> {
        // Dropped by hand, in `drop`, with the task id set: a destructor may ask for it.
        #[pin]
        future: ManuallyDrop<F>,
        id: Id,
    }

    impl<F> PinnedDrop for Identified<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let _id = IdGuard::enter(*this.id);
            // SAFETY: the future is dropped once, here, where it lies (it is pinned), and
            // the struct holding it is being dropped: nothing uses it after. A panic
            // unwinds to the loop task, which catches it.
            unsafe { ManuallyDrop::drop(this.future.get_unchecked_mut()) }
        }
    }
}

impl<F: Future> Future for Identified<F> {
    type Output = WithId<F::Output>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WithId<F::Output>> {
        let this = self.project();
        let id = *this.id;
        let _id = IdGuard::enter(id);
        // SAFETY: `ManuallyDrop` is a transparent wrapper: pinning it pins the future.
        unsafe { this.future.map_unchecked_mut(|f| &mut **f) }
            .poll(cx)
            .map(|value| WithId { value: Some(value), id })
    }
}

/// A loop task's output while the task holds it: dropped with the task's id set (its
/// destructor may ask for it, as on tokio), whether the task drops it because nobody
/// joins, or a `JoinHandle` dropped after completion does. A join takes it out whole.
pub(crate) struct WithId<T> {
    /// `None` once taken.
    value: Option<T>,
    id: Id,
}

impl<T> WithId<T> {
    fn into_inner(mut self) -> T {
        self.value.take().expect("an output is taken once")
    }
}

impl<T> Drop for WithId<T> {
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            let _id = IdGuard::enter(self.id);
            drop(value);
        }
    }
}

/// Sets the current task id for a poll and puts the outer one back when dropped, also
/// when the poll unwinds (the loop task catches the panic; the thread goes on).
struct IdGuard(Option<Id>);

impl IdGuard {
    #[inline]
    fn enter(id: Id) -> IdGuard {
        IdGuard(CURRENT_ID.with(|c| c.replace(Some(id))))
    }
}

impl Drop for IdGuard {
    #[inline]
    fn drop(&mut self) {
        CURRENT_ID.with(|c| c.set(self.0));
    }
}

/// Wraps a loop task's future.
pub(crate) fn identify<F: Future>(future: F, id: Id) -> Identified<F> {
    Identified {
        future: ManuallyDrop::new(future),
        id,
    }
}

thread_local! {
    /// The id of the task being polled on this thread, for `task::id()`.
    static CURRENT_ID: Cell<Option<Id>> = const { Cell::new(None) };
}

/// The id of the task polled on this thread, if any (tokio's `task::try_id`).
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// assert!(task::try_id().is_none()); // not in a task
/// let rt = Builder::new_current_thread().build()?;
/// let id = rt.block_on(async { task::spawn(async { task::try_id() }).await.unwrap() });
/// assert!(id.is_some());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn try_id() -> Option<Id> {
    CURRENT_ID.try_with(Cell::get).ok().flatten()
}

/// The id of the running task; panics outside a task (tokio's `task::id`).
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let a = task::spawn(async { task::id() });
///     let b = task::spawn(async { task::id() });
///     assert_ne!(a.await.unwrap(), b.await.unwrap());
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn id() -> Id {
    try_id().expect("can't get a task id when not inside a task")
}

impl<F: Future> Future for Guarded<F> {
    type Output = Result<F::Output, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if this.abort.aborted.load(Acquire) {
            return Poll::Ready(Err(JoinError::cancelled(*this.id)));
        }
        let id = *this.id;
        // SAFETY: `ManuallyDrop` is a transparent wrapper: pinning it pins the future.
        let future = unsafe { this.future.map_unchecked_mut(|f| &mut **f) };
        let polled = {
            let _id = IdGuard::enter(id);
            catch_unwind(AssertUnwindSafe(|| future.poll(cx)))
        };
        match polled {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => {
                // Only a task that waits can be aborted while waiting, so the waker is
                // recorded the first time it pends (most short tasks never do).
                if this.abort.waker.get().is_none() {
                    let _ = this.abort.waker.set(cx.waker().clone());
                    // An abort before the waker was there woke nobody: honour it now.
                    if this.abort.aborted.load(Acquire) {
                        return Poll::Ready(Err(JoinError::cancelled(id)));
                    }
                }
                Poll::Pending
            }
            Err(payload) => Poll::Ready(Err(JoinError::panic(id, payload))),
        }
    }
}

/// A fresh abort flag, for a task off the loops.
pub(crate) fn new_abort_state() -> Arc<AbortState> {
    Arc::new(AbortState {
        aborted: AtomicBool::new(false),
        finished: AtomicBool::new(false),
        waker: OnceLock::new(),
        drop_panic: Mutex::new(None),
    })
}

/// Wraps the future of a task off the loops, which checks `abort` at every poll.
pub(crate) fn guard_with_flag<F: Future>(future: F, abort: Arc<AbortState>, id: Id) -> Guarded<F> {
    Guarded {
        future: ManuallyDrop::new(future),
        abort,
        id,
    }
}

/// An owned permission to join a task: awaiting it gives the task's output
/// (tokio's `JoinHandle`).
///
/// Dropping the handle detaches the task: it keeps running. [`abort`](Self::abort)
/// cancels it; awaiting then gives a [`JoinError`] for which `is_cancelled()` is true,
/// unless the task had already finished.
///
/// ```
/// use netloop_scheduler::{runtime::Builder, task};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let handles: Vec<_> = (1..=3u64).map(|i| task::spawn(async move { i * 10 })).collect();
///     let mut sum = 0;
///     for handle in handles {
///         sum += handle.await.unwrap(); // `Err` only if the task panicked or was aborted
///     }
///     assert_eq!(sum, 60);
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct JoinHandle<T> {
    /// `None` for a task that was rejected (its runtime shut down): it never ran.
    task: Option<Inner<T>>,
    id: Id,
}

/// The task behind a handle: a loop task (abort lives in its header, a panic comes
/// back as a payload), or an async-task task of the blocking pool or a `LocalSet`,
/// whose `Guarded` future reports both itself.
enum Inner<T> {
    Loop(netloop_reactor::FallibleTask<WithId<T>>),
    Plain(async_task::FallibleTask<Result<T, JoinError>>, Arc<AbortState>),
}

impl<T> Inner<T> {
    fn is_finished(&self) -> bool {
        match self {
            Inner::Loop(t) => t.is_finished(),
            Inner::Plain(t, _) => t.is_finished(),
        }
    }

    /// The task's result; `None` when its future was dropped unfinished.
    fn poll(&mut self, cx: &mut Context<'_>, id: Id) -> Poll<Option<Result<T, JoinError>>> {
        match self {
            Inner::Loop(t) => t.poll_outcome(cx).map(|outcome| {
                outcome.map(|outcome| {
                    outcome
                        .map(WithId::into_inner)
                        .map_err(|payload| JoinError::panic(id, payload))
                })
            }),
            Inner::Plain(t, abort) => Pin::new(t).poll(cx).map(|outcome| {
                // Dropped unfinished: a panic in the destructor is the outcome.
                outcome.or_else(|| {
                    let payload = abort.drop_panic.lock().unwrap_or_else(|e| e.into_inner()).take();
                    payload.map(|payload| Err(JoinError::panic(id, payload)))
                })
            }),
        }
    }

    fn detach(self) {
        match self {
            Inner::Loop(t) => t.detach(),
            Inner::Plain(t, _) => t.detach(),
        }
    }

    fn abort(&self) {
        match self {
            Inner::Loop(t) => t.abort(),
            Inner::Plain(_, flag) => flag.abort(),
        }
    }

    fn abort_handle(&self) -> AbortInner {
        match self {
            Inner::Loop(t) => AbortInner::Loop(t.abort_handle()),
            Inner::Plain(_, flag) => AbortInner::Flag(flag.clone()),
        }
    }
}

impl<T> JoinHandle<T> {
    /// A handle for a task spawned on an event loop.
    pub(crate) fn new(task: netloop_reactor::Task<WithId<T>>, id: Id) -> Self {
        JoinHandle {
            task: Some(Inner::Loop(task.fallible())),
            id,
        }
    }

    /// A handle for a task of the blocking pool or a `LocalSet`.
    pub(crate) fn new_plain(task: async_task::Task<Result<T, JoinError>>, abort: Arc<AbortState>, id: Id) -> Self {
        JoinHandle {
            task: Some(Inner::Plain(task.fallible(), abort)),
            id,
        }
    }

    /// A handle whose task never ran (it was rejected): it resolves as cancelled.
    pub(crate) fn rejected(id: Id) -> Self {
        JoinHandle { task: None, id }
    }

    /// Cancels the task. A task that has not finished is dropped at its next turn on
    /// its loop (or before its first poll), never mid-poll.
    pub fn abort(&self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }

    /// True once the task has finished (completed, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(Inner::is_finished)
    }

    /// A handle that can abort the task without owning the output.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            inner: self.task.as_ref().map_or(AbortInner::Rejected, Inner::abort_handle),
            id: self.id,
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        self.id
    }
}

impl<T> Unpin for JoinHandle<T> {}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = self.id;
        let Some(task) = self.task.as_mut() else {
            return Poll::Ready(Err(JoinError::cancelled(id)));
        };
        match task.poll(cx, id) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(out)) => Poll::Ready(out),
            // The runnable was dropped unrun: the loop shut down.
            Poll::Ready(None) => Poll::Ready(Err(JoinError::cancelled(id))),
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.detach();
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Aborts a task without owning its output (tokio's `AbortHandle`).
///
/// It can be cloned and handed to whoever decides when the task should stop, while
/// the [`JoinHandle`] stays with whoever wants the result:
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::{runtime::Builder, task, time};
///
/// let rt = Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     let worker = task::spawn(time::sleep(Duration::from_secs(60)));
///     let stop = worker.abort_handle();
///
///     stop.abort();
///     assert!(worker.await.unwrap_err().is_cancelled());
///     assert!(stop.is_finished());
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct AbortHandle {
    inner: AbortInner,
    id: Id,
}

#[derive(Clone)]
enum AbortInner {
    Loop(netloop_reactor::AbortHandle),
    Flag(Arc<AbortState>),
    /// The task was rejected at spawn: finished, never aborted.
    Rejected,
}

impl AbortHandle {
    /// Cancels the task; see [`JoinHandle::abort`].
    pub fn abort(&self) {
        match &self.inner {
            AbortInner::Loop(h) => h.abort(),
            AbortInner::Flag(flag) => flag.abort(),
            AbortInner::Rejected => {}
        }
    }

    /// True once `abort` was called on this task (by any handle).
    pub fn is_aborted(&self) -> bool {
        match &self.inner {
            AbortInner::Loop(h) => h.is_aborted(),
            AbortInner::Flag(flag) => flag.aborted.load(Acquire),
            AbortInner::Rejected => false,
        }
    }

    /// True once the task has finished (completed, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        match &self.inner {
            AbortInner::Loop(h) => h.is_finished(),
            AbortInner::Flag(flag) => flag.finished.load(Acquire),
            AbortInner::Rejected => true,
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        self.id
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle").field("id", &self.id).finish()
    }
}

// A handle is a reference to a task's shared state, which a panic cannot leave
// half-written (its transitions are atomic), so handles may cross `catch_unwind`.
impl<T> std::panic::UnwindSafe for JoinHandle<T> {}
impl<T> std::panic::RefUnwindSafe for JoinHandle<T> {}
impl std::panic::UnwindSafe for AbortHandle {}
impl std::panic::RefUnwindSafe for AbortHandle {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_across_threads_and_blocks() {
        let per_thread = 3 * ID_BLOCK as usize + 7;
        let threads: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(move || (0..per_thread).map(|_| Id::next()).collect::<Vec<_>>()))
            .collect();
        let mut seen = HashSet::new();
        for t in threads {
            for id in t.join().unwrap() {
                assert!(seen.insert(id), "duplicate task id {id}");
            }
        }
        assert_eq!(seen.len(), 4 * per_thread);
        assert!(!seen.contains(&Id(0)), "0 is never handed out");
    }
}
