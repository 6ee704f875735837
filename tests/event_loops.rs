//! Netty-level access through `handle.event_loops()`: the group and each loop's handle.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use netloop::event_loop::{EventLoopHandle, LoopState, ScheduleError};
use netloop::task;
use netloop_tests::{WAIT, multi, test_body, thread_name};

#[test]
fn group_next_get_iter() {
    test_body(|| {
        let rt = multi();
        let group = rt.handle().event_loops();
        assert_eq!(group.len(), 2);
        assert!(group.get(2).is_none());
        let all: Vec<&EventLoopHandle> = group.iter().collect();
        assert_eq!(all.len(), 2);
        assert_ne!(all[0], all[1]);
        assert_ne!(all[0].id(), all[1].id());
        assert_eq!(group.get(0), Some(all[0]));
        assert!(group.contains(all[1]));
        // next() is round-robin: two calls in a row give both loops, then it wraps.
        let (a, b, c) = (group.next().clone(), group.next().clone(), group.next().clone());
        assert_ne!(a, b);
        assert_eq!(a, c);
        assert!(group.contains(&a) && group.contains(&b));
        // Off-loop spawns also go round-robin: consecutive spawns land on both threads.
        let threads: HashSet<_> = rt.block_on(async {
            let mut ids = HashSet::new();
            for _ in 0..4 {
                ids.insert(netloop::spawn(async { thread::current().id() }).await.unwrap());
            }
            ids
        });
        assert_eq!(threads.len(), 2);
        // A loop of another runtime is not in this group.
        let other = netloop_tests::single_loop();
        assert!(!group.contains(other.handle().event_loops().get(0).unwrap()));
    });
}

#[test]
fn execute_runs_closures_on_the_loop_in_order() {
    test_body(|| {
        let rt = multi();
        let loops = rt.handle().event_loops();
        let (l0, l1) = (loops.get(0).unwrap().clone(), loops.get(1).unwrap().clone());
        assert!(!l0.in_event_loop(), "the test thread is no loop's thread");
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            let (a, b) = (l0.clone(), l1.clone());
            l0.execute(move || {
                tx.send((i, a.in_event_loop(), b.in_event_loop(), thread_name()))
                    .unwrap()
            })
            .unwrap();
        }
        let got: Vec<_> = (0..100).map(|_| rx.recv_timeout(WAIT).unwrap()).collect();
        let thread = &got[0].3;
        for (i, (n, on_l0, on_l1, name)) in got.iter().enumerate() {
            assert_eq!(*n, i, "closures run in submission order");
            assert!(*on_l0 && !*on_l1);
            assert_eq!(name, thread);
        }
        // A closure submitted from the loop itself also runs there, after the current one.
        let order = Arc::new(Mutex::new(Vec::new()));
        let (o, l) = (order.clone(), l1.clone());
        let (done_tx, done_rx) = mpsc::channel();
        l1.execute(move || {
            let o2 = o.clone();
            l.execute(move || {
                o2.lock().unwrap().push("inner");
                done_tx.send(()).unwrap();
            })
            .unwrap();
            o.lock().unwrap().push("outer");
        })
        .unwrap();
        done_rx.recv_timeout(WAIT).unwrap();
        assert_eq!(*order.lock().unwrap(), ["outer", "inner"]);
        // lazy_execute runs too once something else wakes the loop.
        let (lazy_tx, lazy_rx) = mpsc::channel();
        l0.lazy_execute(move || lazy_tx.send(1).unwrap()).unwrap();
        l0.execute(|| {}).unwrap();
        assert_eq!(lazy_rx.recv_timeout(WAIT).unwrap(), 1);
    });
}

#[test]
fn schedule_runs_once_after_the_delay_and_can_be_cancelled() {
    test_body(|| {
        let rt = multi();
        let event_loop = rt.handle().event_loops().get(0).unwrap().clone();
        let (tx, rx) = mpsc::channel();
        let start = Instant::now();
        let t = tx.clone();
        let late = event_loop
            .schedule(Duration::from_millis(40), move || t.send("late").unwrap())
            .unwrap();
        let t = tx.clone();
        let early = event_loop
            .schedule(Duration::from_millis(10), move || t.send("early").unwrap())
            .unwrap();
        let t = tx.clone();
        let cancelled = event_loop
            .schedule(Duration::from_millis(20), move || t.send("cancelled").unwrap())
            .unwrap();
        assert!(cancelled.cancel());
        assert!(!cancelled.cancel(), "a second cancel does nothing");
        assert!(cancelled.is_cancelled() && cancelled.is_done());
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), "early");
        assert!(start.elapsed() >= Duration::from_millis(10));
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), "late");
        assert!(start.elapsed() >= Duration::from_millis(40));
        // One more round trip through the loop: the run has completely finished.
        let (probe_tx, probe_rx) = mpsc::channel();
        event_loop.execute(move || probe_tx.send(()).unwrap()).unwrap();
        probe_rx.recv_timeout(WAIT).unwrap();
        assert!(early.is_done() && !early.is_cancelled());
        assert!(!late.cancel(), "too late to cancel a task that ran");
        assert!(!late.is_cancelled());
        // schedule_at, including a deadline in the past.
        let t = tx.clone();
        event_loop
            .schedule_at(Instant::now() - Duration::from_millis(5), move || {
                t.send("past").unwrap()
            })
            .unwrap();
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), "past");
        // A huge delay is accepted (clamped), and cancels cleanly.
        let far = event_loop.schedule(Duration::MAX, || unreachable!()).unwrap();
        assert!(far.cancel());
        drop(tx);
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "the cancelled task never ran"
        );
    });
}

#[test]
fn cancelling_a_one_shot_task_while_it_runs_fails() {
    // Netty makes a scheduled task uncancellable before running it: once it has started,
    // `cancel` returns false and it never reports cancelled.
    test_body(|| {
        let rt = multi();
        let event_loop = rt.handle().event_loops().get(0).unwrap().clone();
        let (running_tx, running_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let handle = event_loop
            .schedule(Duration::from_millis(1), move || {
                running_tx.send(()).unwrap();
                let _ = release_rx.recv_timeout(Duration::from_secs(2));
            })
            .unwrap();
        running_rx.recv_timeout(WAIT).unwrap();
        let cancelled = handle.cancel();
        release_tx.send(()).unwrap();
        let (probe_tx, probe_rx) = mpsc::channel();
        event_loop.execute(move || probe_tx.send(()).unwrap()).unwrap();
        probe_rx.recv_timeout(WAIT).unwrap();
        assert!(!cancelled, "cancel() returned true for a task that was already running");
        assert!(!handle.is_cancelled(), "a task that ran reports cancelled");
        assert!(handle.is_done());
    });
}

#[test]
fn schedule_at_fixed_rate_and_with_fixed_delay() {
    test_body(|| {
        let rt = multi();
        let event_loop = rt.handle().event_loops().get(1).unwrap().clone();
        let start = Instant::now();

        // Fixed rate: the n-th run is never before initial_delay + n * period.
        let (tx, rx) = mpsc::channel();
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let l = event_loop.clone();
        let rate = event_loop
            .schedule_at_fixed_rate(Duration::from_millis(5), Duration::from_millis(10), move || {
                assert!(l.in_event_loop());
                let n = r.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send((n, start.elapsed()));
            })
            .unwrap();
        for expected in 0..4u32 {
            let (n, at) = rx.recv_timeout(WAIT).unwrap();
            assert_eq!(n, expected as usize);
            let due = Duration::from_millis(5) + Duration::from_millis(10) * expected;
            assert!(at >= due, "fixed-rate run {n} at {at:?}, due {due:?}");
        }
        assert!(rate.cancel());
        assert!(rate.is_cancelled());
        // A run already handed to the loop may still finish; after that, nothing.
        let after_cancel = runs.load(Ordering::SeqCst);
        let (probe_tx, probe_rx) = mpsc::channel();
        event_loop
            .schedule(Duration::from_millis(40), move || probe_tx.send(()).unwrap())
            .unwrap();
        probe_rx.recv_timeout(WAIT).unwrap();
        assert!(
            runs.load(Ordering::SeqCst) <= after_cancel + 1,
            "fixed-rate task kept running"
        );

        // Fixed delay: each run starts at least `delay` after the previous one ended.
        let (tx, rx) = mpsc::channel();
        let delay = event_loop
            .schedule_with_fixed_delay(Duration::ZERO, Duration::from_millis(10), move || {
                let began = Instant::now();
                thread::sleep(Duration::from_millis(3));
                let _ = tx.send((began, Instant::now()));
            })
            .unwrap();
        let mut prev_end: Option<Instant> = None;
        for _ in 0..3 {
            let (began, ended) = rx.recv_timeout(WAIT).unwrap();
            if let Some(prev_end) = prev_end {
                assert!(began - prev_end >= Duration::from_millis(10));
            }
            prev_end = Some(ended);
        }
        assert!(delay.cancel());

        // A zero period is an error, not a spinning loop.
        assert!(matches!(
            event_loop.schedule_at_fixed_rate(Duration::ZERO, Duration::ZERO, || {}),
            Err(ScheduleError::ZeroPeriod)
        ));
        assert!(matches!(
            event_loop.schedule_with_fixed_delay(Duration::ZERO, Duration::ZERO, || {}),
            Err(ScheduleError::ZeroPeriod)
        ));
    });
}

#[test]
fn a_panicking_periodic_task_is_cancelled_and_the_loop_goes_on() {
    test_body(|| {
        let rt = multi();
        let event_loop = rt.handle().event_loops().get(0).unwrap().clone();
        let (tx, rx) = mpsc::channel();
        let periodic = event_loop
            .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(5), move || {
                tx.send(()).unwrap();
                panic!("periodic boom");
            })
            .unwrap();
        rx.recv_timeout(WAIT).unwrap();
        let (ok_tx, ok_rx) = mpsc::channel();
        event_loop
            .schedule(Duration::from_millis(30), move || ok_tx.send(()).unwrap())
            .unwrap();
        ok_rx.recv_timeout(WAIT).unwrap();
        assert!(periodic.is_cancelled());
        assert!(rx.try_recv().is_err(), "the task did not run again after panicking");
    });
}

#[test]
fn in_event_loop_is_true_only_on_the_loops_own_thread() {
    test_body(|| {
        let rt = multi();
        let loops: Vec<_> = rt.handle().event_loops().iter().cloned().collect();
        let seen = rt.block_on(async {
            let mut seen = Vec::new();
            for (i, l) in loops.iter().enumerate() {
                let all = loops.clone();
                seen.push(
                    task::spawn_on(l, async move {
                        (i, all.iter().map(|l| l.in_event_loop()).collect::<Vec<_>>())
                    })
                    .await
                    .unwrap(),
                );
            }
            // block_on's thread is none of them.
            assert!(loops.iter().all(|l| !l.in_event_loop()));
            seen
        });
        for (i, flags) in seen {
            for (j, flag) in flags.into_iter().enumerate() {
                assert_eq!(flag, i == j, "loop {j} seen from loop {i}");
            }
        }
        // From a blocking thread too.
        let loops2 = rt.handle().event_loops().iter().cloned().collect::<Vec<_>>();
        assert!(
            rt.block_on(rt.spawn_blocking(move || loops2.iter().all(|l| !l.in_event_loop())))
                .unwrap()
        );
    });
}

#[test]
fn metrics_count_the_loops_work() {
    test_body(|| {
        // Loops that start on first use, so that the figures start from zero.
        let rt = netloop::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .eager_start(false)
            .enable_all()
            .build()
            .unwrap();
        let event_loop = rt.handle().event_loops().get(0).unwrap().clone();
        let before = event_loop.metrics();
        assert_eq!(before.state, LoopState::NotStarted);
        assert_eq!(before.tasks_run, 0);

        // 50 closures, then a second round so the first round's counters are published.
        let (tx, rx) = mpsc::channel();
        for _ in 0..50 {
            let tx = tx.clone();
            event_loop.execute(move || tx.send(()).unwrap()).unwrap();
        }
        for _ in 0..50 {
            rx.recv_timeout(WAIT).unwrap();
        }
        // A task that stays pending, for live_tasks; a timer, for scheduled_tasks.
        let pending = task::spawn_on(&event_loop, std::future::pending::<()>());
        let timer = event_loop.schedule(Duration::from_secs(60), || {}).unwrap();
        let t = tx.clone();
        event_loop.execute(move || t.send(()).unwrap()).unwrap();
        rx.recv_timeout(WAIT).unwrap();
        let t = tx.clone();
        event_loop.execute(move || t.send(()).unwrap()).unwrap();
        rx.recv_timeout(WAIT).unwrap();

        let m = event_loop.metrics();
        assert_eq!(m.state, LoopState::Started);
        assert!(m.tasks_run >= 52, "tasks_run {}", m.tasks_run);
        assert!(m.iterations >= 1);
        assert!(m.live_tasks >= 1, "live_tasks {}", m.live_tasks);
        assert!(m.scheduled_tasks >= 1, "scheduled_tasks {}", m.scheduled_tasks);
        assert!((0.0..=1.0).contains(&m.utilization));
        assert!(m.wakeups_sent + m.wakeups_suppressed >= 1);
        assert!(!format!("{m:?}").is_empty());

        pending.abort();
        timer.cancel();
        // The other loop, never used, has not started.
        assert_eq!(
            rt.handle().event_loops().get(1).unwrap().metrics().state,
            LoopState::NotStarted
        );
    });
}

#[test]
fn group_shutdown_gracefully_and_terminations() {
    test_body(|| {
        let rt = multi();
        let group = rt.handle().event_loops().clone();
        group.start_all();
        assert!(!group.is_terminated());
        group
            .shutdown_gracefully(Duration::ZERO, Duration::from_secs(2))
            .unwrap();
        assert!(group.await_termination(WAIT));
        assert!(group.is_terminated());
        futures::executor::block_on(futures::future::join_all(group.terminations()));
        assert!(group.iter().all(|l| l.state() == LoopState::Terminated));
        // An invalid request is an error, not a panic.
        assert!(
            group
                .shutdown_gracefully(Duration::from_secs(2), Duration::from_secs(1))
                .is_err()
        );
        // The runtime's own drop copes with loops already terminated.
        drop(rt);
    });
}
