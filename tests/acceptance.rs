//! The runtime's acceptance tests, each named for the guarantee it checks.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use netloop::task::{self, LocalSet};
use netloop::time::{self, Instant};
use netloop_tests::{DropSignal, WAIT, multi, single_loop, test_body, within};

/// Panics with a `&'static str` payload.
fn boom(msg: &'static str) -> u32 {
    std::panic::panic_any(msg)
}

/// Panics with a `String` payload.
fn boom_formatted(n: u32) -> u32 {
    panic!("formatted {n}")
}

#[test]
fn hundred_k_tasks_from_four_threads_all_complete() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 25_000;
    const TOTAL: usize = THREADS * PER_THREAD;
    within(Duration::from_secs(20), || {
        let rt = multi();
        let done = Arc::new(AtomicUsize::new(0));
        let (all_done_tx, all_done_rx) = mpsc::channel();
        let producers: Vec<_> = (0..THREADS)
            .map(|t| {
                let handle = rt.handle().clone();
                let done = done.clone();
                let all_done_tx = all_done_tx.clone();
                thread::spawn(move || {
                    let mut handles = Vec::with_capacity(PER_THREAD);
                    for i in 0..PER_THREAD {
                        let done = done.clone();
                        let all_done_tx = all_done_tx.clone();
                        handles.push(handle.spawn(async move {
                            // Every tenth task also goes through a wake of its own.
                            if i % 10 == 0 {
                                task::yield_now().await;
                            }
                            if done.fetch_add(1, Ordering::AcqRel) + 1 == TOTAL {
                                let _ = all_done_tx.send(());
                            }
                            t * PER_THREAD + i
                        }));
                    }
                    handles
                })
            })
            .collect();
        drop(all_done_tx);
        let handles: Vec<_> = producers
            .into_iter()
            .map(|p| p.join().expect("producer thread"))
            .collect();
        all_done_rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|e| {
            panic!(
                "only {} of {TOTAL} tasks completed ({e}): a lost wakeup?",
                done.load(Ordering::Acquire)
            )
        });
        // Every JoinHandle resolves with its own task's output.
        let outputs = rt.block_on(async {
            time::timeout(Duration::from_secs(5), async {
                let mut outputs = Vec::with_capacity(TOTAL);
                for hs in handles {
                    for h in hs {
                        outputs.push(h.await.expect("task failed"));
                    }
                }
                outputs
            })
            .await
            .expect("join handles did not resolve")
        });
        assert_eq!(outputs, (0..TOTAL).collect::<Vec<_>>());
        assert_eq!(done.load(Ordering::Acquire), TOTAL);
    });
}

#[test]
fn panicking_task_gives_is_panic_and_loop_goes_on() {
    test_body(|| {
        let rt = single_loop();
        rt.block_on(async {
            let bad = netloop::spawn(async { boom("boom in a task") });
            let err = bad.await.expect_err("the task panicked");
            assert!(err.is_panic());
            assert!(!err.is_cancelled());
            let payload = err.into_panic();
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom in a task"));

            // The loop (there is only one) goes on running tasks.
            for i in 0..10 {
                let ok = netloop::spawn(async move {
                    task::yield_now().await;
                    i * 2
                });
                assert_eq!(ok.await.unwrap(), i * 2);
            }

            // A panic with a String payload, and the Display of the error.
            let err = netloop::spawn(async { boom_formatted(3) }).await.unwrap_err();
            assert!(err.to_string().contains("formatted 3"), "{err}");
            assert_eq!(
                err.into_panic().downcast_ref::<String>().map(String::as_str),
                Some("formatted 3")
            );
        });

        // A panicking closure given to the loop directly does not stop it either.
        let event_loop = rt.handle().event_loops().get(0).unwrap().clone();
        event_loop.execute(|| panic!("boom in a closure")).unwrap();
        let (tx, rx) = mpsc::channel();
        event_loop.execute(move || tx.send(42).unwrap()).unwrap();
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), 42);
        assert_eq!(rt.block_on(rt.spawn(async { 5 })).unwrap(), 5);
    });
}

#[test]
fn aborting_a_sleeping_task() {
    test_body(|| {
        let rt = multi();
        let (dropped_tx, dropped_rx) = mpsc::channel();
        let (started_tx, started_rx) = mpsc::channel();
        let sleeper = rt.spawn(async move {
            let _signal = DropSignal(dropped_tx);
            started_tx.send(netloop_tests::thread_name()).unwrap();
            time::sleep(Duration::from_secs(30)).await;
            "woke up"
        });
        let loop_thread = started_rx.recv_timeout(WAIT).expect("the task started");
        assert!(!sleeper.is_finished());
        let start = std::time::Instant::now();
        sleeper.abort();
        let result = rt.block_on(async {
            time::timeout(Duration::from_secs(3), sleeper)
                .await
                .expect("abort wakes the task")
        });
        let err = result.expect_err("the task was aborted");
        assert!(err.is_cancelled());
        assert!(!err.is_panic());
        assert!(start.elapsed() < Duration::from_secs(3));
        // The future was dropped, on its own loop's thread.
        assert_eq!(dropped_rx.recv_timeout(WAIT).unwrap(), loop_thread);

        // The same through an AbortHandle, and with a JoinHandle kept to check it.
        rt.block_on(async {
            let mut sleeper = netloop::spawn(time::sleep(Duration::from_secs(30)));
            let abort = sleeper.abort_handle();
            assert!(!abort.is_aborted());
            assert_eq!(abort.id(), sleeper.id());
            task::yield_now().await;
            abort.abort();
            assert!(abort.is_aborted());
            let err = time::timeout(Duration::from_secs(3), &mut sleeper)
                .await
                .expect("abort wakes the task")
                .unwrap_err();
            assert!(err.is_cancelled());
            assert!(sleeper.is_finished());
        });
    });
}

#[test]
fn spawn_after_shutdown_resolves_with_error() {
    test_body(|| {
        let rt = multi();
        let handle = rt.handle().clone();
        let first_loop = handle.event_loops().get(0).unwrap().clone();
        // Use the runtime once so that a loop is running when it shuts down.
        assert_eq!(rt.block_on(rt.spawn(async { 1 })).unwrap(), 1);
        rt.shutdown_timeout(Duration::from_secs(2));

        let spawned = handle.spawn(async { 2 });
        let blocking = handle.spawn_blocking(|| 3);
        let on_loop = task::spawn_on(&first_loop, async { 4 });
        let (pinned, entered) = {
            let _guard = handle.enter();
            (task::spawn_pinned(|| async { 5 }), netloop::spawn(async { 6 }))
        };
        // Resolve them off any runtime: none may hang.
        let results = futures::executor::block_on(async {
            [
                spawned.await.map(drop),
                blocking.await.map(drop),
                on_loop.await.map(drop),
                pinned.await.map(drop),
                entered.await.map(drop),
            ]
        });
        for (i, r) in results.into_iter().enumerate() {
            let err = r.expect_err("a spawn after shutdown must fail");
            assert!(err.is_cancelled(), "spawn #{i}: {err:?}");
        }

        // The loops themselves refuse new work with a typed error.
        assert!(first_loop.is_terminated());
        let rejected = first_loop.execute(|| {}).unwrap_err();
        assert!(rejected.is_shutdown());
        assert!(rejected.into_task().is_some(), "the closure comes back");
        assert!(first_loop.schedule(Duration::from_millis(1), || {}).is_err());
    });
}

#[test]
fn spawn_after_drop_resolves_with_error() {
    test_body(|| {
        let rt = multi();
        let handle = rt.handle().clone();
        drop(rt);
        let err = futures::executor::block_on(handle.spawn(async { 1 })).unwrap_err();
        assert!(err.is_cancelled());
    });
}

#[test]
fn affinity_over_10k_spawns() {
    const PER_LOOP: usize = 5_000;
    test_body(|| {
        let rt = multi();
        let loops: Vec<_> = rt.handle().event_loops().iter().cloned().collect();
        assert_eq!(loops.len(), 2);
        let roots: Vec<_> = loops
            .iter()
            .map(|target| {
                let event_loop = target.clone();
                task::spawn_on(target, async move {
                    let home = thread::current().id();
                    assert!(event_loop.in_event_loop());
                    let mut wrong = 0usize;
                    let mut children = Vec::with_capacity(PER_LOOP);
                    for i in 0..PER_LOOP {
                        let here = event_loop.clone();
                        let check = move || thread::current().id() == home && here.in_event_loop();
                        // `spawn_local` and `spawn_on` keep the task on the loop; a task
                        // from `spawn` may start on the other loop (a busy loop gives
                        // tasks no loop has polled yet to an idle one), but keeps the
                        // loop that first polled it, across yields.
                        children.push(match i % 3 {
                            0 => task::spawn_local(async move { check() }),
                            1 => task::spawn_on(&event_loop, async move { check() }),
                            _ => netloop::spawn(async move {
                                let first = thread::current().id();
                                let started = netloop::runtime::worker_index();
                                for _ in 0..3 {
                                    task::yield_now().await;
                                }
                                thread::current().id() == first
                                    && netloop::runtime::worker_index() == started
                                    && task::spawn_local(async move { thread::current().id() == first })
                                        .await
                                        .unwrap()
                            }),
                        });
                    }
                    for child in children {
                        if !child.await.unwrap() {
                            wrong += 1;
                        }
                    }
                    (home, wrong)
                })
            })
            .collect();
        let results = rt.block_on(async {
            let mut results = Vec::new();
            for root in roots {
                results.push(root.await.unwrap());
            }
            results
        });
        assert_ne!(results[0].0, results[1].0, "two loops, two threads");
        for (home, wrong) in results {
            assert_eq!(
                wrong, 0,
                "{wrong} of {PER_LOOP} tasks spawned on the loop of {home:?} ran elsewhere or changed loop"
            );
        }
    });
}

#[test]
// The timers are made by tasks on one loop and handed out to be awaited on another.
#[allow(clippy::async_yields_async)]
fn timer_created_on_one_loop_polled_on_another_fires() {
    test_body(|| {
        let rt = multi();
        let loops = rt.handle().event_loops();
        let (a, b) = (loops.get(0).unwrap().clone(), loops.get(1).unwrap().clone());
        rt.block_on(async move {
            // Created on loop A, first polled on loop B.
            let start = Instant::now();
            let created = task::spawn_on(&a, async { time::sleep(Duration::from_millis(40)) });
            let sleep = created.await.unwrap();
            let deadline = sleep.deadline();
            let b2 = b.clone();
            let fired = task::spawn_on(&b, async move {
                sleep.await;
                (Instant::now(), b2.in_event_loop())
            });
            let (fired_at, on_b) = time::timeout(Duration::from_secs(3), fired)
                .await
                .expect("the timer never fired")
                .unwrap();
            assert!(on_b);
            assert!(fired_at >= deadline);
            assert!(fired_at - start >= Duration::from_millis(40));

            // Registered on loop A (polled there once), then moved to loop B: the wake
            // follows the task that polls it last.
            let a2 = a.clone();
            let registered = task::spawn_on(&a, async move {
                let mut sleep = Box::pin(time::sleep(Duration::from_millis(40)));
                assert!(futures::poll!(sleep.as_mut()).is_pending());
                assert!(a2.in_event_loop());
                sleep
            });
            let sleep = registered.await.unwrap();
            let deadline = sleep.deadline();
            let fired = task::spawn_on(&b, async move {
                sleep.await;
                Instant::now()
            });
            let fired_at = time::timeout(Duration::from_secs(3), fired)
                .await
                .expect("the timer never fired")
                .unwrap();
            assert!(fired_at >= deadline);

            // A timeout whose timer lives on A, awaited on B.
            let b3 = b.clone();
            let timeout = task::spawn_on(&a, async {
                time::timeout(Duration::from_millis(30), std::future::pending::<()>())
            })
            .await
            .unwrap();
            let outcome = task::spawn_on(&b, async move { (timeout.await, b3.in_event_loop()) });
            let (outcome, on_b) = time::timeout(Duration::from_secs(3), outcome).await.unwrap().unwrap();
            assert!(outcome.is_err());
            assert!(on_b);
        });
    });
}

#[test]
fn timers_never_fire_early() {
    test_body(|| {
        let rt = multi();
        let durations: Vec<Duration> = (0..120)
            .map(|i| Duration::from_micros(100 + (i * 397) % 30_000))
            .collect();
        let early = rt.block_on(async {
            let mut checks = Vec::new();
            for (i, d) in durations.iter().copied().enumerate() {
                // Half start on the loops, half are created here, off any loop.
                if i % 2 == 0 {
                    checks.push(netloop::spawn(async move {
                        let start = std::time::Instant::now();
                        match i % 8 {
                            0 => time::sleep(d).await,
                            2 => time::sleep_until(Instant::now() + d).await,
                            4 => assert!(time::timeout(d, std::future::pending::<()>()).await.is_err()),
                            _ => {
                                let mut every = time::interval_at(Instant::now() + d, d);
                                let first = every.tick().await;
                                assert!(Instant::now() >= first);
                            }
                        }
                        (d, start.elapsed())
                    }));
                } else {
                    let start = std::time::Instant::now();
                    let sleep = time::sleep(d);
                    checks.push(netloop::spawn(async move {
                        sleep.await;
                        (d, start.elapsed())
                    }));
                }
            }
            let mut early = Vec::new();
            for c in checks {
                let (d, took) = c.await.unwrap();
                if took < d {
                    early.push((d, took));
                }
            }
            early
        });
        assert!(early.is_empty(), "timers fired early (asked, took): {early:?}");

        // sleep_until: awake at or after the deadline, also on the Netty-level API.
        let (tx, rx) = mpsc::channel();
        let event_loop = rt.handle().event_loops().next().clone();
        for i in 0..20u64 {
            let d = Duration::from_micros(500 + i * 731);
            let start = std::time::Instant::now();
            let tx = tx.clone();
            event_loop
                .schedule(d, move || tx.send((d, start.elapsed())).unwrap())
                .unwrap();
        }
        for _ in 0..20 {
            let (d, took) = rx.recv_timeout(WAIT).unwrap();
            assert!(took >= d, "a scheduled task ran early: asked {d:?}, took {took:?}");
        }
    });
}

#[test]
fn spawn_local_runs_non_send_future_on_loop() {
    test_body(|| {
        let rt = multi();
        let event_loop = rt.handle().event_loops().get(1).unwrap().clone();
        let (tx, rx) = mpsc::channel();
        let el = event_loop.clone();
        // Hop onto the loop, then spawn a !Send future there.
        event_loop
            .execute(move || {
                let counter = Rc::new(Cell::new(0));
                let c = counter.clone();
                let home = thread::current().id();
                let local = task::spawn_local(async move {
                    for _ in 0..3 {
                        c.set(c.get() + 1);
                        time::sleep(Duration::from_millis(2)).await;
                        task::yield_now().await;
                    }
                    assert_eq!(thread::current().id(), home);
                    assert!(el.in_event_loop());
                    c.get()
                });
                let tx = tx.clone();
                // And from a local task, with an Rc held across awaits.
                task::spawn_local(async move {
                    let n = local.await.unwrap();
                    let tx2 = tx.clone();
                    let nested = task::spawn_local(async move {
                        let rc = Rc::new(n * 10);
                        task::yield_now().await;
                        *rc
                    });
                    tx2.send((n, nested.await.unwrap(), counter.get())).unwrap();
                });
            })
            .unwrap();
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), (3, 30, 3));

        // Off a loop and outside a LocalSet, spawn_local panics as in tokio.
        let _guard = rt.enter();
        let outside = std::panic::catch_unwind(|| task::spawn_local(async {}));
        assert!(outside.is_err());
    });
}

#[test]
fn spawn_pinned_builds_non_send_future_on_a_loop() {
    test_body(|| {
        let rt = multi();
        let loop_ids: Vec<_> = rt.handle().event_loops().iter().map(|l| l.id()).collect();
        let results = rt.block_on(async {
            let mut handles = Vec::new();
            for i in 0..4u32 {
                handles.push(task::spawn_pinned(move || {
                    // Built on the loop: the Rc never crosses threads.
                    let shared = Rc::new(Cell::new(i));
                    async move {
                        let home = thread::current().id();
                        time::sleep(Duration::from_millis(2)).await;
                        shared.set(shared.get() + 100);
                        task::yield_now().await;
                        assert_eq!(thread::current().id(), home);
                        let current = netloop::event_loop::EventLoopHandle::current().expect("on a loop");
                        (shared.get(), current.id())
                    }
                }));
            }
            let mut out = Vec::new();
            for h in handles {
                out.push(h.await.unwrap());
            }
            out
        });
        for (i, (value, loop_id)) in results.into_iter().enumerate() {
            assert_eq!(value, i as u32 + 100);
            assert!(loop_ids.contains(&loop_id), "ran on a loop of this runtime");
        }
        // A panicking pinned future is reported like any task's.
        let err = rt
            .block_on(async { task::spawn_pinned(|| async { boom("pinned boom") }).await })
            .unwrap_err();
        assert!(err.is_panic());
    });
}

#[test]
fn local_set_run_until_off_loop() {
    test_body(|| {
        let rt = multi();
        let test_thread = thread::current().id();
        let local = LocalSet::new();
        let state = Rc::new(Cell::new(0u32));
        let s = state.clone();
        let out = local.block_on(&rt, async move {
            assert!(
                netloop::event_loop::EventLoopHandle::current().is_none(),
                "block_on runs off the loops"
            );
            let s2 = s.clone();
            let a = task::spawn_local(async move {
                // Woken from a loop thread: the wake crosses back to the set's thread.
                time::sleep(Duration::from_millis(5)).await;
                let from_loop = netloop::spawn(async { 7 }).await.unwrap();
                s2.set(s2.get() + from_loop);
                thread::current().id()
            });
            let s3 = s.clone();
            let b = task::spawn_local(async move {
                task::yield_now().await;
                s3.set(s3.get() + 1);
                thread::current().id()
            });
            assert_eq!(a.await.unwrap(), test_thread);
            assert_eq!(b.await.unwrap(), test_thread);
            s.get()
        });
        assert_eq!(out, 8);
        assert_eq!(state.get(), 8);

        // run_until inside a multi-thread block_on, the tokio way.
        let local = LocalSet::new();
        let v = rt.block_on(local.run_until(async {
            let rc = Rc::new(41);
            let h = task::spawn_local(async move { *rc + 1 });
            time::timeout(Duration::from_secs(3), h).await.unwrap().unwrap()
        }));
        assert_eq!(v, 42);

        // Tasks given to the set before it runs; awaiting the set runs them all.
        let local = LocalSet::new();
        let hits = Rc::new(Cell::new(0));
        for _ in 0..5 {
            let hits = hits.clone();
            local.spawn_local(async move {
                task::yield_now().await;
                hits.set(hits.get() + 1);
            });
        }
        rt.block_on(async { time::timeout(Duration::from_secs(3), local).await.unwrap() });
        assert_eq!(hits.get(), 5);
    });
}
