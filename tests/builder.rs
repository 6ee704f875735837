//! `runtime::Builder`: every knob, and invalid values reported as errors.

use std::collections::HashSet;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use netloop::event_loop::LoopState;
use netloop::runtime::{Builder, RuntimeFlavor};
use netloop::{task, time};
use netloop_tests::{WAIT, is_default_loop_name, one_blocking_thread, panic_message, test_body, thread_name};

/// The name of the thread each loop of `rt` runs on, by loop index.
fn loop_thread_names(rt: &netloop::runtime::Runtime) -> Vec<String> {
    rt.block_on(async {
        let mut names = Vec::new();
        for l in netloop::runtime::Handle::current().event_loops().iter() {
            names.push(task::spawn_on(l, async { thread_name() }).await.unwrap());
        }
        names
    })
}

#[test]
fn worker_threads_sets_the_number_of_loops_and_threads() {
    test_body(|| {
        for n in [1, 2, 3] {
            let rt = Builder::new_multi_thread()
                .worker_threads(n)
                .enable_all()
                .build()
                .unwrap();
            assert_eq!(rt.handle().event_loops().len(), n);
            assert!(!rt.handle().event_loops().is_empty());
            assert_eq!(rt.handle().runtime_flavor(), RuntimeFlavor::MultiThread);
            // Many tasks spread over exactly n distinct threads.
            let threads: HashSet<_> = rt.block_on(async {
                let mut handles = Vec::new();
                for _ in 0..(n * 8) {
                    handles.push(netloop::spawn(async { thread::current().id() }));
                }
                let mut ids = HashSet::new();
                for h in handles {
                    ids.insert(h.await.unwrap());
                }
                ids
            });
            assert_eq!(threads.len(), n, "{n} loops, {n} threads");
        }
    });
}

#[test]
fn default_thread_names_are_netloop_group_index() {
    test_body(|| {
        let rt = Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let names = loop_thread_names(&rt);
        assert_eq!(names.len(), 2);
        for (i, name) in names.iter().enumerate() {
            assert!(is_default_loop_name(name), "unexpected loop thread name {name:?}");
            assert!(name.ends_with(&format!("-{i}")), "loop {i} is named {name:?}");
        }
        let group = |n: &str| n.split('-').nth(1).unwrap().to_owned();
        assert_eq!(group(&names[0]), group(&names[1]), "one group number per runtime");

        // A second runtime gets another group number.
        let other = Builder::new_multi_thread().worker_threads(1).build().unwrap();
        let other_names = loop_thread_names(&other);
        assert_ne!(group(&other_names[0]), group(&names[0]));

        // Blocking threads carry the runtime's name too.
        let blocking = rt.block_on(rt.spawn_blocking(thread_name)).unwrap();
        assert_eq!(blocking, format!("netloop-{}-blocking", group(&names[0])));
    });
}

#[test]
fn thread_name_names_every_runtime_thread() {
    test_body(|| {
        let rt = Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("my-worker")
            .enable_all()
            .build()
            .unwrap();
        assert_eq!(loop_thread_names(&rt), ["my-worker", "my-worker"]);
        let blocking = rt.block_on(async { task::spawn_blocking(thread_name).await }).unwrap();
        assert_eq!(blocking, "my-worker");
        // A String works as well as a &str.
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(String::from("owned"))
            .build()
            .unwrap();
        assert_eq!(loop_thread_names(&rt), ["owned"]);
    });
}

#[test]
fn thread_name_fn_is_called_for_each_thread() {
    test_body(|| {
        let counter = Arc::new(AtomicUsize::new(0));
        let c = counter.clone();
        let rt = Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name_fn(move || format!("custom-{}", c.fetch_add(1, Ordering::Relaxed)))
            .enable_all()
            .build()
            .unwrap();
        let mut names = loop_thread_names(&rt);
        names.sort();
        assert_eq!(names, ["custom-0", "custom-1"]);
        let blocking = rt.block_on(rt.spawn_blocking(thread_name)).unwrap();
        assert_eq!(blocking, "custom-2");
        assert_eq!(counter.load(Ordering::Relaxed), 3);
    });
}

/// Uses about `kib` KiB of stack.
#[inline(never)]
fn use_stack(kib: usize) -> u64 {
    let buf = [7u8; 1024];
    let here = std::hint::black_box(&buf).iter().map(|&b| u64::from(b)).sum::<u64>();
    if kib <= 1 { here } else { here + use_stack(kib - 1) }
}

#[test]
fn thread_stack_size_gives_loop_and_blocking_threads_a_bigger_stack() {
    test_body(|| {
        // 6 MiB of recursion overflows std's 2 MiB default; 16 MiB of stack holds it.
        const KIB: usize = 6 * 1024;
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_stack_size(16 * 1024 * 1024)
            .enable_all()
            .build()
            .unwrap();
        let expected = 7 * 1024 * KIB as u64;
        let on_loop = rt.block_on(rt.spawn(async { use_stack(KIB) })).unwrap();
        assert_eq!(on_loop, expected);
        let on_blocking = rt.block_on(rt.spawn_blocking(|| use_stack(KIB))).unwrap();
        assert_eq!(on_blocking, expected);
    });
}

#[test]
fn on_thread_start_and_stop_run_on_every_runtime_thread() {
    test_body(|| {
        let started = Arc::new(Mutex::new(Vec::new()));
        let stopped = Arc::new(Mutex::new(Vec::new()));
        let (s, t) = (started.clone(), stopped.clone());
        let rt = Builder::new_multi_thread()
            .worker_threads(2)
            .on_thread_start(move || s.lock().unwrap().push(thread_name()))
            .on_thread_stop(move || t.lock().unwrap().push(thread_name()))
            .enable_all()
            .build()
            .unwrap();
        // The callbacks run on the runtime's threads, which are in its context.
        let names = loop_thread_names(&rt);
        rt.block_on(rt.spawn_blocking(|| assert!(netloop::runtime::Handle::try_current().is_ok())))
            .unwrap();
        drop(rt);
        let mut started = started.lock().unwrap().clone();
        let mut stopped = stopped.lock().unwrap().clone();
        started.sort();
        stopped.sort();
        assert_eq!(started.len(), 3, "two loops and one blocking thread: {started:?}");
        for name in &names {
            assert!(started.contains(name), "{name} never started: {started:?}");
        }
        assert!(started.iter().any(|n| n.ends_with("-blocking")));
        assert_eq!(
            stopped, started,
            "every started thread stopped by the time the runtime is dropped"
        );
    });
}

#[test]
fn on_thread_stop_has_run_on_blocking_threads_when_drop_returns() {
    // tokio: dropping the runtime waits for its blocking threads to exit, and a thread
    // runs `on_thread_stop` before it exits. A callback that takes a moment must still
    // have finished when `drop` returns.
    test_body(|| {
        let stopped = Arc::new(Mutex::new(Vec::new()));
        let s = stopped.clone();
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .on_thread_stop(move || {
                thread::sleep(Duration::from_millis(100));
                s.lock().unwrap().push(thread_name());
            })
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            rt.spawn(async {}).await.unwrap();
            rt.spawn_blocking(|| ()).await.unwrap();
        });
        drop(rt);
        let mut stopped = stopped.lock().unwrap().clone();
        stopped.sort();
        assert_eq!(
            stopped.len(),
            2,
            "on_thread_stop must have returned on the loop thread and on the blocking thread \
             when drop returns; it had on: {stopped:?}"
        );
    });
}

#[test]
fn every_loop_starts_at_build_by_default_as_on_tokio() {
    test_body(|| {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let rt = Builder::new_multi_thread()
            .worker_threads(2)
            .on_thread_start(move || tx.lock().unwrap().send(thread_name()).unwrap())
            .build()
            .unwrap();
        // No task was submitted, and yet both threads start.
        let mut names = vec![rx.recv_timeout(WAIT).unwrap(), rx.recv_timeout(WAIT).unwrap()];
        names.sort();
        assert!(names.iter().all(|n| is_default_loop_name(n)), "{names:?}");
        assert_ne!(names[0], names[1]);
        drop(rt);
    });
}

#[test]
fn loops_start_lazily_without_eager_start() {
    test_body(|| {
        let rt = Builder::new_multi_thread()
            .worker_threads(2)
            .eager_start(false)
            .build()
            .unwrap();
        let loops = rt.handle().event_loops();
        assert!(loops.iter().all(|l| l.state() == LoopState::NotStarted));
        // The first task for a loop starts it.
        let first = loops.get(0).unwrap();
        assert_eq!(rt.block_on(task::spawn_on(first, async { 1 })).unwrap(), 1);
        assert_ne!(first.state(), LoopState::NotStarted);
        assert_eq!(loops.get(1).unwrap().state(), LoopState::NotStarted);
    });
}

#[test]
fn spawn_blocking_panics_as_tokio_does_when_the_os_refuses_every_pool_thread() {
    test_body(|| {
        // A stack as large as the whole user address space: no OS can give it.
        const HUGE_STACK: usize = 1 << 47;
        if thread::Builder::new().stack_size(HUGE_STACK).spawn(|| {}).is_ok() {
            eprintln!("skip: this OS started a thread with a {HUGE_STACK}-byte stack");
            return;
        }
        // A current-thread runtime starts no thread of its own: the blocking pool's
        // first thread is the first one the stack size is asked of.
        let rt = Builder::new_current_thread()
            .thread_stack_size(HUGE_STACK)
            .enable_all()
            .build()
            .unwrap();
        let msg = panic_message(|| rt.block_on(async { task::spawn_blocking(|| 42).await }));
        assert!(msg.starts_with("OS can't spawn worker thread: "), "{msg}");
        // The runtime goes on, and dropping it does not wait for the refused task.
        assert_eq!(rt.block_on(async { task::spawn(async { 7 }).await }).unwrap(), 7);
        drop(rt);
    });
}

#[test]
fn enable_all_io_and_time_are_accepted() {
    test_body(|| {
        for mut b in [Builder::new_multi_thread(), Builder::new_current_thread()] {
            let rt = b
                .worker_threads(2)
                .enable_all()
                .enable_io()
                .enable_time()
                .build()
                .unwrap();
            rt.block_on(async {
                time::sleep(Duration::from_millis(1)).await;
                assert_eq!(netloop::spawn(async { 3 }).await.unwrap(), 3);
            });
        }
        assert!(!format!("{:?}", Builder::new_multi_thread()).is_empty());
    });
}

#[test]
fn timers_and_sockets_need_enable_time_and_enable_io_as_on_tokio() {
    test_body(|| {
        let time_only = Builder::new_current_thread().enable_time().build().unwrap();
        time_only.block_on(async { time::sleep(Duration::from_millis(1)).await });
        let msg = panic_message(|| {
            time_only.block_on(async {
                let _ = netloop::net::TcpListener::bind("127.0.0.1:0").await;
            })
        });
        assert!(msg.contains("IO is disabled. Call `enable_io`"), "{msg}");

        let io_only = Builder::new_multi_thread()
            .worker_threads(1)
            .enable_io()
            .build()
            .unwrap();
        io_only.block_on(async { netloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap() });
        let msg = panic_message(|| io_only.block_on(async { drop(time::sleep(Duration::from_millis(1))) }));
        assert!(msg.contains("timers are disabled. Call `enable_time`"), "{msg}");
        // Spawned tasks see the same runtime: the panic is the task's.
        let task = io_only.spawn(async { drop(time::sleep(Duration::from_millis(1))) });
        let err = io_only.block_on(task).unwrap_err();
        assert!(err.is_panic());
    });
}

#[test]
fn max_blocking_threads_bounds_the_blocking_pool() {
    test_body(|| {
        let rt = one_blocking_thread();
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let threads = rt.block_on(async {
            let mut handles = Vec::new();
            for _ in 0..4 {
                let (running, peak) = (running.clone(), peak.clone());
                handles.push(task::spawn_blocking(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(15));
                    running.fetch_sub(1, Ordering::SeqCst);
                    thread::current().id()
                }));
            }
            let mut ids = HashSet::new();
            for h in handles {
                ids.insert(h.await.unwrap());
            }
            ids
        });
        assert_eq!(
            peak.load(Ordering::SeqCst),
            1,
            "never more than one blocking task at a time"
        );
        assert_eq!(threads.len(), 1);
    });
}

#[test]
fn blocking_tasks_run_concurrently_up_to_max_blocking_threads() {
    // tokio: each spawn_blocking task gets a thread of its own while fewer than
    // max_blocking_threads are busy, so two tasks that wait for each other both run.
    // Here the pool has one idle thread left over from an earlier task when the two
    // are spawned back to back. Whether the idle thread wakes before the second spawn
    // is a race, so the scenario is repeated on fresh runtimes.
    test_body(|| {
        for round in 0..5 {
            let rt = Builder::new_multi_thread()
                .worker_threads(1)
                .max_blocking_threads(4)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                task::spawn_blocking(|| ()).await.unwrap();
                // Let the warm thread go back to waiting for work. (A correct pool
                // passes with or without this pause; it only makes the race likely.)
                time::sleep(Duration::from_millis(30)).await;
                let (a_tx, a_rx) = mpsc::channel::<()>();
                let (b_tx, b_rx) = mpsc::channel::<()>();
                let a = task::spawn_blocking(move || {
                    let _ = a_tx.send(());
                    b_rx.recv_timeout(Duration::from_millis(500)).is_ok()
                });
                let b = task::spawn_blocking(move || {
                    let _ = b_tx.send(());
                    a_rx.recv_timeout(Duration::from_millis(500)).is_ok()
                });
                let (a, b) = (a.await.unwrap(), b.await.unwrap());
                assert!(
                    a && b,
                    "round {round}: the two blocking tasks did not run at the same time \
                     (a met b: {a}, b met a: {b}): one idle thread took both"
                );
            });
        }
    });
}

#[test]
fn thread_keep_alive_lets_idle_blocking_threads_exit() {
    test_body(|| {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_keep_alive(Duration::from_millis(50))
            .on_thread_stop(move || tx.lock().unwrap().send(thread_name()).unwrap())
            .enable_all()
            .build()
            .unwrap();
        let start = std::time::Instant::now();
        let first = rt.block_on(rt.spawn_blocking(|| thread::current().id())).unwrap();
        // The loop thread keeps running; the idle blocking thread leaves on its own.
        let stopped = rx.recv_timeout(WAIT).expect("the idle blocking thread exits");
        assert!(stopped.ends_with("-blocking"), "{stopped}");
        assert!(start.elapsed() >= Duration::from_millis(50));
        // A new blocking task gets a new thread.
        let second = rt.block_on(rt.spawn_blocking(|| thread::current().id())).unwrap();
        assert_ne!(first, second);
    });
}

#[test]
fn a_blocking_thread_that_leaves_frees_its_place_before_its_stop_hook() {
    // tokio: a blocking thread that timed out is out of the pool when it runs
    // `on_thread_stop`, so with `max_blocking_threads(1)` a task spawned during that
    // hook gets a thread of its own instead of waiting for one that never takes work.
    test_body(|| {
        let (leaving_tx, leaving_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (leaving_tx, go_rx) = (Mutex::new(leaving_tx), Mutex::new(go_rx));
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(1)
            .thread_keep_alive(Duration::from_millis(20))
            .on_thread_stop(move || {
                if thread_name().ends_with("-blocking") {
                    let _ = leaving_tx.lock().unwrap().send(());
                    let _ = go_rx.lock().unwrap().recv_timeout(WAIT);
                }
            })
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(rt.spawn_blocking(|| ())).unwrap();
        leaving_rx.recv_timeout(WAIT).expect("the idle blocking thread leaves");
        // That thread is now held in its stop hook.
        let second = rt.block_on(async { time::timeout(WAIT, task::spawn_blocking(|| ())).await });
        drop(go_tx);
        assert!(
            second.is_ok(),
            "a task spawned while the only blocking thread ran its stop hook never ran"
        );
    });
}

#[test]
fn netloop_knobs_build_working_runtimes() {
    test_body(|| {
        for ratio in [1, 50, 100] {
            let rt = Builder::new_multi_thread()
                .worker_threads(2)
                .io_ratio(ratio)
                .event_interval(1)
                .max_pending_tasks(10_000)
                .shutdown_quiet_period(Duration::ZERO)
                .shutdown_timeout(Duration::from_secs(1))
                .eager_start(true)
                .enable_all()
                .build()
                .unwrap();
            let sum = rt.block_on(async {
                let mut set = task::JoinSet::new();
                for i in 0..100u64 {
                    set.spawn(async move {
                        task::yield_now().await;
                        i
                    });
                }
                let mut sum = 0;
                while let Some(r) = set.join_next().await {
                    sum += r.unwrap();
                }
                sum
            });
            assert_eq!(sum, 4950, "io_ratio {ratio}");
        }
    });
}

#[test]
fn max_pending_tasks_rejects_submissions_once_the_inbox_is_full() {
    test_body(|| {
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .max_pending_tasks(16)
            .enable_all()
            .build()
            .unwrap();
        let event_loop = rt.handle().event_loops().get(0).unwrap().clone();
        // Hold the loop inside a closure so that submissions pile up in its inbox.
        let (entered_tx, entered_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        event_loop
            .execute(move || {
                entered_tx.send(()).unwrap();
                let _ = release_rx.recv_timeout(Duration::from_secs(4));
            })
            .unwrap();
        entered_rx.recv_timeout(WAIT).unwrap();

        let (ran_tx, ran_rx) = mpsc::channel();
        for i in 0..16 {
            let ran_tx = ran_tx.clone();
            event_loop.execute(move || ran_tx.send(i).unwrap()).unwrap();
        }
        let full = event_loop.execute(|| {}).expect_err("the 17th submission is refused");
        assert!(full.is_full());
        assert!(!full.is_shutdown());
        assert!(full.into_task().is_some());
        // A spawn refused for the same reason resolves as an error instead of hanging.
        let refused = rt.spawn(async { 1 });

        release_tx.send(()).unwrap();
        let ran: Vec<_> = (0..16).map(|_| ran_rx.recv_timeout(WAIT).unwrap()).collect();
        assert_eq!(ran, (0..16).collect::<Vec<_>>(), "accepted tasks run in order");
        let err = rt.block_on(refused).unwrap_err();
        assert!(err.is_cancelled());
        // Once drained, the loop accepts work again.
        assert_eq!(rt.block_on(rt.spawn(async { 2 })).unwrap(), 2);
    });
}

#[test]
fn shutdown_quiet_period_and_timeout_drive_a_loops_graceful_shutdown() {
    test_body(|| {
        let rt = Builder::new_multi_thread()
            .worker_threads(2)
            .shutdown_quiet_period(Duration::from_millis(150))
            .shutdown_timeout(Duration::from_secs(3))
            .enable_all()
            .build()
            .unwrap();
        let event_loop = rt.handle().event_loops().get(0).unwrap().clone();
        assert_eq!(rt.block_on(task::spawn_on(&event_loop, async { 1 })).unwrap(), 1);

        let start = std::time::Instant::now();
        let termination = event_loop.shutdown_gracefully();
        assert!(event_loop.is_shutting_down());
        // Work submitted during the quiet period is still accepted and run.
        let (tx, rx) = mpsc::channel();
        event_loop.execute(move || tx.send(thread_name()).unwrap()).unwrap();
        assert!(!rx.recv_timeout(WAIT).unwrap().is_empty());
        event_loop
            .await_termination(Duration::from_secs(3))
            .expect("the loop terminates");
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(150),
            "quiet period not honoured: {took:?}"
        );
        assert!(event_loop.is_terminated());
        futures::executor::block_on(termination);
        // The other loop is unaffected.
        let other = rt.handle().event_loops().get(1).unwrap();
        assert_eq!(rt.block_on(task::spawn_on(other, async { 2 })).unwrap(), 2);
    });
}

#[test]
fn shutdown_timeout_bounds_how_long_drop_waits() {
    test_body(|| {
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .shutdown_quiet_period(Duration::ZERO)
            .shutdown_timeout(Duration::from_millis(200))
            .enable_all()
            .build()
            .unwrap();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (entered_tx, entered_rx) = mpsc::channel();
        let stuck = rt.spawn_blocking(move || {
            entered_tx.send(()).unwrap();
            let _ = release_rx.recv_timeout(Duration::from_secs(10));
        });
        entered_rx.recv_timeout(WAIT).unwrap();
        let start = std::time::Instant::now();
        drop(rt);
        let took = start.elapsed();
        release_tx.send(()).unwrap();
        drop(stuck);
        assert!(
            took >= Duration::from_millis(200),
            "drop returned before the timeout: {took:?}"
        );
        assert!(
            took < Duration::from_millis(4000),
            "drop ignored shutdown_timeout: {took:?}"
        );
    });
}

#[test]
fn invalid_netloop_values_are_errors_not_panics() {
    test_body(|| {
        type Tweak = fn(&mut Builder) -> &mut Builder;
        let cases: [(&str, Tweak); 6] = [
            ("io_ratio(0)", |b| b.io_ratio(0)),
            ("io_ratio(101)", |b| b.io_ratio(101)),
            ("quiet period > timeout", |b| {
                b.shutdown_quiet_period(Duration::from_secs(5))
                    .shutdown_timeout(Duration::from_secs(1))
            }),
            ("quiet period > timeout (other order)", |b| {
                b.shutdown_timeout(Duration::from_millis(10))
                    .shutdown_quiet_period(Duration::from_millis(11))
            }),
            ("io_ratio(u32::MAX)", |b| b.io_ratio(u32::MAX)),
            ("idle_spin(1 ms + 1 ns)", |b| {
                b.idle_spin(Duration::from_millis(1) + Duration::from_nanos(1))
            }),
        ];
        for (what, tweak) in cases {
            let mut builder = Builder::new_multi_thread();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tweak(builder.enable_all()).build().map(drop)
            }));
            let err = result.unwrap_or_else(|_| panic!("{what} panicked")).expect_err(what);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}: {err}");
            assert!(!err.to_string().is_empty());
        }
        // The same checks on current_thread (worker_threads does not apply there).
        for (what, tweak) in [
            ("io_ratio(0)", (|b| b.io_ratio(0)) as Tweak),
            ("io_ratio(101)", |b| b.io_ratio(101)),
        ] {
            let err = tweak(&mut Builder::new_current_thread())
                .build()
                .map(drop)
                .expect_err(what);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}");
        }
        // Boundary values are fine.
        for b in [
            Builder::new_multi_thread().worker_threads(1).io_ratio(1),
            Builder::new_multi_thread().worker_threads(1).io_ratio(100),
            Builder::new_multi_thread().worker_threads(1).idle_spin(Duration::ZERO),
            Builder::new_multi_thread()
                .worker_threads(1)
                .idle_spin(Duration::from_millis(1)),
            Builder::new_multi_thread()
                .worker_threads(1)
                .shutdown_quiet_period(Duration::from_secs(1))
                .shutdown_timeout(Duration::from_secs(1)),
        ] {
            b.build().unwrap();
        }
    });
}

#[test]
fn tokio_setters_panic_on_the_values_tokio_rejects() {
    // As tokio's: the setter panics, with tokio's message, at the caller's line.
    type Tweak = fn(&mut Builder) -> &mut Builder;
    let cases: [(&str, Tweak); 7] = [
        ("Worker threads cannot be set to 0", |b| b.worker_threads(0)),
        ("Max blocking threads cannot be set to 0", |b| b.max_blocking_threads(0)),
        ("event_interval must be greater than 0", |b| b.event_interval(0)),
        ("global_queue_interval must be greater than 0", |b| {
            b.global_queue_interval(0)
        }),
        ("runtime name shouldn't be empty", |b| b.name(" ")),
        ("max_io_events_per_tick must be non-zero", |b| {
            b.max_io_events_per_tick(0)
        }),
        ("max_io_events_per_busy_tick must be non-zero", |b| {
            b.max_io_events_per_busy_tick(0)
        }),
    ];
    for (message, tweak) in cases {
        for mut builder in [Builder::new_multi_thread(), Builder::new_current_thread()] {
            assert_eq!(panic_message(|| tweak(&mut builder)), message);
        }
    }
    let location = Arc::new(Mutex::new(None));
    let seen = location.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Only this panic: the other tests of the binary run on other threads.
        if info.payload_as_str() == Some("Worker threads cannot be set to 0") {
            *seen.lock().unwrap() = info.location().map(|l| (l.file().to_owned(), l.line()));
        }
    }));
    let line = line!() + 1;
    let caught = std::panic::catch_unwind(|| drop(Builder::new_multi_thread().worker_threads(0).build()));
    std::panic::set_hook(previous);
    assert!(caught.is_err());
    assert_eq!(*location.lock().unwrap(), Some((file!().to_owned(), line)));
}

#[test]
fn current_thread_ignores_worker_threads() {
    test_body(|| {
        let rt = Builder::new_current_thread().worker_threads(8).build().unwrap();
        assert_eq!(rt.handle().event_loops().len(), 1);
        assert_eq!(rt.handle().runtime_flavor(), RuntimeFlavor::CurrentThread);
    });
}
