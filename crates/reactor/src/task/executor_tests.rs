//! The task layer under an executor that is not a loop: a hand-driven one, written
//! against the public [`Schedule`] trait as another crate would (the scheduler's
//! blocking pool and `LocalSet` are two). Runs under miri.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::thread;

use super::{Runnable, Schedule, TaskList, cancelled, spawn_unchecked};

/// An executor driven by hand on the thread that made it.
#[derive(Clone)]
struct Manual(Arc<Mutex<VecDeque<Runnable<Manual>>>>);

struct ManualLocal {
    executor: Manual,
    queue: RefCell<VecDeque<Runnable<Manual>>>,
    tasks: TaskList,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<ManualLocal>>> = const { RefCell::new(None) };
}

// SAFETY: the local half is only reachable through this thread's `CURRENT`, and the
// test runs every runnable on the thread that made it (`turn`).
unsafe impl Schedule for Manual {
    type Local = ManualLocal;

    fn with_current<R>(f: impl FnOnce(Option<&ManualLocal>) -> R) -> R {
        let current = CURRENT.with(|c| c.borrow().clone());
        f(current.as_deref())
    }

    fn is_local(&self, local: &ManualLocal) -> bool {
        Arc::ptr_eq(&self.0, &local.executor.0)
    }

    fn schedule_local(local: &ManualLocal, runnable: Runnable<Self>) {
        // Never dropped here, even while stopping: see the trait's rule.
        local.queue.borrow_mut().push_back(runnable);
    }

    fn schedule_remote(&self, runnable: Runnable<Self>) {
        self.0.lock().unwrap().push_back(runnable);
    }

    fn task_list(local: &ManualLocal) -> &TaskList {
        &local.tasks
    }
}

fn executor() -> Rc<ManualLocal> {
    let local = Rc::new(ManualLocal {
        executor: Manual(Arc::default()),
        queue: RefCell::default(),
        tasks: TaskList::default(),
    });
    CURRENT.with(|c| *c.borrow_mut() = Some(local.clone()));
    local
}

fn spawn<F: Future + 'static>(local: &ManualLocal, future: F) -> super::Task<F::Output> {
    // SAFETY: on the executor's thread, where its runnables are run and dropped.
    let (runnable, task) = unsafe { spawn_unchecked(&local.executor, future, Some(local), 9) };
    Manual::schedule_local(local, runnable);
    task
}

/// Runs everything queued, remote wakes included; returns the turns taken.
fn turn(local: &ManualLocal) -> usize {
    let mut turns = 0;
    loop {
        let remote = local.executor.0.lock().unwrap().pop_front();
        let next = remote.or_else(|| local.queue.borrow_mut().pop_front());
        let Some(runnable) = next else { return turns };
        // SAFETY: `local` is the executor's local half, on its thread.
        unsafe { runnable.run(local) };
        turns += 1;
    }
}

/// Stops the executor as a loop terminates: queues every waiting task, then closes
/// every queued one (their destructors may queue more) until none is left.
fn stop(local: &ManualLocal) {
    // SAFETY: the executor's thread, nothing polled meanwhile.
    unsafe { local.tasks.queue_all::<Manual>(local) };
    loop {
        let next = local.queue.borrow_mut().pop_front();
        let Some(runnable) = next else { break };
        // SAFETY: `local` is the executor's local half, on its thread.
        unsafe { runnable.cancel(local) };
    }
}

/// Pending until its waker, sent to another thread, is woken from there.
fn woken_from_another_thread() -> impl Future<Output = u32> {
    let mut sent = false;
    poll_fn(move |cx| {
        if sent {
            return Poll::Ready(3);
        }
        sent = true;
        let waker: Waker = cx.waker().clone();
        thread::spawn(move || waker.wake()).join().unwrap();
        Poll::Pending
    })
}

#[test]
fn a_task_woken_from_another_thread_runs_on_its_executor_and_keeps_its_id() {
    let local = executor();
    let mut task = spawn(&local, woken_from_another_thread()).fallible();
    assert_eq!(task.id(), 9);
    assert_eq!(turn(&local), 2, "the first poll, then the remote wake's turn");
    assert!(task.is_finished());
    let waker = Waker::noop();
    let out = task.poll_outcome(&mut std::task::Context::from_waker(waker));
    assert!(matches!(out, Poll::Ready(Some(Ok(3)))));
    CURRENT.with(|c| c.borrow_mut().take());
}

/// Sets its flag when dropped.
struct Flag(Rc<Cell<bool>>);

impl Drop for Flag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// A task that waits forever, holding a [`Flag`].
fn spawn_waiting(local: &ManualLocal) -> (super::FallibleTask<()>, Rc<Cell<bool>>) {
    let dropped = Rc::new(Cell::new(false));
    let flag = Flag(dropped.clone());
    let task = spawn(local, async move {
        let _flag = flag;
        std::future::pending::<()>().await
    });
    (task.fallible(), dropped)
}

#[test]
fn an_abort_drops_a_waiting_tasks_future_at_its_next_turn() {
    let local = executor();
    let (task, dropped) = spawn_waiting(&local);
    turn(&local);
    assert_eq!(local.tasks.len(), 1, "a waiting task is listed");
    task.abort();
    assert!(!dropped.get(), "never in the middle of the abort call");
    assert_eq!(turn(&local), 1, "the abort's turn drops the future");
    assert!(dropped.get());
    assert!(local.tasks.is_empty());
    assert!(task.is_finished());
    CURRENT.with(|c| c.borrow_mut().take());
}

#[test]
fn stopping_queues_the_list_then_closes_every_waiting_task_outside_any_wake() {
    let local = executor();
    let waiting: Vec<_> = (0..3).map(|_| spawn_waiting(&local)).collect();
    turn(&local);
    assert_eq!(local.tasks.len(), 3);
    // SAFETY: the executor's thread, nothing polled meanwhile.
    unsafe { local.tasks.queue_all::<Manual>(&local) };
    assert!(local.tasks.is_empty());
    assert!(
        waiting.iter().all(|(_, dropped)| !dropped.get()),
        "no future is dropped inside a wake"
    );
    stop(&local);
    for (mut task, dropped) in waiting {
        assert!(dropped.get());
        let out = task.poll_outcome(&mut std::task::Context::from_waker(Waker::noop()));
        assert!(matches!(out, Poll::Ready(None)), "closed without an outcome");
    }
    CURRENT.with(|c| c.borrow_mut().take());
}

#[test]
fn a_cancelled_handle_is_finished_with_its_id() {
    let mut task = cancelled::<String>(42).fallible();
    assert!(task.is_finished());
    assert_eq!(task.id(), 42);
    assert_eq!(task.abort_handle().id(), 42);
    let out = task.poll_outcome(&mut std::task::Context::from_waker(Waker::noop()));
    assert!(matches!(out, Poll::Ready(None)));
}

#[test]
fn cancelling_the_list_closes_waiting_tasks_whatever_the_thread_reports() {
    let local = executor();
    let waiting: Vec<_> = (0..3).map(|_| spawn_waiting(&local)).collect();
    turn(&local);
    // `cancel_all` names the executor's local half; it reads nothing of the thread's.
    CURRENT.with(|c| c.borrow_mut().take());
    // SAFETY: the executor's thread and local half, nothing polled meanwhile.
    unsafe { local.tasks.cancel_all::<Manual>(&local) };
    assert!(local.tasks.is_empty());
    for (mut task, dropped) in waiting {
        assert!(dropped.get());
        let out = task.poll_outcome(&mut std::task::Context::from_waker(Waker::noop()));
        assert!(matches!(out, Poll::Ready(None)));
    }
}

/// Holds `lock` across waking `peer` in its destructor, as h2's `RecvStream` does with
/// its streams' lock and its connection task.
struct WakesUnderLock {
    lock: Rc<std::sync::Mutex<Option<Waker>>>,
}

impl Drop for WakesUnderLock {
    fn drop(&mut self) {
        let peer = self.lock.lock().unwrap();
        if let Some(waker) = peer.as_ref() {
            waker.wake_by_ref();
        }
    }
}

/// Takes `lock` in its destructor, as h2's `Connection` does; records whether it could.
struct TakesLock {
    lock: Rc<std::sync::Mutex<Option<Waker>>>,
    took: Rc<Cell<Option<bool>>>,
}

impl Drop for TakesLock {
    fn drop(&mut self) {
        // `try_lock`: inside the other destructor's wake this would deadlock.
        self.took.set(Some(self.lock.try_lock().is_ok()));
    }
}

#[test]
fn a_destructor_that_wakes_another_task_under_a_lock_does_not_run_that_tasks_destructor() {
    let local = executor();
    let lock = Rc::new(std::sync::Mutex::new(None::<Waker>));
    let took = Rc::new(Cell::new(None));
    let (l, t) = (lock.clone(), took.clone());
    // The connection: parks its waker where the stream's destructor finds it.
    let connection = spawn(&local, async move {
        let _conn = TakesLock {
            lock: l.clone(),
            took: t,
        };
        poll_fn(|cx| {
            *l.lock().unwrap() = Some(cx.waker().clone());
            Poll::<()>::Pending
        })
        .await
    });
    let l = lock.clone();
    let stream = spawn(&local, async move {
        let _stream = WakesUnderLock { lock: l };
        std::future::pending::<()>().await
    });
    turn(&local);
    assert_eq!(local.tasks.len(), 2);
    stop(&local);
    assert_eq!(
        took.get(),
        Some(true),
        "the connection's destructor ran outside the stream's lock"
    );
    assert!(local.tasks.is_empty());
    drop((connection, stream));
    CURRENT.with(|c| c.borrow_mut().take());
}
