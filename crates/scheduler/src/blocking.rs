//! `spawn_blocking`'s thread pool: grows on demand up to `max_blocking_threads`;
//! idle threads leave after `thread_keep_alive`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use netloop_reactor::task::{Runnable, Schedule, TaskList, spawn_unchecked};

use crate::group::ThreadConfig;
use crate::sync::{lock, unpoison};
use crate::task::harness::{Origin, identify};
use crate::task::id::Id;
use crate::task::join::JoinHandle;

/// A turn of a blocking task: its only one.
type PoolRunnable = Runnable<BlockingPool>;

struct State {
    queue: VecDeque<PoolRunnable>,
    idle: usize,
    /// Wake-ups sent to idle threads that have not woken yet: those threads are
    /// spoken for, so a new task needs `idle > notified` to reuse one (tokio's
    /// `num_notify`).
    notified: usize,
    /// Threads that take tasks: counted from their spawn until they leave the work
    /// loop, under this lock, so that a leaving thread never holds a place of
    /// `max_threads` (tokio's `num_th`).
    threads: usize,
    /// Threads started and not yet past their `on_thread_stop`: what `shutdown` waits
    /// for. At least `threads`.
    alive: usize,
    shutdown: bool,
    handles: Vec<thread::JoinHandle<()>>,
}

struct Inner {
    state: Mutex<State>,
    cv: Condvar,
    /// Signalled when a thread has fully exited (after `on_thread_stop`).
    exited: Condvar,
    max_threads: usize,
    keep_alive: Duration,
    config: ThreadConfig,
    /// tokio_unstable: the runtime's hooks (its terminate hook runs for blocking tasks).
    #[cfg(tokio_unstable)]
    tasks: Option<Arc<crate::runtime::hooks::RuntimeTasks>>,
}

/// The blocking pool of one runtime.
#[derive(Clone)]
pub(crate) struct BlockingPool {
    inner: Arc<Inner>,
}

impl BlockingPool {
    pub(crate) fn new(
        max_threads: usize,
        keep_alive: Duration,
        config: ThreadConfig,
        #[cfg(tokio_unstable)] tasks: Option<Arc<crate::runtime::hooks::RuntimeTasks>>,
    ) -> BlockingPool {
        BlockingPool {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    idle: 0,
                    notified: 0,
                    threads: 0,
                    alive: 0,
                    shutdown: false,
                    handles: Vec::new(),
                }),
                cv: Condvar::new(),
                exited: Condvar::new(),
                max_threads,
                keep_alive,
                config,
                #[cfg(tokio_unstable)]
                tasks,
            }),
        }
    }

    /// tokio_unstable metrics: the pool's threads, those idle, and the tasks queued
    /// for a thread.
    #[cfg(tokio_unstable)]
    pub(crate) fn stats(&self) -> (usize, usize, usize) {
        let st = lock(&self.inner.state);
        (st.threads, st.idle, st.queue.len())
    }

    /// Panics, as tokio does, if no pool thread exists and the OS refuses to start one:
    /// the task would otherwise wait for a thread that never comes.
    #[track_caller]
    pub(crate) fn spawn<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.spawn_at(f, Origin::caller())
    }

    /// `spawn` from a spawn at `origin`.
    pub(crate) fn spawn_at<F, R>(&self, f: F, origin: Origin) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.spawn_with_id(move |_| f(), origin.blocking::<F>())
    }

    /// `spawn` for a closure that needs its own task id, spawned at `origin`.
    #[track_caller]
    pub(crate) fn spawn_with_id<F, R>(&self, f: F, origin: Origin) -> JoinHandle<R>
    where
        F: FnOnce(Id) -> R + Send + 'static,
        R: Send + 'static,
    {
        let id = Id::next();
        // A blocking task takes part in its runtime's terminate hook only, as on tokio:
        // it is neither counted nor announced, and its one poll runs no poll hook.
        #[cfg(tokio_unstable)]
        let origin = Origin {
            runtime: self
                .inner
                .tasks
                .as_ref()
                .filter(|tasks| tasks.hooks.terminate.is_some())
                .cloned(),
            poll_hooks: false,
            ..origin
        };
        let future = identify(BlockingTask(Some(move || f(id))), id, origin);
        // SAFETY: the future is `Send`: it may be dropped unrun on this thread (the
        // pool has shut down), and is otherwise polled, once, and dropped by the one
        // pool thread that takes its runnable.
        let (runnable, task) = unsafe { spawn_unchecked(self, future, None, id.as_u64()) };
        let task = JoinHandle::new(task);
        if let Err(e) = self.schedule(runnable) {
            panic!("OS can't spawn worker thread: {e}");
        }
        task
    }

    /// Queues `runnable` for an idle thread, or a new one. Fails when the OS refuses a
    /// new thread and no pool thread will ever take the task: none exists, or the error
    /// is not a temporary one (tokio's rule). The task is then dropped, not queued.
    fn schedule(&self, runnable: PoolRunnable) -> std::io::Result<()> {
        let mut st = lock(&self.inner.state);
        if st.shutdown {
            // Dropping closes the task: its JoinHandle reports cancellation.
            drop(st);
            drop(runnable);
            return Ok(());
        }
        st.queue.push_back(runnable);
        if st.idle > st.notified {
            st.notified += 1;
            self.inner.cv.notify_one();
        } else if st.threads < self.inner.max_threads {
            st.threads += 1;
            let index = st.threads;
            match self.spawn_thread(index) {
                Ok(h) => {
                    st.alive += 1;
                    st.handles.retain(|h| !h.is_finished());
                    st.handles.push(h);
                }
                Err(e) => {
                    st.threads -= 1;
                    if st.threads == 0 || e.kind() != std::io::ErrorKind::WouldBlock {
                        // Taken back out of the queue, dropped once the lock is released.
                        let orphan = st.queue.pop_back();
                        drop(st);
                        drop(orphan);
                        return Err(e);
                    }
                    // A busy pool thread takes the task when it is free.
                }
            }
        }
        Ok(())
    }

    fn spawn_thread(&self, index: usize) -> std::io::Result<thread::JoinHandle<()>> {
        let inner = self.inner.clone();
        let body = move || work(&inner);
        let inner = self.inner.clone();
        // After `on_stop`: only then is the thread gone as far as `shutdown` is concerned.
        let exited = move || {
            lock(&inner.state).alive -= 1;
            inner.exited.notify_all();
        };
        self.inner.config.spawn(index, body, exited)
    }

    /// Stops accepting work; waits up to `timeout` (forever if `None`) for running
    /// and queued tasks to finish and the threads to exit.
    pub(crate) fn shutdown(&self, timeout: Option<Duration>) {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut st = lock(&self.inner.state);
        st.shutdown = true;
        self.inner.cv.notify_all();
        // A blocking task that drops its own runtime must not wait for itself.
        let me = thread::current().id();
        let own = usize::from(st.handles.iter().any(|h| h.thread().id() == me));
        while st.alive > own {
            let wait = match deadline {
                None => Duration::from_secs(3600),
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(w) if !w.is_zero() => w,
                    _ => break,
                },
            };
            st = unpoison(self.inner.exited.wait_timeout(st, wait)).0;
        }
        let handles = std::mem::take(&mut st.handles);
        drop(st);
        for h in handles {
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }
}

/// A blocking task's future: it calls the closure at its first poll, and is ready.
struct BlockingTask<F>(Option<F>);

impl<F> Unpin for BlockingTask<F> {}

impl<F: FnOnce() -> R, R> Future for BlockingTask<F> {
    type Output = R;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<R> {
        let f = self.0.take().expect("a blocking task is polled once");
        Poll::Ready(f())
    }
}

// SAFETY: no thread is the owner of a pool task between turns (`with_current` gives no
// local half), and a pool task has exactly one turn: the local runnable made at spawn,
// handed once through the pool's queue to the thread that runs it (its future is ready
// at its first poll, so it is never queued again). Every wake is remote, and
// `schedule_remote` drops it, which only releases a reference: a wake cannot add a
// turn (an abort before the turn is seen by the turn itself).
unsafe impl Schedule for BlockingPool {
    type Local = TaskList;

    fn with_current<R>(f: impl FnOnce(Option<&TaskList>) -> R) -> R {
        f(None)
    }

    fn is_local(&self, _: &TaskList) -> bool {
        false
    }

    /// Never called: only a wake on the owner's thread, or a poll that returned
    /// `Pending`, queues a task locally, and neither happens to a pool task.
    fn schedule_local(_: &TaskList, _: PoolRunnable) {
        unreachable!("a blocking task is never queued on its own thread");
    }

    fn schedule_remote(&self, runnable: PoolRunnable) {
        drop(runnable);
    }

    fn task_list(local: &TaskList) -> &TaskList {
        local
    }
}

/// Work a blocking task left to run after its run is over.
type AfterRun = Vec<Box<dyn FnOnce()>>;

thread_local! {
    /// On a pool thread: what the task being run asked to do once its run is over.
    static AFTER_RUN: RefCell<Option<AfterRun>> = const { RefCell::new(None) };
}

/// Runs `f` once the blocking task running on this thread is over: its output published
/// and its handle's task woken. Off the pool's threads, `f` runs at once.
pub(crate) fn after_this_task(f: impl FnOnce() + 'static) {
    let mut f: Option<Box<dyn FnOnce()>> = Some(Box::new(f));
    let _ = AFTER_RUN.try_with(|after| {
        if let Some(list) = after.borrow_mut().as_mut() {
            list.extend(f.take());
        }
    });
    // Not deferred (not a pool thread, or its thread-locals are gone): now.
    if let Some(f) = f {
        f();
    }
}

fn work(inner: &Inner) {
    AFTER_RUN.set(Some(Vec::new()));
    // What `Runnable::run` needs of its executor's local half; a blocking task never
    // waits, so it stays empty.
    let local = TaskList::default();
    let mut st = lock(&inner.state);
    loop {
        if let Some(r) = st.queue.pop_front() {
            drop(st);
            // SAFETY: the task's one turn, handed to this thread alone through the
            // queue's lock; `local` is this thread's own (see `Schedule` above).
            unsafe { r.run(&local) };
            let after = AFTER_RUN.with(|after| after.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default());
            for f in after {
                f();
            }
            debug_assert!(local.is_empty(), "a blocking task waited");
            st = lock(&inner.state);
            continue;
        }
        if st.shutdown {
            break;
        }
        st.idle += 1;
        let (guard, timeout) = unpoison(inner.cv.wait_timeout(st, inner.keep_alive));
        st = guard;
        st.idle -= 1;
        if st.notified > 0 {
            st.notified -= 1;
        } else if timeout.timed_out() && st.queue.is_empty() && !st.shutdown {
            break;
        }
    }
    st.threads -= 1;
}
