//! One handle type for every task: a `JoinHandle` is one pointer, whether its task runs
//! on a loop, on the blocking pool or in a `LocalSet`, or was refused at spawn; and
//! each kind keeps tokio's abort, panic and id semantics.

use std::cell::Cell;
use std::mem::size_of;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use netloop::task::{self, AbortHandle, JoinHandle, LocalSet};
use netloop::time;
use netloop_tests::{WAIT, multi, one_blocking_thread, panic_text, test_body};

#[test]
fn a_join_handle_and_an_abort_handle_are_one_pointer_wide() {
    assert_eq!(size_of::<JoinHandle<()>>(), size_of::<usize>());
    assert_eq!(size_of::<JoinHandle<[u8; 1024]>>(), size_of::<usize>());
    assert_eq!(size_of::<Option<JoinHandle<()>>>(), size_of::<usize>());
    assert_eq!(size_of::<AbortHandle>(), size_of::<usize>());
}

#[test]
fn a_refused_spawn_keeps_its_id_and_resolves_as_cancelled() {
    test_body(|| {
        let rt = multi();
        let handle = rt.handle().clone();
        drop(rt);
        let refused = handle.spawn(async { 1 });
        assert!(refused.is_finished());
        let abort = refused.abort_handle();
        assert!(abort.is_finished());
        assert!(!abort.is_aborted(), "a refused task was never aborted");
        assert_eq!(abort.id(), refused.id());
        let id = refused.id();
        let err = futures::executor::block_on(refused).unwrap_err();
        assert!(err.is_cancelled());
        assert_eq!(err.id(), id);
    });
}

#[test]
fn a_blocking_task_aborted_before_it_starts_never_runs() {
    test_body(|| {
        let rt = one_blocking_thread();
        let (release, hold) = mpsc::channel::<()>();
        let ran = Arc::new(AtomicBool::new(false));
        rt.block_on(async {
            // The pool's one thread is held, so the second task waits in the queue.
            let first = task::spawn_blocking(move || hold.recv_timeout(WAIT).is_ok());
            let second = task::spawn_blocking({
                let ran = ran.clone();
                move || ran.store(true, Ordering::SeqCst)
            });
            second.abort();
            release.send(()).unwrap();
            assert!(first.await.unwrap(), "the first task was released");
            let err = time::timeout(WAIT, second).await.unwrap().unwrap_err();
            assert!(err.is_cancelled());
        });
        assert!(!ran.load(Ordering::SeqCst), "an aborted blocking task ran");
    });
}

#[test]
fn a_blocking_task_aborted_while_it_runs_still_gives_its_output() {
    test_body(|| {
        let rt = multi();
        let (started_tx, started) = mpsc::channel();
        let (release, hold) = mpsc::channel::<()>();
        rt.block_on(async {
            let blocking = task::spawn_blocking(move || {
                started_tx.send(()).unwrap();
                hold.recv_timeout(WAIT).unwrap();
                7
            });
            started.recv_timeout(WAIT).unwrap();
            blocking.abort();
            release.send(()).unwrap();
            // tokio: a blocking task cannot be stopped once it runs; its output stands.
            assert_eq!(time::timeout(WAIT, blocking).await.unwrap().unwrap(), 7);
        });
    });
}

#[test]
fn a_blocking_task_sees_its_own_id_and_its_panic_is_a_join_error() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let handle = task::spawn_blocking(task::id);
            let id = handle.id();
            assert_eq!(handle.await.unwrap(), id);

            let handle = task::spawn_blocking(|| -> u32 { std::panic::panic_any("blocking boom") });
            let id = handle.id();
            let err = handle.await.unwrap_err();
            assert!(err.is_panic());
            assert_eq!(err.id(), id);
            assert_eq!(panic_text(&*err.into_panic()), "blocking boom");
        });
    });
}

#[test]
fn a_blocking_task_after_shutdown_resolves_as_cancelled() {
    test_body(|| {
        let rt = multi();
        let handle = rt.handle().clone();
        drop(rt);
        let refused = handle.spawn_blocking(|| 1);
        let err = futures::executor::block_on(refused).unwrap_err();
        assert!(err.is_cancelled());
    });
}

#[test]
fn a_local_set_task_woken_from_another_thread_runs_on_the_sets_thread() {
    test_body(|| {
        let rt = multi();
        let local = LocalSet::new();
        let here = thread::current().id();
        let (tx, rx) = futures::channel::oneshot::channel::<u32>();
        let polled_on = local.block_on(&rt, async move {
            let task = task::spawn_local(async move {
                let value = rx.await.unwrap();
                (value, thread::current().id())
            });
            task::yield_now().await; // the task now waits
            thread::spawn(move || tx.send(5).unwrap());
            time::timeout(WAIT, task).await.unwrap().unwrap()
        });
        assert_eq!(polled_on, (5, here));
    });
}

#[test]
fn a_local_set_task_knows_its_id_and_an_abort_drops_it_on_the_sets_thread() {
    test_body(|| {
        let rt = multi();
        let local = LocalSet::new();
        let here = thread::current().id();
        let dropped_on = Rc::new(Cell::new(None));
        struct RecordDrop(Rc<Cell<Option<thread::ThreadId>>>);
        impl Drop for RecordDrop {
            fn drop(&mut self) {
                self.0.set(Some(thread::current().id()));
            }
        }
        local.block_on(&rt, async {
            let ids = task::spawn_local(async { task::id() });
            let id = ids.id();
            assert_eq!(ids.await.unwrap(), id);

            let guard = RecordDrop(dropped_on.clone());
            let waiting = task::spawn_local(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            });
            task::yield_now().await;
            let abort = waiting.abort_handle();
            // Aborted from another thread, as an `AbortHandle` may be.
            thread::spawn(move || abort.abort()).join().unwrap();
            let err = time::timeout(WAIT, waiting).await.unwrap().unwrap_err();
            assert!(err.is_cancelled());
        });
        assert_eq!(dropped_on.get(), Some(here));
    });
}

#[test]
fn a_dropped_local_sets_tasks_resolve_as_cancelled_and_later_wakes_are_harmless() {
    test_body(|| {
        let rt = multi();
        let local = LocalSet::new();
        let (tx, rx) = futures::channel::oneshot::channel::<u32>();
        let waiting = local.spawn_local(async move { rx.await.unwrap() });
        local.block_on(&rt, task::yield_now()); // polled once: it now waits on `rx`
        drop(local);
        assert!(waiting.is_finished());
        // The task's future (and `rx`) is gone: the send fails, and wakes nobody.
        thread::spawn(move || assert!(tx.send(1).is_err())).join().unwrap();
        let err = futures::executor::block_on(waiting).unwrap_err();
        assert!(err.is_cancelled());
    });
}

#[test]
fn a_local_set_awaited_to_the_end_waits_for_tasks_woken_from_other_threads() {
    test_body(|| {
        let rt = multi();
        let local = LocalSet::new();
        let done = Rc::new(Cell::new(0));
        for i in 0..8u64 {
            let done = done.clone();
            local.spawn_local(async move {
                let (tx, rx) = futures::channel::oneshot::channel();
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(i));
                    let _ = tx.send(());
                });
                rx.await.unwrap();
                done.set(done.get() + 1);
            });
        }
        rt.block_on(async { time::timeout(WAIT, local).await.unwrap() });
        assert_eq!(done.get(), 8);
    });
}
