//! `task`: spawn and friends, `JoinHandle`, `JoinError`, `JoinSet`, `LocalSet`.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::Context;
use std::thread;
use std::time::Duration;

use netloop::task::{self, JoinError, JoinSet, LocalSet};
use netloop::time;
use netloop_tests::{DropSignal, WAIT, current, multi, single_loop, test_body, thread_name};

/// Panics with a `&'static str` payload.
fn boom(msg: &'static str) -> u32 {
    std::panic::panic_any(msg)
}

#[test]
fn spawn_returns_the_output() {
    test_body(|| {
        let rt = multi();
        let v = rt.block_on(async {
            let a = netloop::spawn(async { 1 });
            let b = task::spawn(async {
                time::sleep(Duration::from_millis(1)).await;
                String::from("two")
            });
            (a.await.unwrap(), b.await.unwrap())
        });
        assert_eq!(v, (1, "two".to_owned()));
    });
}

#[test]
fn spawn_on_pins_a_task_to_the_given_loop() {
    test_body(|| {
        let rt = multi();
        let loops: Vec<_> = rt.handle().event_loops().iter().cloned().collect();
        rt.block_on(async {
            for (i, l) in loops.iter().enumerate() {
                let me = l.clone();
                let h = task::spawn_on(l, async move {
                    let before = thread::current().id();
                    for _ in 0..5 {
                        time::sleep(Duration::from_millis(1)).await;
                        task::yield_now().await;
                        assert_eq!(thread::current().id(), before, "a task never moves");
                    }
                    me.in_event_loop()
                });
                assert!(h.await.unwrap(), "the task ran on loop {i}");
            }
        });
    });
}

#[test]
fn yield_now_lets_queued_tasks_run_first() {
    test_body(|| {
        let rt = single_loop();
        let order = rt.block_on(async {
            netloop::spawn(async {
                let order = Arc::new(Mutex::new(Vec::new()));
                let o = order.clone();
                // Queued on this loop behind us.
                let other = netloop::spawn(async move { o.lock().unwrap().push("other") });
                order.lock().unwrap().push("before yield");
                task::yield_now().await;
                order.lock().unwrap().push("after yield");
                other.await.unwrap();
                Arc::try_unwrap(order).unwrap().into_inner().unwrap()
            })
            .await
            .unwrap()
        });
        assert_eq!(order, ["before yield", "other", "after yield"]);
    });
}

#[test]
fn a_task_that_keeps_yielding_does_not_starve_others() {
    test_body(|| {
        let rt = single_loop();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let spinner = rt.spawn(async move {
            let mut n = 0u64;
            while !s.load(Ordering::SeqCst) {
                task::yield_now().await;
                n += 1;
            }
            n
        });
        // Timers and other tasks on the same (only) loop still get their turn.
        let v = rt.block_on(async {
            time::sleep(Duration::from_millis(10)).await;
            netloop::spawn(async { 9 }).await.unwrap()
        });
        stop.store(true, Ordering::SeqCst);
        assert_eq!(v, 9);
        assert!(rt.block_on(spinner).unwrap() > 0);
    });
}

#[test]
fn dropping_a_join_handle_detaches_the_task() {
    test_body(|| {
        let rt = multi();
        let (tx, rx) = mpsc::channel();
        let h = rt.spawn(async move {
            time::sleep(Duration::from_millis(20)).await;
            tx.send("still ran").unwrap();
        });
        drop(h);
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), "still ran");
    });
}

#[test]
fn is_finished_and_abort_after_completion() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let (tx, rx) = futures::channel::oneshot::channel::<()>();
            let mut h = netloop::spawn(async move {
                rx.await.unwrap();
                7
            });
            task::yield_now().await;
            assert!(!h.is_finished());
            tx.send(()).unwrap();
            // Wait for it without consuming the handle.
            time::timeout(Duration::from_secs(3), async {
                while !h.is_finished() {
                    time::sleep(Duration::from_millis(1)).await;
                }
            })
            .await
            .expect("the task finishes");
            // Aborting a finished task changes nothing: its output is still there.
            h.abort();
            assert_eq!((&mut h).await.unwrap(), 7);
            assert!(h.is_finished());
            assert!(!format!("{h:?}").is_empty());
        });
    });
}

#[test]
fn abort_before_the_first_poll() {
    test_body(|| {
        let rt = current();
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        // Nothing drives a current-thread runtime until block_on: the task is not polled.
        let h = rt.spawn(async move { r.store(true, Ordering::SeqCst) });
        h.abort();
        let err = rt.block_on(h).unwrap_err();
        assert!(err.is_cancelled());
        assert!(!ran.load(Ordering::SeqCst), "an aborted task never started");
    });
}

#[test]
fn join_error_accessors() {
    test_body(|| {
        let rt = multi();
        let (panicked, cancelled) = rt.block_on(async {
            let panicked = netloop::spawn(async { boom("kaboom") }).await.unwrap_err();
            let h = netloop::spawn(std::future::pending::<()>());
            let id = h.id();
            h.abort();
            let cancelled = h.await.unwrap_err();
            assert_eq!(cancelled.id(), id);
            (panicked, cancelled)
        });
        assert!(panicked.is_panic() && !panicked.is_cancelled());
        assert!(cancelled.is_cancelled() && !cancelled.is_panic());
        assert!(format!("{panicked}").contains("kaboom"));
        assert!(format!("{panicked:?}").contains("Panic"));
        assert!(format!("{cancelled}").contains("cancelled"));
        let io: std::io::Error = JoinError::try_into_panic(cancelled).unwrap_err().into();
        assert!(!io.to_string().is_empty());
        assert_eq!(
            panicked.try_into_panic().unwrap().downcast_ref::<&str>(),
            Some(&"kaboom")
        );
        // into_panic on a cancellation panics, as in tokio.
        let cancelled = rt
            .block_on(async {
                let h = netloop::spawn(std::future::pending::<()>());
                h.abort();
                h.await
            })
            .unwrap_err();
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cancelled.into_panic())).is_err());
    });
}

#[test]
fn task_ids_are_unique() {
    test_body(|| {
        let rt = multi();
        let ids: HashSet<_> = (0..100).map(|_| rt.spawn(async {}).id()).collect();
        assert_eq!(ids.len(), 100);
    });
}

#[test]
fn task_id_is_the_polled_tasks_and_cleared_after_a_panicking_poll() {
    test_body(|| {
        let rt = single_loop();
        let handle = rt.spawn(async { (task::id(), task::try_id()) });
        let id = handle.id();
        assert_eq!(rt.block_on(handle).unwrap(), (id, Some(id)));

        // A poll that panics must not leave its id behind on the loop's thread.
        let bad = rt.spawn(async { panic!("boom after setting the id") });
        assert!(rt.block_on(bad).unwrap_err().is_panic());
        let event_loop = rt.handle().event_loops().get(0).unwrap().clone();
        let (tx, rx) = mpsc::channel();
        event_loop.execute(move || tx.send(task::try_id()).unwrap()).unwrap();
        assert_eq!(
            rx.recv_timeout(WAIT).unwrap(),
            None,
            "no task is being polled in a closure"
        );
        assert_eq!(task::try_id(), None, "nor on the test thread");
    });
}

#[test]
fn join_set_joins_in_completion_order() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let mut set = JoinSet::new();
            assert!(set.is_empty());
            for (i, ms) in [(0u32, 60u64), (1, 5), (2, 30)] {
                set.spawn(async move {
                    time::sleep(Duration::from_millis(ms)).await;
                    i
                });
            }
            assert_eq!(set.len(), 3);
            let mut order = Vec::new();
            while let Some(r) = time::timeout(Duration::from_secs(3), set.join_next()).await.unwrap() {
                order.push(r.unwrap());
            }
            assert_eq!(order, [1, 2, 0]);
            assert!(set.is_empty());
            assert!(set.join_next().await.is_none());
            assert!(set.try_join_next().is_none());
        });
    });
}

#[test]
fn join_set_drops_a_replaced_waker_after_releasing_its_lock() {
    // The replaced waker's destructor drives the runtime that owns the set's task, so
    // the task finishes (and reports to the set) inside the set's poll.
    struct DriveOnDrop(netloop::runtime::Runtime);
    impl std::task::Wake for DriveOnDrop {
        fn wake(self: Arc<Self>) {}
    }
    impl Drop for DriveOnDrop {
        fn drop(&mut self) {
            self.0.block_on(task::yield_now());
        }
    }
    test_body(|| {
        let rt = current();
        let mut set = JoinSet::new();
        set.spawn_on(async { 42 }, rt.handle());
        let waker = std::task::Waker::from(Arc::new(DriveOnDrop(rt)));
        let noop = std::task::Waker::noop();
        assert!(set.poll_join_next(&mut Context::from_waker(&waker)).is_pending());
        drop(waker);
        assert!(set.poll_join_next(&mut Context::from_waker(noop)).is_pending());
        assert_eq!(set.try_join_next().unwrap().unwrap(), 42);
    });
}

#[test]
fn join_set_abort_all_shutdown_and_drop() {
    test_body(|| {
        let rt = multi();
        let (dropped_tx, dropped_rx) = mpsc::channel();
        rt.block_on(async {
            // abort_all: every task comes back cancelled.
            let mut set = JoinSet::new();
            for _ in 0..5 {
                set.spawn(std::future::pending::<()>());
            }
            set.abort_all();
            let mut cancelled = 0;
            while let Some(r) = set.join_next().await {
                assert!(r.unwrap_err().is_cancelled());
                cancelled += 1;
            }
            assert_eq!(cancelled, 5);

            // An AbortHandle from spawn aborts one task.
            let mut set = JoinSet::new();
            let abort = set.spawn(std::future::pending::<u32>());
            set.spawn(async { 3 });
            abort.abort();
            let mut results: Vec<_> = Vec::new();
            while let Some(r) = set.join_next().await {
                results.push(r.map_err(|e| e.is_cancelled()));
            }
            results.sort();
            assert_eq!(results, [Ok(3), Err(true)]);

            // shutdown aborts and waits.
            let mut set = JoinSet::new();
            set.spawn(time::sleep(Duration::from_secs(60)));
            set.shutdown().await;
            assert!(set.is_empty());

            // Dropping the set aborts its tasks.
            let mut set = JoinSet::new();
            for _ in 0..3 {
                let signal = DropSignal(dropped_tx.clone());
                set.spawn(async move {
                    let _signal = signal;
                    std::future::pending::<()>().await;
                });
            }
            task::yield_now().await;
            drop(set);
        });
        drop(dropped_tx);
        for _ in 0..3 {
            dropped_rx
                .recv_timeout(WAIT)
                .expect("dropping a JoinSet aborts its tasks");
        }
    });
}

#[test]
fn join_set_join_all_blocking_and_local() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let set: JoinSet<u32> = (0..10u32).map(|i| async move { i * i }).collect();
            let mut all = set.join_all().await;
            all.sort();
            assert_eq!(all, (0..10u32).map(|i| i * i).collect::<Vec<_>>());

            let mut set = JoinSet::new();
            set.spawn_blocking(|| {
                thread::sleep(Duration::from_millis(5));
                thread_name()
            });
            set.spawn_on(async { thread_name() }, &netloop::runtime::Handle::current());
            let mut names = Vec::new();
            while let Some(r) = set.join_next().await {
                names.push(r.unwrap());
            }
            assert_eq!(names.len(), 2);
            assert!(names.iter().any(|n| n.ends_with("-blocking")));

            // detach_all lets tasks run on.
            let (tx, rx) = futures::channel::oneshot::channel();
            let mut set = JoinSet::new();
            set.spawn(async move {
                time::sleep(Duration::from_millis(5)).await;
                tx.send(1).unwrap();
            });
            set.detach_all();
            drop(set);
            assert_eq!(rx.await.unwrap(), 1);
        });

        // spawn_local into a set, on a loop.
        let v = rt
            .block_on(rt.spawn(async {
                let mut set = JoinSet::new();
                for i in 0..3 {
                    let rc = Rc::new(i);
                    set.spawn_local(async move {
                        task::yield_now().await;
                        *rc
                    });
                }
                let mut sum = 0;
                while let Some(r) = set.join_next().await {
                    sum += r.unwrap();
                }
                sum
            }))
            .unwrap();
        assert_eq!(v, 3);

        // A panic in join_all is re-raised.
        let err = rt
            .block_on(async {
                netloop::spawn(async {
                    let mut set = JoinSet::new();
                    set.spawn(async { boom("in the set") });
                    set.join_all().await
                })
                .await
            })
            .unwrap_err();
        assert!(err.is_panic());
    });
}

#[test]
fn local_set_on_a_current_thread_runtime() {
    test_body(|| {
        let rt = current();
        let local = LocalSet::new();
        let log = Rc::new(RefCell::new(Vec::new()));
        let l = log.clone();
        local.spawn_local(async move { l.borrow_mut().push("queued before run") });
        let l = log.clone();
        local.block_on(&rt, async move {
            let l2 = l.clone();
            task::spawn_local(async move { l2.borrow_mut().push("spawned inside") })
                .await
                .unwrap();
            time::sleep(Duration::from_millis(1)).await;
            l.borrow_mut().push("future");
        });
        let log = log.borrow();
        assert!(log.contains(&"spawned inside") && log.contains(&"future"));
        assert!(log.contains(&"queued before run"), "{log:?}");
    });
}

#[test]
fn local_set_tasks_can_be_aborted_and_panic() {
    test_body(|| {
        let rt = multi();
        let local = LocalSet::new();
        let (aborted, panicked) = local.block_on(&rt, async {
            let h = task::spawn_local(std::future::pending::<()>());
            task::yield_now().await;
            h.abort();
            let aborted = time::timeout(Duration::from_secs(3), h).await.unwrap().unwrap_err();
            let panicked = task::spawn_local(async { boom("local boom") }).await.unwrap_err();
            (aborted, panicked)
        });
        assert!(aborted.is_cancelled());
        assert!(panicked.is_panic());
    });
}

#[test]
fn dropping_a_local_set_drops_its_tasks() {
    // tokio: when a LocalSet is dropped, every task spawned on it is dropped with it,
    // including tasks that are waiting for a wake that will never come.
    test_body(|| {
        let rt = multi();
        let local = LocalSet::new();
        let dropped = Rc::new(Cell::new(0));
        struct CountDrop(Rc<Cell<u32>>);
        impl Drop for CountDrop {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        // One task that was polled and now waits forever, one never polled.
        let guard = CountDrop(dropped.clone());
        let _started = local.spawn_local(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        });
        local.block_on(&rt, task::yield_now());
        let guard = CountDrop(dropped.clone());
        let _queued = local.spawn_local(async move {
            let _guard = guard;
        });
        drop(local);
        assert_eq!(
            dropped.get(),
            2,
            "a task of a dropped LocalSet was leaked instead of dropped"
        );
    });
}

#[test]
fn spawn_blocking_many_at_once() {
    test_body(|| {
        let rt = multi();
        let count = Arc::new(AtomicUsize::new(0));
        rt.block_on(async {
            let mut hs = Vec::new();
            for _ in 0..32 {
                let count = count.clone();
                hs.push(task::spawn_blocking(move || {
                    thread::sleep(Duration::from_millis(2));
                    count.fetch_add(1, Ordering::SeqCst)
                }));
            }
            for h in hs {
                h.await.unwrap();
            }
        });
        assert_eq!(count.load(Ordering::SeqCst), 32);
    });
}

#[test]
fn spawn_outside_a_runtime_panics() {
    test_body(|| {
        assert!(std::panic::catch_unwind(|| netloop::spawn(async {})).is_err());
        assert!(std::panic::catch_unwind(|| task::spawn_blocking(|| ())).is_err());
        assert!(std::panic::catch_unwind(|| task::spawn_pinned(|| async {})).is_err());
    });
}

// ---------------------------------------------------------------------------------
// task::coop: consume_budget, unconstrained, cooperative
// ---------------------------------------------------------------------------------

/// Runs `busy` on a one-loop runtime beside a task that sets a flag; returns whether
/// the flag was set when `busy` ended (i.e. whether `busy` gave the loop back).
fn other_task_ran_during<F>(busy: impl FnOnce() -> F + Send + 'static) -> bool
where
    F: std::future::Future<Output = ()> + 'static,
{
    test_body(|| {
        let rt = single_loop();
        rt.block_on(async {
            task::spawn_pinned(move || async move {
                let ran = Rc::new(Cell::new(false));
                let flag = ran.clone();
                let other = task::spawn_local(async move { flag.set(true) });
                busy().await;
                let seen = ran.get();
                other.await.unwrap();
                seen
            })
            .await
            .unwrap()
        })
    })
}

#[test]
fn consume_budget_yields_to_the_loop_once_the_budget_is_spent() {
    let ran = other_task_ran_during(|| async {
        for _ in 0..1_000 {
            task::consume_budget().await;
        }
    });
    assert!(ran, "1,000 units is more than one poll's budget: the task yielded");
}

#[test]
fn consume_budget_within_the_budget_does_not_yield() {
    let ran = other_task_ran_during(|| async {
        for _ in 0..10 {
            task::consume_budget().await;
        }
    });
    assert!(!ran, "10 units fit in one poll's budget");
}

#[test]
fn unconstrained_never_yields_for_budget() {
    let ran = other_task_ran_during(|| {
        task::unconstrained(async {
            for _ in 0..10_000 {
                task::consume_budget().await;
            }
        })
    });
    assert!(!ran, "an unconstrained future keeps the loop");
}

#[test]
fn cooperative_makes_an_always_ready_future_spend_budget() {
    let ran = other_task_ran_during(|| async {
        for _ in 0..1_000 {
            task::coop::cooperative(std::future::ready(())).await;
        }
    });
    assert!(ran, "1,000 cooperative polls spend more than one budget");
    assert!(task::coop::has_budget_remaining(), "off a loop the budget is unlimited");
}

// ---------------------------------------------------------------------------------
// LocalRuntime, and the rest of JoinSet
// ---------------------------------------------------------------------------------

#[test]
fn local_runtime_runs_not_send_tasks_spawned_before_block_on() {
    test_body(|| {
        let rt = netloop::runtime::LocalRuntime::new().unwrap();
        let log = Rc::new(RefCell::new(Vec::new()));
        let first = rt.spawn_local({
            let log = log.clone();
            async move {
                log.borrow_mut().push("spawned before block_on");
                7
            }
        });
        let out = rt.block_on({
            let log = log.clone();
            async move {
                let n = first.await.unwrap();
                // Inside, plain spawn_local works too, on the runtime's loop.
                let inner = task::spawn_local(async move { n * 6 });
                log.borrow_mut().push("block_on");
                inner.await.unwrap()
            }
        });
        assert_eq!(out, 42);
        assert_eq!(*log.borrow(), ["spawned before block_on", "block_on"]);
        assert_eq!(rt.metrics().num_workers(), 1);
        // Send tasks from another thread, through the handle.
        let handle = rt.handle().clone();
        let from_thread = thread::spawn(move || handle.spawn(async { "sent" })).join().unwrap();
        assert_eq!(rt.block_on(from_thread).unwrap(), "sent");
        rt.shutdown_timeout(WAIT);
    });
}

#[test]
fn build_local_on_a_multi_thread_builder_is_an_error() {
    let err = netloop::runtime::Builder::new_multi_thread()
        .build_local(Default::default())
        .expect_err("LocalRuntime is current-thread only");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        err.to_string()
            .contains("multi_thread is not supported for LocalRuntime"),
        "{err}"
    );
}

#[test]
fn local_runtime_drops_unfinished_tasks_on_shutdown() {
    test_body(|| {
        let rt = netloop::runtime::LocalRuntime::new().unwrap();
        let (tx, rx) = mpsc::channel();
        let _pending = rt.spawn_local(async move {
            let _signal = DropSignal(tx);
            std::future::pending::<()>().await;
        });
        rt.block_on(async { task::yield_now().await });
        drop(rt);
        let dropped_on = rx.recv_timeout(WAIT).expect("the pending task's future was dropped");
        assert_eq!(dropped_on, "test-body", "on the thread that owned the runtime");
    });
}

#[netloop::test(flavor = "local")]
async fn the_local_flavor_spawns_not_send_tasks_into_a_join_set() {
    let shared = Rc::new(Cell::new(0));
    let mut set = JoinSet::new();
    for i in 1..=4 {
        let shared = shared.clone();
        set.spawn_local(async move {
            shared.set(shared.get() + i);
            i
        });
    }
    let mut sum = 0;
    while let Some(r) = set.join_next().await {
        sum += r.unwrap();
    }
    assert_eq!((sum, shared.get()), (10, 10));
}

#[test]
fn join_set_extend_spawn_local_on_and_spawn_blocking_on() {
    test_body(|| {
        let rt = current();
        let local = LocalSet::new();
        let handle = rt.handle().clone();
        let mut results = local.block_on(&rt, async {
            let mut set: JoinSet<u32> = JoinSet::new();
            set.extend((1..=3).map(|i| async move { i }));
            let not_send = Rc::new(10);
            set.spawn_local_on(async move { *not_send }, &local);
            set.spawn_blocking_on(|| 100, &handle);
            assert_eq!(set.len(), 5);
            let mut out = Vec::new();
            while let Some(r) = set.join_next().await {
                out.push(r.unwrap());
            }
            out
        });
        results.sort_unstable();
        assert_eq!(results, [1, 2, 3, 10, 100]);
    });
}

#[test]
fn block_in_place_runs_the_closure_where_blocking_is_allowed() {
    test_body(|| {
        assert_eq!(task::block_in_place(|| 1), 1, "outside any runtime");
        let rt = multi();
        assert_eq!(rt.block_on(async { task::block_in_place(|| 2) }), 2, "in block_on");
        let on_loop = rt.block_on(async { task::spawn(async { task::block_in_place(thread_name) }).await });
        assert!(
            netloop_tests::is_default_loop_name(&on_loop.unwrap()),
            "ran on the loop's thread"
        );
    });
}

#[test]
fn a_timer_made_inside_block_in_place_fires_while_its_loop_is_blocked() {
    test_body(|| {
        let rt = multi();
        // Each round blocks one loop in place and waits there on a new timer: the timer
        // must live on a loop that is not blocked, or it fires only after the closure.
        for _ in 0..32 {
            let waited = rt.block_on(async {
                task::spawn(async {
                    task::block_in_place(|| {
                        let start = std::time::Instant::now();
                        netloop::runtime::Handle::current()
                            .block_on(netloop::time::sleep(std::time::Duration::from_millis(2)));
                        start.elapsed()
                    })
                })
                .await
                .unwrap()
            });
            assert!(waited >= std::time::Duration::from_millis(2), "never early");
        }
    });
}

#[test]
#[should_panic(expected = "can call blocking only when running on the multi-threaded runtime")]
fn block_in_place_on_a_current_thread_runtime_panics() {
    current().block_on(async { task::block_in_place(|| ()) });
}

#[test]
fn a_future_destructor_sees_its_task_id_on_abort() {
    test_body(|| {
        struct IdOnDrop(mpsc::Sender<Option<task::Id>>);
        impl Drop for IdOnDrop {
            fn drop(&mut self) {
                let _ = self.0.send(task::try_id());
            }
        }
        let rt = multi();
        let (tx, rx) = mpsc::channel();
        // Captured, not created inside: dropped with the future even if never polled.
        let guard = IdOnDrop(tx);
        let handle = rt.spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        });
        let id = handle.id();
        handle.abort();
        assert!(rt.block_on(handle).unwrap_err().is_cancelled());
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), Some(id), "a loop task's future");

        let local = LocalSet::new();
        let (tx, rx) = mpsc::channel();
        let handle = local.spawn_local(async move {
            let _guard = IdOnDrop(tx);
            std::future::pending::<()>().await;
        });
        let id = handle.id();
        current().block_on(local.run_until(task::yield_now()));
        drop(local);
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), Some(id), "a LocalSet task's future");
    });
}

#[test]
fn a_destructor_panic_while_cancelled_is_the_tasks_panic() {
    test_body(|| {
        struct PanicOnDrop;
        impl Drop for PanicOnDrop {
            fn drop(&mut self) {
                panic!("dropped");
            }
        }
        let rt = current();
        // A loop task, aborted.
        let handle = rt.spawn(async {
            let _p = PanicOnDrop;
            std::future::pending::<()>().await;
        });
        rt.block_on(task::yield_now());
        handle.abort();
        let err = rt.block_on(handle).unwrap_err();
        assert!(err.is_panic(), "{err:?}");
        // A LocalSet task, dropped with its set: before, async-task aborted the process.
        let local = LocalSet::new();
        let handle = local.spawn_local(async {
            let _p = PanicOnDrop;
            std::future::pending::<()>().await;
        });
        rt.block_on(local.run_until(task::yield_now()));
        drop(local);
        let err = rt.block_on(handle).unwrap_err();
        assert!(err.is_panic(), "{err:?}");
        assert_eq!(err.into_panic().downcast_ref::<&str>(), Some(&"dropped"));
    });
}

#[test]
fn spawn_local_inside_a_local_set_joins_the_set() {
    test_body(|| {
        let ran = Rc::new(Cell::new(false));
        let local = LocalSet::new();
        let seen = ran.clone();
        local.spawn_local(async move {
            task::spawn_local(async move {
                task::yield_now().await;
                seen.set(true);
            });
        });
        // Awaiting the set waits for every task of it, the nested one included.
        current().block_on(local);
        assert!(ran.get());
    });
}

#[test]
fn block_in_place_inside_a_local_set_panics() {
    test_body(|| {
        let rt = multi();
        let caught = rt.block_on(async {
            let local = LocalSet::new();
            local
                .run_until(async { std::panic::catch_unwind(|| task::block_in_place(|| ())) })
                .await
        });
        let payload = caught.unwrap_err();
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"can call blocking only when running on the multi-threaded runtime")
        );
    });
}

#[test]
fn spawn_local_after_entering_a_local_runtime_joins_it_and_other_threads_are_refused() {
    test_body(|| {
        let rt = netloop::runtime::LocalRuntime::new().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        {
            let _guard = rt.enter();
            let not_send = Rc::new(5);
            task::spawn_local(async move {
                task::yield_now().await;
                tx.send(*not_send).unwrap();
            });
        }
        assert_eq!(rt.block_on(async { rx.await.unwrap() }), 5);

        let handle = rt.handle().clone();
        let refused = thread::spawn(move || {
            let _guard = handle.enter();
            std::panic::catch_unwind(|| drop(task::spawn_local(async {}))).unwrap_err()
        })
        .join()
        .unwrap();
        assert_eq!(
            refused.downcast_ref::<&str>(),
            Some(&"Local tasks can only be spawned on a LocalRuntime from the thread the runtime was created on")
        );
    });
}

#[test]
fn panics_outside_a_runtime_point_at_the_caller() {
    fn location_of(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let seen = Arc::new(Mutex::new(None));
        let hook_seen = seen.clone();
        // The hook is process-wide: only this thread's panic counts (tests run in
        // parallel, and others panic on purpose).
        let me = thread::current().id();
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if thread::current().id() == me {
                *hook_seen.lock().unwrap() = info.location().map(|l| l.file().to_string());
            }
        }));
        let caught = std::panic::catch_unwind(f);
        std::panic::set_hook(previous);
        assert!(caught.is_err(), "expected a panic");
        seen.lock().unwrap().take().unwrap()
    }
    assert_eq!(location_of(|| drop(netloop::spawn(async {}))), file!());
    assert_eq!(location_of(|| drop(netloop::runtime::Handle::current())), file!());
    netloop::task_local! { static NUMBER: u32; }
    assert_eq!(
        location_of(|| NUMBER.sync_scope(1, || NUMBER.with(|_| NUMBER.sync_scope(2, || ())))),
        file!()
    );
}

#[test]
fn a_task_that_panics_is_dropped_while_the_panic_unwinds() {
    test_body(|| {
        struct Boom(Option<mpsc::Sender<bool>>);
        impl std::future::Future for Boom {
            type Output = ();
            fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
                panic!("boom");
            }
        }
        impl Drop for Boom {
            fn drop(&mut self) {
                let _ = self.0.take().unwrap().send(thread::panicking());
            }
        }
        let rt = multi();
        let (tx, rx) = mpsc::channel();
        let err = rt.block_on(rt.spawn(Boom(Some(tx)))).unwrap_err();
        assert!(err.is_panic());
        assert!(
            rx.recv_timeout(WAIT).unwrap(),
            "dropped during the unwinding, as tokio does"
        );
    });
}

#[test]
fn block_in_place_may_block_on_and_its_spawns_go_to_another_loop() {
    test_body(|| {
        let rt = multi();
        let (outer, spawned_on) = rt.block_on(async {
            netloop::spawn(async {
                let outer = netloop::runtime::worker_index();
                let spawned_on = task::block_in_place(|| {
                    // This loop runs nothing until the closure returns: a task spawned
                    // here and waited for must run on the other loop.
                    let handle = netloop::runtime::Handle::current();
                    let inner = handle.spawn(async { netloop::runtime::worker_index() });
                    let on = handle.block_on(inner).unwrap();
                    // A new runtime inside works too.
                    let other = netloop::runtime::Builder::new_current_thread().build().unwrap();
                    assert_eq!(other.block_on(async { 5 }), 5);
                    on
                });
                task::yield_now().await;
                (outer, spawned_on)
            })
            .await
            .unwrap()
        });
        assert!(outer.is_some() && spawned_on.is_some());
        assert_ne!(outer, spawned_on, "the spawn went to the loop that was free");
    });
}

/// A task that yields (or spends its whole budget) runs again only after its loop has
/// polled for I/O, so an I/O-driven task it waits on makes progress between its turns.
#[test]
fn yield_and_spent_budget_run_again_only_after_the_loop_polls_io() {
    test_body(|| {
        for spend_budget in [false, true] {
            for rt in [current(), multi()] {
                let spawned = rt.spawn(async move {
                    let listener = netloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                    let addr = listener.local_addr().unwrap();
                    let accepted = Arc::new(AtomicBool::new(false));
                    let flag = accepted.clone();
                    // Spawned from a loop task: it runs on this task's loop.
                    netloop::spawn(async move {
                        let _ = listener.accept().await.unwrap();
                        flag.store(true, Ordering::SeqCst);
                    });
                    task::yield_now().await; // the acceptor waits for readiness now
                    let _client = std::net::TcpStream::connect(addr).unwrap();
                    let mut turns = 0;
                    while !accepted.load(Ordering::SeqCst) {
                        if spend_budget {
                            for _ in 0..128 {
                                task::consume_budget().await;
                            }
                        } else {
                            task::yield_now().await;
                        }
                        turns += 1;
                        assert!(turns <= 2, "took {turns} turns without the loop seeing the connection");
                    }
                });
                rt.block_on(spawned).unwrap();
            }
        }
    });
}

/// `block_in_place` holds up its loop's next I/O poll, so what yielded on that loop is
/// woken before the blocking closure runs, not after.
#[test]
fn block_in_place_first_wakes_what_yielded_on_its_loop() {
    struct Count(AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    test_body(|| {
        let rt = multi();
        let task = rt.spawn(async {
            let count = Arc::new(Count(AtomicUsize::new(0)));
            let waker = std::task::Waker::from(count.clone());
            let mut yielded = std::pin::pin!(task::yield_now());
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(yielded.as_mut().poll(&mut cx).is_pending());
            assert_eq!(count.0.load(Ordering::SeqCst), 0, "deferred, not woken yet");
            task::block_in_place(|| count.0.load(Ordering::SeqCst))
        });
        assert_eq!(rt.block_on(task).unwrap(), 1);
    });
}

/// A task's output is dropped with the task's id set, whether the task drops it (its
/// handle was dropped first) or a handle dropped after completion does.
#[test]
fn an_outputs_destructor_sees_its_tasks_id() {
    struct ReportsId(Option<mpsc::Sender<Option<task::Id>>>);
    impl Drop for ReportsId {
        fn drop(&mut self) {
            let _ = self.0.take().unwrap().send(task::try_id());
        }
    }
    test_body(|| {
        let rt = multi();
        // The handle goes first: the task drops its output on its loop.
        let (tx, rx) = mpsc::channel();
        let handle = rt.spawn(async move { ReportsId(Some(tx)) });
        let id = handle.id();
        drop(handle);
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), Some(id));
        // The task finishes first: the handle's drop, on this thread, drops the output.
        let (tx, rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        let handle = rt.spawn(async move {
            let out = ReportsId(Some(tx));
            done_tx.send(()).unwrap();
            out
        });
        done_rx.recv_timeout(WAIT).unwrap();
        let id = handle.id();
        while !handle.is_finished() {
            thread::yield_now();
        }
        drop(handle);
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), Some(id));
        assert_eq!(task::try_id(), None, "the id does not outlive the drop");
    });
}

#[test]
fn a_block_on_inside_block_in_place_has_a_budget_of_its_own() {
    // More acquisitions of an always-free lock than one budget holds: the task's spent
    // budget must not reach into the closure, nor the first poll's into the next.
    test_body(|| {
        let rt = netloop_tests::multi();
        rt.block_on(async {
            let lock = netloop::sync::Mutex::new(0usize);
            netloop::spawn(async move {
                netloop::task::coop::consume_budget().await;
                task::block_in_place(|| {
                    netloop::runtime::Handle::current().block_on(async {
                        for i in 0..1_000 {
                            *lock.lock().await = i;
                        }
                    })
                });
                lock.into_inner()
            })
            .await
            .expect("the task ran")
        })
    });
}

/// A loop thread keeps one stand-in for all its `block_in_place` calls: every closure
/// long enough to be stood in for is stood in for by the same thread.
#[test]
fn a_loop_thread_keeps_one_stand_in_for_every_block_in_place() {
    test_body(|| {
        let rt = multi();
        let stand_ins = rt.block_on(async {
            task::spawn(async {
                let home = std::thread::current().id();
                let here = netloop::runtime::Handle::current()
                    .event_loops()
                    .get(netloop::runtime::worker_index().unwrap())
                    .unwrap()
                    .clone();
                let seen = Arc::new(Mutex::new(HashSet::new()));
                let ticker = {
                    let seen = seen.clone();
                    task::spawn_on(&here, async move {
                        loop {
                            time::sleep(Duration::from_millis(1)).await;
                            let now = std::thread::current().id();
                            if now != home {
                                seen.lock().unwrap().insert(now);
                            }
                        }
                    })
                };
                for _ in 0..10 {
                    task::block_in_place(|| thread::sleep(Duration::from_millis(20)));
                }
                ticker.abort();
                seen.lock().unwrap().len()
            })
            .await
            .unwrap()
        });
        assert_eq!(stand_ins, 1, "threads that stood in for the loop");
    });
}

/// Spawns a task that yields until `stop` is set (or forever); its future holds a
/// `DropSignal`.
fn spawn_yielding(
    rt: &netloop::runtime::Runtime,
    stop: Arc<AtomicBool>,
) -> (netloop::task::JoinHandle<()>, mpsc::Receiver<String>) {
    let (dropped_tx, dropped_rx) = mpsc::channel();
    let handle = rt.spawn(async move {
        let _signal = DropSignal(dropped_tx);
        while !stop.load(Ordering::SeqCst) {
            task::yield_now().await;
        }
    });
    (handle, dropped_rx)
}

/// A task that yields on every poll is alive as far as the runtime's metrics go (its
/// deferred turn lists it, as a waiting task is listed).
#[test]
fn a_task_that_only_yields_counts_as_alive() {
    test_body(|| {
        for rt in [current(), single_loop()] {
            let stop = Arc::new(AtomicBool::new(false));
            let (handle, _dropped) = spawn_yielding(&rt, stop.clone());
            let alive = rt.block_on(async {
                for _ in 0..100 {
                    task::yield_now().await;
                    if rt_alive() > 0 {
                        return true;
                    }
                    time::sleep(Duration::from_millis(1)).await;
                }
                false
            });
            assert!(alive, "num_alive_tasks stayed 0 while a task kept yielding");
            stop.store(true, Ordering::SeqCst);
            rt.block_on(handle).unwrap();
        }
    });
}

fn rt_alive() -> usize {
    netloop::runtime::Handle::current().metrics().num_alive_tasks()
}

/// An abort reaches a task whose turn is deferred (it yielded): it is closed at that
/// turn, after the loop's next I/O poll.
#[test]
fn aborting_a_task_that_yielded_cancels_it() {
    test_body(|| {
        for rt in [current(), single_loop()] {
            let (handle, dropped) = spawn_yielding(&rt, Arc::new(AtomicBool::new(false)));
            let err = rt.block_on(async move {
                // Until the task has run (and yielded) at least once.
                while rt_alive() == 0 {
                    task::yield_now().await;
                    time::sleep(Duration::from_millis(1)).await;
                }
                handle.abort();
                handle.await.unwrap_err()
            });
            assert!(err.is_cancelled());
            dropped.recv_timeout(WAIT).expect("the future was dropped");
        }
    });
}

/// A runtime dropped while a task's turn is deferred drops that task's future before
/// the drop returns.
#[test]
fn dropping_a_runtime_drops_a_task_whose_turn_is_deferred() {
    test_body(|| {
        for rt in [current(), single_loop()] {
            let (dropped_tx, dropped) = mpsc::channel();
            let started = Arc::new(AtomicBool::new(false));
            let running = started.clone();
            let _handle = rt.spawn(async move {
                let _signal = DropSignal(dropped_tx);
                running.store(true, Ordering::SeqCst);
                loop {
                    task::yield_now().await;
                }
            });
            rt.block_on(async {
                // Until the task has run (and yielded) at least once: a task no loop
                // has polled yet is dropped unpolled at shutdown, as on tokio, and its
                // signal is never made.
                while !started.load(Ordering::SeqCst) {
                    time::sleep(Duration::from_millis(1)).await;
                }
                for _ in 0..3 {
                    task::yield_now().await;
                }
            });
            drop(rt);
            assert!(
                dropped.try_recv().is_ok(),
                "the yielding task's future outlived its runtime"
            );
        }
    });
}
