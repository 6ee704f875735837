//! `Runtime` and `Handle`: creation, block_on, spawning, context, flavours, shutdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use netloop::event_loop::{EventLoopHandle, LoopState};
use netloop::runtime::{Handle, Runtime, RuntimeFlavor};
use netloop::{task, time};
use netloop_tests::{DropSignal, WAIT, current, multi, panic_message, panic_text, test_body, thread_name};

#[test]
fn runtime_new_block_on_and_spawn() {
    test_body(|| {
        let rt = Runtime::new().unwrap();
        assert_eq!(rt.handle().runtime_flavor(), RuntimeFlavor::MultiThread);
        assert_eq!(rt.block_on(async { 6 * 7 }), 42);
        let h = rt.spawn(async {
            time::sleep(Duration::from_millis(2)).await;
            "spawned"
        });
        assert_eq!(rt.block_on(h).unwrap(), "spawned");
        // block_on runs the future on the calling thread, off the loops.
        let here = thread::current().id();
        rt.block_on(async move {
            assert_eq!(thread::current().id(), here);
            assert!(EventLoopHandle::current().is_none());
            assert!(Handle::try_current().is_ok());
        });
        assert!(!format!("{rt:?}").is_empty());
    });
}

#[test]
fn spawned_tasks_run_on_loop_threads_without_block_on() {
    test_body(|| {
        let rt = multi();
        let (tx, rx) = mpsc::channel();
        // A tokio user may spawn and never block_on: the loops run on their own.
        let _detached = rt.spawn(async move {
            time::sleep(Duration::from_millis(2)).await;
            tx.send(thread_name()).unwrap();
        });
        let name = rx.recv_timeout(WAIT).unwrap();
        assert!(netloop_tests::is_default_loop_name(&name), "{name}");
    });
}

#[test]
fn spawn_blocking_runs_off_the_loops_and_in_context() {
    test_body(|| {
        let rt = multi();
        let out = rt.block_on(async {
            let h = task::spawn_blocking(|| {
                assert!(EventLoopHandle::current().is_none(), "not on a loop");
                // Blocking threads are in the runtime's context: they may spawn and block_on.
                let handle = Handle::current();
                let v = handle.block_on(async { netloop::spawn(async { 20 }).await.unwrap() });
                thread::sleep(Duration::from_millis(5));
                v + 1
            });
            h.await.unwrap()
        });
        assert_eq!(out, 21);
        // Runtime::spawn_blocking and Handle::spawn_blocking, from outside.
        assert_eq!(rt.block_on(rt.spawn_blocking(|| 1)).unwrap(), 1);
        assert_eq!(rt.block_on(rt.handle().spawn_blocking(|| 2)).unwrap(), 2);
        // A panicking blocking closure gives is_panic.
        let err = rt
            .block_on(rt.spawn_blocking(|| -> u8 { std::panic::panic_any("blocking boom") }))
            .unwrap_err();
        assert!(err.is_panic());
        assert_eq!(err.into_panic().downcast_ref::<&str>(), Some(&"blocking boom"));
    });
}

#[test]
fn handle_current_and_try_current() {
    test_body(|| {
        // Outside any runtime.
        let err = Handle::try_current().unwrap_err();
        assert!(err.is_missing_context());
        assert!(!err.is_thread_local_destroyed());
        assert!(!err.to_string().is_empty());
        assert!(std::panic::catch_unwind(Handle::current).is_err());

        let rt = multi();
        let loops = rt.handle().event_loops().len();
        // Inside block_on, a task and a blocking task: the same runtime.
        rt.block_on(async move {
            assert_eq!(Handle::current().event_loops().len(), loops);
            let from_task = netloop::spawn(async { Handle::current().runtime_flavor() })
                .await
                .unwrap();
            assert_eq!(from_task, RuntimeFlavor::MultiThread);
            let from_blocking = task::spawn_blocking(|| Handle::try_current().is_ok()).await.unwrap();
            assert!(from_blocking);
        });
        // The context ends with block_on.
        assert!(Handle::try_current().is_err());
    });
}

#[test]
fn enter_sets_the_context_until_the_guard_drops() {
    test_body(|| {
        let rt = multi();
        {
            let _guard = rt.enter();
            assert!(Handle::try_current().is_ok());
            // tokio users spawn and create timers inside enter().
            let h = netloop::spawn(async { 1 });
            let sleep = time::sleep(Duration::from_millis(1));
            assert_eq!(rt.block_on(async move { (h.await.unwrap(), sleep.await).0 }), 1);
            {
                let _inner = rt.handle().enter();
                assert!(Handle::try_current().is_ok());
            }
            assert!(Handle::try_current().is_ok(), "the outer guard still holds");
        }
        assert!(Handle::try_current().is_err());

        // Entering another runtime nests and restores.
        let other = current();
        let _a = rt.enter();
        {
            let _b = other.enter();
            assert_eq!(Handle::current().runtime_flavor(), RuntimeFlavor::CurrentThread);
        }
        assert_eq!(Handle::current().runtime_flavor(), RuntimeFlavor::MultiThread);
    });
}

#[test]
fn handle_spawn_and_block_on_from_other_threads() {
    test_body(|| {
        let rt = multi();
        let handle = rt.handle().clone();
        let worker = thread::spawn(move || {
            let h = handle.spawn(async { 5 });
            let v = handle.block_on(async { h.await.unwrap() + 1 });
            let nested = handle.block_on(async {
                time::sleep(Duration::from_millis(1)).await;
                Handle::current().spawn(async { 10 }).await.unwrap()
            });
            (v, nested)
        });
        assert_eq!(worker.join().unwrap(), (6, 10));
        assert!(!format!("{:?}", rt.handle()).is_empty());
    });
}

#[test]
fn block_on_inside_a_task_panics() {
    test_body(|| {
        let rt = multi();
        let err = rt
            .block_on(async {
                netloop::spawn(async {
                    let handle = Handle::current();
                    handle.block_on(async { 1 })
                })
                .await
            })
            .unwrap_err();
        assert!(err.is_panic());
        let msg = panic_text(&*err.into_panic());
        assert!(msg.contains("Cannot start a runtime from within a runtime"), "{msg}");
        // The runtime is fine afterwards.
        assert_eq!(rt.block_on(rt.spawn(async { 2 })).unwrap(), 2);
    });
}

#[test]
fn current_thread_drives_its_loop_inside_block_on() {
    test_body(|| {
        let rt = current();
        assert_eq!(rt.handle().runtime_flavor(), RuntimeFlavor::CurrentThread);
        let event_loop = rt.handle().event_loops().get(0).unwrap().clone();
        assert_eq!(event_loop.state(), LoopState::NotStarted);

        // Spawned before block_on: nothing runs it until block_on drives the loop.
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let early = rt.spawn(async move {
            r.store(true, Ordering::SeqCst);
            thread::current().id()
        });
        assert!(!early.is_finished());
        assert!(!ran.load(Ordering::SeqCst));

        let here = thread::current().id();
        let el = event_loop.clone();
        let (early_thread, inner_threads) = rt.block_on(async move {
            // The future and every task run on this very thread, which drives the loop.
            assert!(el.in_event_loop());
            assert!(EventLoopHandle::current().is_some());
            let mut inner = Vec::new();
            for _ in 0..4 {
                inner.push(
                    netloop::spawn(async {
                        time::sleep(Duration::from_millis(1)).await;
                        thread::current().id()
                    })
                    .await
                    .unwrap(),
                );
            }
            (early.await.unwrap(), inner)
        });
        assert_eq!(early_thread, here);
        assert!(inner_threads.iter().all(|t| *t == here));
        assert!(
            !event_loop.in_event_loop(),
            "outside block_on this thread drives nothing"
        );

        // A task left pending by one block_on goes on in the next one.
        let (tx, rx) = futures::channel::oneshot::channel::<u32>();
        let pending = rt.spawn(async move { rx.await.unwrap() * 2 });
        rt.block_on(task::yield_now());
        assert!(!pending.is_finished());
        tx.send(21).unwrap();
        assert_eq!(rt.block_on(pending).unwrap(), 42);
    });
}

#[test]
fn current_thread_is_woken_by_other_threads() {
    test_body(|| {
        let rt = current();
        let out = rt.block_on(async {
            // spawn_blocking completes on another thread and wakes this loop.
            let a = task::spawn_blocking(|| {
                thread::sleep(Duration::from_millis(20));
                1
            })
            .await
            .unwrap();
            // So does a plain thread sending on a channel.
            let (tx, rx) = futures::channel::oneshot::channel();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(20));
                tx.send(2).unwrap();
            });
            let b = rx.await.unwrap();
            // And another thread spawning onto this runtime.
            let handle = Handle::current();
            let c = thread::spawn(move || handle.spawn(async { 3 }))
                .join()
                .unwrap()
                .await
                .unwrap();
            a + b + c
        });
        assert_eq!(out, 6);
    });
}

#[test]
fn dropping_the_runtime_drops_tasks_on_their_loops() {
    test_body(|| {
        let rt = multi();
        let (dropped_tx, dropped_rx) = mpsc::channel();
        let (started_tx, started_rx) = mpsc::channel();
        let mut handles = Vec::new();
        for _ in 0..4 {
            let signal = DropSignal(dropped_tx.clone());
            let started_tx = started_tx.clone();
            handles.push(rt.spawn(async move {
                let _signal = signal;
                started_tx.send(thread_name()).unwrap();
                std::future::pending::<()>().await;
            }));
        }
        drop(dropped_tx);
        let mut started: Vec<_> = (0..4).map(|_| started_rx.recv_timeout(WAIT).unwrap()).collect();
        drop(rt);
        // Every future was dropped by the time drop returned, each on a loop thread.
        let mut dropped: Vec<_> = dropped_rx.try_iter().collect();
        started.sort();
        dropped.sort();
        assert_eq!(dropped, started);
        // Their JoinHandles resolve as cancelled.
        for h in handles {
            let err = futures::executor::block_on(h).unwrap_err();
            assert!(err.is_cancelled());
        }
    });
}

#[test]
fn shutdown_timeout_returns_despite_a_stuck_blocking_task() {
    test_body(|| {
        let rt = multi();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (entered_tx, entered_rx) = mpsc::channel();
        let (dropped_tx, dropped_rx) = mpsc::channel();
        let signal = DropSignal(dropped_tx);
        let sleeping = rt.spawn(async move {
            let _signal = signal;
            time::sleep(Duration::from_secs(60)).await;
        });
        let _stuck = rt.spawn_blocking(move || {
            entered_tx.send(()).unwrap();
            let _ = release_rx.recv_timeout(Duration::from_secs(10));
        });
        entered_rx.recv_timeout(WAIT).unwrap();
        let start = std::time::Instant::now();
        rt.shutdown_timeout(Duration::from_millis(100));
        let took = start.elapsed();
        release_tx.send(()).unwrap();
        assert!(took >= Duration::from_millis(100), "{took:?}");
        assert!(took < Duration::from_secs(2), "shutdown_timeout(100ms) took {took:?}");
        // The sleeping task was dropped, on its loop.
        assert!(!dropped_rx.recv_timeout(WAIT).unwrap().is_empty());
        assert!(futures::executor::block_on(sleeping).unwrap_err().is_cancelled());
    });
}

#[test]
fn shutdown_background_does_not_wait() {
    test_body(|| {
        let rt = multi();
        let handle = rt.handle().clone();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (entered_tx, entered_rx) = mpsc::channel();
        let _stuck = rt.spawn_blocking(move || {
            entered_tx.send(()).unwrap();
            let _ = release_rx.recv_timeout(Duration::from_secs(10));
        });
        entered_rx.recv_timeout(WAIT).unwrap();
        let start = std::time::Instant::now();
        rt.shutdown_background();
        let took = start.elapsed();
        release_tx.send(()).unwrap();
        assert!(
            took < Duration::from_millis(500),
            "shutdown_background blocked for {took:?}"
        );
        // The loops do stop, in the background.
        for l in handle.event_loops().iter() {
            l.await_termination(WAIT).expect("the loop terminates");
        }
        assert!(
            futures::executor::block_on(handle.spawn(async {}))
                .unwrap_err()
                .is_cancelled()
        );
    });
}

#[test]
fn dropping_a_current_thread_runtime_drops_its_tasks() {
    test_body(|| {
        let rt = current();
        let (dropped_tx, dropped_rx) = mpsc::channel();
        let signal = DropSignal(dropped_tx);
        let h = rt.spawn(async move {
            let _signal = signal;
            std::future::pending::<()>().await;
        });
        rt.block_on(task::yield_now());
        drop(rt);
        assert_eq!(dropped_rx.recv_timeout(WAIT).unwrap(), thread_name());
        assert!(futures::executor::block_on(h).unwrap_err().is_cancelled());
    });
}

#[test]
fn runtime_flavor_of_each_builder() {
    test_body(|| {
        assert_eq!(multi().handle().runtime_flavor(), RuntimeFlavor::MultiThread);
        assert_eq!(current().handle().runtime_flavor(), RuntimeFlavor::CurrentThread);
        let rt = current();
        assert_eq!(
            rt.block_on(async { Handle::current().runtime_flavor() }),
            RuntimeFlavor::CurrentThread
        );
    });
}

#[test]
fn spawns_racing_shutdown_all_resolve() {
    // Every JoinHandle resolves, Ok or cancelled, however a spawn interleaves with the
    // runtime shutting down (tokio: a spawn after shutdown gives a cancelled JoinError).
    // Two threads spawn without pause while the runtime shuts down; the race is narrow,
    // so it is run for several rounds.
    const SPAWNERS: usize = 2;
    netloop_tests::within(Duration::from_secs(10), || {
        for round in 0..20 {
            let rt = netloop_tests::single_loop();
            let handle = rt.handle().clone();
            let stop = Arc::new(AtomicBool::new(false));
            let (going_tx, going_rx) = mpsc::channel();
            let spawners: Vec<_> = (0..SPAWNERS)
                .map(|_| {
                    let (handle, stop, going_tx) = (handle.clone(), stop.clone(), going_tx.clone());
                    thread::spawn(move || {
                        let mut handles = Vec::new();
                        while !stop.load(Ordering::Relaxed) && handles.len() < 20_000 {
                            // A big future: building the task takes a while, which widens
                            // the window between the spawn's checks and its enqueue.
                            let ballast = [1u8; 32 * 1024];
                            handles.push(handle.spawn(async move {
                                task::yield_now().await;
                                ballast[0]
                            }));
                            if handles.len() == 1 {
                                going_tx.send(()).unwrap();
                            }
                        }
                        handles
                    })
                })
                .collect();
            for _ in 0..SPAWNERS {
                going_rx.recv_timeout(WAIT).unwrap();
            }
            rt.shutdown_timeout(Duration::from_secs(1));
            stop.store(true, Ordering::Relaxed);
            for spawner in spawners {
                let handles = spawner.join().unwrap();
                let (done_tx, done_rx) = mpsc::channel();
                // Resolve them on a thread of their own: a hang must not hang the test.
                thread::spawn(move || {
                    for h in handles {
                        if let Err(e) = futures::executor::block_on(h) {
                            assert!(e.is_cancelled());
                        }
                    }
                    done_tx.send(()).unwrap();
                });
                match done_rx.recv_timeout(Duration::from_secs(1)) {
                    Ok(()) => {}
                    Err(RecvTimeoutError::Timeout) => {
                        panic!("round {round}: a JoinHandle of a spawn that raced shutdown never resolves")
                    }
                    Err(RecvTimeoutError::Disconnected) => panic!("round {round}: a JoinHandle gave a panic"),
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------------
// Names, ids, park hooks and metrics (tokio's stable Builder and Handle API)
// ---------------------------------------------------------------------------------

#[test]
fn name_and_id_identify_the_runtime() {
    test_body(|| {
        let rt = netloop::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .name("billing")
            .build()
            .unwrap();
        assert_eq!(rt.handle().name(), Some("billing"));
        let (name, id) = rt.block_on(async { (Handle::current().name().map(str::to_owned), Handle::current().id()) });
        assert_eq!(name.as_deref(), Some("billing"));
        assert_eq!(id, rt.handle().id(), "every handle of a runtime has its id");
        let other = current();
        assert_eq!(other.handle().name(), None, "no name unless given");
        assert_ne!(other.handle().id(), rt.handle().id());
        assert_eq!(other.handle().id().to_string(), format!("{}", other.handle().id()));
    });
}

#[test]
fn valid_tokio_builder_values_build() {
    netloop::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .global_queue_interval(31)
        .max_io_events_per_tick(256)
        .build()
        .unwrap();
}

#[test]
fn park_hooks_run_on_the_loop_thread_as_it_blocks_and_wakes() {
    test_body(|| {
        let parks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let unparks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let on_loop = Arc::new(AtomicBool::new(true));
        let (p, u, o) = (parks.clone(), unparks.clone(), on_loop.clone());
        let rt = netloop::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .on_thread_park(move || {
                p.fetch_add(1, Ordering::SeqCst);
                if EventLoopHandle::current().is_none() {
                    o.store(false, Ordering::SeqCst);
                }
            })
            .on_thread_unpark(move || {
                u.fetch_add(1, Ordering::SeqCst);
            })
            .enable_all()
            .build()
            .unwrap();
        // The task waits on a timer: its loop blocks, then the timer wakes it.
        rt.block_on(async {
            task::spawn(async { time::sleep(Duration::from_millis(20)).await })
                .await
                .unwrap()
        });
        assert!(parks.load(Ordering::SeqCst) >= 1, "the loop parked while the timer ran");
        assert!(unparks.load(Ordering::SeqCst) >= 1, "and woke for it");
        assert!(on_loop.load(Ordering::SeqCst), "the hooks run on the loop's thread");
        let m = rt.metrics();
        assert!(m.worker_park_count(0) >= 1);
        assert!(m.worker_park_unpark_count(0) >= m.worker_park_count(0));
    });
}

#[test]
fn runtime_metrics_count_workers_alive_tasks_and_busy_time() {
    test_body(|| {
        let rt = netloop::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let m = rt.metrics();
        assert_eq!(m.num_workers(), 2);
        assert_eq!(m.num_alive_tasks(), 0);
        assert_eq!(m.global_queue_depth(), 0);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let waiting = rt.spawn(async move {
            let _ = rx.await;
        });
        // Published by the loop once per iteration.
        let deadline = std::time::Instant::now() + WAIT;
        while m.num_alive_tasks() != 1 {
            assert!(
                std::time::Instant::now() < deadline,
                "the waiting task is counted alive"
            );
            thread::yield_now();
        }
        tx.send(()).unwrap();
        rt.block_on(waiting).unwrap();
        // Busy time is published as a loop goes idle, which it does once the task ended.
        let deadline = std::time::Instant::now() + WAIT;
        while (0..2).map(|w| m.worker_total_busy_duration(w)).sum::<Duration>() == Duration::ZERO {
            assert!(std::time::Instant::now() < deadline, "the loops did some work");
            thread::yield_now();
        }
        let out_of_range = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| m.worker_park_count(2)));
        assert!(out_of_range.is_err(), "worker 2 of 2 panics, as in tokio");
    });
}

#[test]
fn worker_index_names_the_loop_of_the_calling_thread() {
    test_body(|| {
        assert_eq!(netloop::runtime::worker_index(), None, "outside a runtime");
        let rt = netloop::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        rt.block_on(async {
            assert_eq!(
                netloop::runtime::worker_index(),
                None,
                "block_on of a multi-thread runtime"
            );
            let mut seen = std::collections::HashSet::new();
            for l in 0..2 {
                let event_loop = Handle::current().event_loops().get(l).unwrap().clone();
                let index = netloop::task::spawn_on(&event_loop, async { netloop::runtime::worker_index() })
                    .await
                    .unwrap();
                seen.insert(index);
            }
            assert_eq!(seen, [Some(0), Some(1)].into_iter().collect());
            let blocking = task::spawn_blocking(netloop::runtime::worker_index).await.unwrap();
            assert_eq!(blocking, None, "a blocking-pool thread");
        });
        let rt = current();
        assert_eq!(rt.block_on(async { netloop::runtime::worker_index() }), Some(0));
    });
}

#[test]
fn handle_block_on_of_a_current_thread_runtime_drives_the_loop_but_is_not_its_worker() {
    test_body(|| {
        let rt = current();
        let (index, slept, on_loop) = rt.handle().block_on(async {
            let index = netloop::runtime::worker_index();
            // The loop is driven meanwhile: a timer fires and a task runs.
            netloop::time::sleep(Duration::from_millis(5)).await;
            let on_loop = netloop::spawn(async { netloop::runtime::worker_index() })
                .await
                .unwrap();
            (index, true, on_loop)
        });
        assert_eq!((index, slept, on_loop), (None, true, Some(0)));
        // Not a worker, so `block_in_place` runs its closure in place, and a nested
        // `Handle::block_on` in it runs its future (the loop waits meanwhile, as the
        // outer call holds it).
        let nested = rt.handle().block_on(async {
            task::block_in_place(|| {
                Handle::current().block_on(async {
                    task::yield_now().await;
                    7
                })
            })
        });
        assert_eq!(nested, 7);
        assert_eq!(rt.block_on(async { netloop::runtime::worker_index() }), Some(0));
    });
}

#[test]
fn a_second_block_on_of_a_current_thread_runtime_runs_while_the_first_drives_it() {
    test_body(|| {
        let rt = Arc::new(current());
        let (entered_tx, entered_rx) = mpsc::channel();
        let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
        let owner_rt = rt.clone();
        let owner = thread::spawn(move || {
            owner_rt.block_on(async move {
                entered_tx.send(()).unwrap();
                release_rx.await.unwrap();
                netloop::runtime::worker_index()
            })
        });
        entered_rx.recv_timeout(WAIT).unwrap();
        // Before: the second caller waited for the first to finish, which here waits
        // for the second: a deadlock.
        let other_rt = rt.clone();
        let other = thread::spawn(move || {
            other_rt.block_on(async {
                // A task spawned from the waiting thread runs on the driven loop.
                let on_loop = netloop::spawn(async { netloop::runtime::worker_index() })
                    .await
                    .unwrap();
                (netloop::runtime::worker_index(), on_loop)
            })
        });
        assert_eq!(other.join().unwrap(), (None, Some(0)));
        release_tx.send(()).unwrap();
        assert_eq!(owner.join().unwrap(), Some(0));
    });
}

#[test]
fn io_on_a_dropped_runtime_is_a_shutdown_error() {
    test_body(|| {
        let rt1 = current();
        let listener = rt1.block_on(async { netloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap() });
        drop(rt1);
        let rt2 = current();
        rt2.block_on(async {
            let err = listener.accept().await.unwrap_err();
            assert!(netloop::runtime::is_rt_shutdown_err(&err), "{err}");
        });
        let look_alike = std::io::Error::other("the event loop this I/O resource is registered with has shut down");
        assert!(!netloop::runtime::is_rt_shutdown_err(&look_alike));
        assert!(!netloop::runtime::is_rt_shutdown_err(&std::io::Error::from(
            std::io::ErrorKind::Other
        )));
    });
}

#[test]
fn runtimes_and_handles_cross_catch_unwind() {
    fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
    unwind_safe::<Runtime>();
    unwind_safe::<Handle>();
    unwind_safe::<netloop::runtime::LocalRuntime>();
    unwind_safe::<task::JoinHandle<()>>();
    unwind_safe::<task::AbortHandle>();
    test_body(|| {
        let rt = current();
        let caught = std::panic::catch_unwind(|| rt.block_on(async { panic!("in block_on") }));
        assert!(caught.is_err());
        assert_eq!(rt.block_on(async { 5 }), 5, "the runtime is usable after the panic");
    });
}

#[test]
fn max_io_events_per_busy_tick_of_one_serves_every_connection() {
    test_body(|| {
        let rt = netloop::runtime::Builder::new_current_thread()
            .max_io_events_per_busy_tick(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            use netloop::io::{AsyncReadExt, AsyncWriteExt};
            let stop = Arc::new(AtomicBool::new(false));
            for _ in 0..4 {
                let stop = stop.clone();
                netloop::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        task::yield_now().await;
                    }
                });
            }
            let listener = netloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            netloop::spawn(async move {
                loop {
                    let (mut s, _) = listener.accept().await.unwrap();
                    netloop::spawn(async move {
                        let mut buf = [0u8; 4];
                        while s.read_exact(&mut buf).await.is_ok() {
                            s.write_all(&buf).await.unwrap();
                        }
                    });
                }
            });
            let clients: Vec<_> = (0..8)
                .map(|_| {
                    netloop::spawn(async move {
                        let mut s = netloop::net::TcpStream::connect(addr).await.unwrap();
                        for _ in 0..8 {
                            s.write_all(b"ping").await.unwrap();
                            s.read_exact(&mut [0u8; 4]).await.unwrap();
                        }
                    })
                })
                .collect();
            for c in clients {
                c.await.unwrap();
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
}

#[test]
fn block_on_inside_block_on_panics_even_off_the_loops() {
    test_body(|| {
        let rt1 = multi();
        let rt2 = multi();
        let msg = panic_message(|| rt1.block_on(async { rt2.block_on(async { "hello" }) }));
        assert!(msg.starts_with("Cannot start a runtime from within a runtime"), "{msg}");
        // Both runtimes are usable afterwards, and block_in_place lifts the rule.
        assert_eq!(rt2.block_on(async { 1 }), 1);
        let inner = rt1.block_on(async { task::block_in_place(|| rt2.block_on(async { 2 })) });
        assert_eq!(inner, 2);
    });
}

#[test]
fn dropping_a_runtime_inside_block_on_panics() {
    test_body(|| {
        let outer = multi();
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            outer.block_on(async {
                drop(netloop::runtime::Builder::new_current_thread().build().unwrap());
            })
        }));
        let payload = dropped.unwrap_err();
        let msg = payload.downcast_ref::<&str>().copied().unwrap_or_default();
        assert!(msg.starts_with("Cannot drop a runtime"), "{msg}");
        // shutdown_background does not wait, so it is allowed there.
        outer.block_on(async {
            netloop::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .shutdown_background();
        });
    });
}

#[test]
fn enter_guards_dropped_out_of_order_panic() {
    test_body(|| {
        let (rt1, rt2) = (current(), current());
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let first = rt1.enter();
            let second = rt2.enter();
            drop(first);
            drop(second);
        }));
        let payload = caught.unwrap_err();
        let msg = payload.downcast_ref::<&str>().copied().unwrap_or_default();
        assert!(msg.starts_with("`EnterGuard` values dropped out of order"), "{msg}");
        // In order is fine, and the context is whole afterwards.
        {
            let _a = rt1.enter();
            let _b = rt2.enter();
        }
        assert!(Handle::try_current().is_err());
    });
}

#[test]
fn block_on_after_shutdown_runs_the_future_but_timers_panic() {
    test_body(|| {
        for rt in [current(), multi()] {
            let handle = rt.handle().clone();
            let sleep = {
                let _enter = rt.enter();
                time::sleep(Duration::from_millis(10))
            };
            rt.shutdown_timeout(WAIT);
            // A future that needs no loop still completes, as on tokio.
            assert_eq!(handle.block_on(async { 7 }), 7);
            // A timer cannot fire any more: polling one panics with tokio's message.
            let msg = panic_message(|| handle.block_on(sleep));
            assert!(msg.contains("it is being shutdown"), "{msg}");
        }
    });
}

#[test]
fn a_current_thread_runtimes_tasks_see_it_as_current_when_dropped_with_it() {
    struct SeesRuntime(mpsc::Sender<bool>);
    impl Drop for SeesRuntime {
        fn drop(&mut self) {
            let _ = self.0.send(Handle::try_current().is_ok());
        }
    }
    test_body(|| {
        let (tx, rx) = mpsc::channel();
        let rt = current();
        let guard = SeesRuntime(tx);
        // Never polled: the runtime's loop never ran before the drop.
        drop(rt.spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await
        }));
        drop(rt);
        assert_eq!(rx.recv_timeout(WAIT), Ok(true));
    });
}

#[test]
fn work_made_by_the_park_hook_runs_before_the_loop_sleeps() {
    test_body(|| {
        let woken = Arc::new(AtomicBool::new(false));
        let notify = Arc::new(tokio::sync::Notify::new());
        let (w, n) = (woken.clone(), notify.clone());
        let rt = netloop::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_park(move || {
                // The first park spawns a task that wakes block_on's future: without a
                // second look the loop would sleep with it queued, for good.
                if !w.swap(true, Ordering::SeqCst) {
                    let n = n.clone();
                    netloop::spawn(async move { n.notify_one() });
                }
            })
            .build()
            .unwrap();
        rt.block_on(notify.notified());
        assert!(woken.load(Ordering::SeqCst));
    });
}

#[test]
fn a_current_thread_runtime_in_a_thread_local_drops_at_thread_exit() {
    thread_local! {
        static RT: std::cell::RefCell<Option<Runtime>> = const { std::cell::RefCell::new(None) };
    }
    test_body(|| {
        let exited = thread::spawn(|| {
            RT.with(|rt| {
                let runtime = current();
                runtime.spawn(std::future::pending::<()>());
                *rt.borrow_mut() = Some(runtime);
            });
            // The runtime drops with the thread's locals, after the context's own.
        })
        .join();
        assert!(exited.is_ok(), "dropping the runtime at thread exit panicked");
    });
}
