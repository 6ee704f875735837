//! `LocalSet` as an executor of the reactor's tasks, at its edges: closing its tasks
//! while their destructors change this thread's context, being driven from inside one
//! of its own tasks, and wakes from other threads meanwhile. Each test polls the set by
//! hand, without a runtime, so that it controls every turn.

use std::cell::RefCell;
use std::future::Future;
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Waker};
use std::thread;

use netloop::task::LocalSet;
use netloop_tests::{WAIT, test_body};

/// Polls `future` up to `turns` times with a waker that does nothing.
fn poll_turns<F: Future>(future: F, turns: usize) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    let mut future = pin!(future);
    (0..turns).find_map(|_| match future.as_mut().poll(&mut cx) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    })
}

/// Pending for ever; keeps its latest waker where the test can take it.
struct KeepWaker(Arc<Mutex<Option<Waker>>>);

impl Future for KeepWaker {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        *self.0.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Counts the drops of the values it hands out.
#[derive(Clone, Default)]
struct Drops(Rc<RefCell<Vec<&'static str>>>);

struct DropNote(&'static str, Drops);

impl Drop for DropNote {
    fn drop(&mut self) {
        self.1.0.borrow_mut().push(self.0);
    }
}

impl Drops {
    fn note(&self, name: &'static str) -> DropNote {
        DropNote(name, self.clone())
    }

    fn names(&self) -> Vec<&'static str> {
        let mut names = self.0.borrow().clone();
        names.sort_unstable();
        names
    }
}

#[test]
fn a_set_closes_every_task_even_when_a_destructor_leaves_another_sets_context() {
    // A task's future holds the guard of another set entered outside it: dropping the
    // future restores that outer context in the middle of the set's drop. Every task,
    // waiting or queued, must still be closed, and leave the set's list.
    test_body(|| {
        let set = LocalSet::new();
        let other = LocalSet::new();
        let drops = Drops::default();
        let guard = other.enter(); // restores "no set" when dropped
        let waker = Arc::new(Mutex::new(None));
        let (note, keep) = (drops.note("queued"), KeepWaker(waker.clone()));
        let queued = set.spawn_local(async move {
            let _note = note;
            let _guard = guard;
            keep.await
        });
        let note = drops.note("waiting");
        let waiting = set.spawn_local(async move {
            let _note = note;
            std::future::pending::<()>().await
        });
        poll_turns(set.run_until(std::future::pending::<()>()), 1);
        // The first task is woken on the set's thread, with the set entered: queued and
        // listed at once when the set is dropped.
        {
            let _entered = set.enter();
            waker.lock().unwrap().take().expect("polled once").wake();
        }
        drop(set);
        assert_eq!(drops.names(), ["queued", "waiting"]);
        assert!(queued.is_finished() && waiting.is_finished());
        drop(other);
    });
}

#[test]
fn a_wake_from_another_thread_during_a_nested_turn_is_not_lost() {
    // The set is driven from inside one of its own tasks; a wake of that task arrives
    // from another thread while it is being polled, and the nested turn runs it.
    test_body(|| {
        let set = Rc::new(LocalSet::new());
        let inner = set.clone();
        let (tx, rx) = futures::channel::oneshot::channel::<u32>();
        let mut tx = Some(tx);
        let nested = set.spawn_local(async move {
            let mut rx = rx;
            inner
                .run_until(std::future::poll_fn(move |cx| {
                    if let Some(tx) = tx.take() {
                        // Registers this task's waker, then the other thread sends and
                        // wakes it before this poll returns.
                        assert!(Pin::new(&mut rx).poll(cx).is_pending());
                        thread::spawn(move || tx.send(4).unwrap()).join().unwrap();
                        return Poll::Pending;
                    }
                    Pin::new(&mut rx).poll(cx).map(Result::unwrap)
                }))
                .await
        });
        poll_turns(set.run_until(std::future::pending::<()>()), 50);
        assert!(nested.is_finished(), "the task's wake was lost");
    });
}

#[test]
fn a_wake_from_another_thread_returns_when_the_set_is_driven_by_its_own_task() {
    // The driver's waker is then a task of the set: waking it must not wait on the lock
    // that the wake of the other task holds.
    test_body(|| {
        let set = Rc::new(LocalSet::new());
        let waker = Arc::new(Mutex::new(None));
        let _waiting = set.spawn_local(KeepWaker(waker.clone()));
        let inner = set.clone();
        let _driver = set.spawn_local(async move { inner.run_until(std::future::pending::<()>()).await });
        poll_turns(set.run_until(std::future::pending::<()>()), 1);
        let (done, returned) = mpsc::channel();
        let w = waker.lock().unwrap().take().expect("polled once");
        thread::spawn(move || {
            w.wake();
            done.send(()).unwrap();
        });
        returned.recv_timeout(WAIT).expect("the remote wake never returned");
    });
}

/// A spawn into a set that was dropped while an enter guard kept its context alive is
/// closed at once: nothing would ever run it (tokio's closed set cancels it too).
#[test]
fn a_spawn_into_a_dropped_set_through_a_kept_guard_is_cancelled() {
    netloop_tests::test_body(|| {
        let rt = netloop_tests::current();
        let set = netloop::task::LocalSet::new();
        let guard = set.enter();
        drop(set);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let handle = netloop::task::spawn_local(async move {
            let _keep = tx;
        });
        assert!(
            matches!(rx.try_recv(), Err(std::sync::mpsc::TryRecvError::Disconnected)),
            "the future was dropped at the spawn"
        );
        let err = rt.block_on(handle).unwrap_err();
        assert!(err.is_cancelled());
        drop(guard);
    });
}
