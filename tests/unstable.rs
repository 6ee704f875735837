//! tokio's unstable API on netloop (`--cfg tokio_unstable`): the task hooks, the
//! unstable metrics, `UnhandledPanic`, `rng_seed`, `task::Builder`, the alternative
//! timer and, with the `taskdump` feature of this package, task dumps. Each test states
//! a behaviour tokio documents, or what netloop's documentation says the figure means
//! on netloop.
//!
//! ```sh
//! RUSTFLAGS="--cfg tokio_unstable" CARGO_TARGET_DIR=target/unstable \
//!   cargo test -p netloop-tests --features taskdump --test unstable
//! ```
#![cfg(tokio_unstable)]

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use netloop::runtime::{Builder, HistogramConfiguration, LogHistogram, RngSeed, TaskMeta, UnhandledPanic};
use netloop::task::{self, JoinSet, LocalSet};

/// Records what a hook saw: (event, task id, spawn line).
type Log = Arc<Mutex<Vec<(&'static str, task::Id, u32)>>>;

fn hook(log: &Log, event: &'static str) -> impl Fn(&TaskMeta<'_>) + Send + Sync + 'static {
    let log = log.clone();
    move |meta| log.lock().unwrap().push((event, meta.id(), meta.spawned_at().line()))
}

fn hooked(builder: &mut Builder, log: &Log) -> netloop::runtime::Runtime {
    builder
        .on_task_spawn(hook(log, "spawn"))
        .on_before_task_poll(hook(log, "before"))
        .on_after_task_poll(hook(log, "after"))
        .on_task_terminate(hook(log, "terminate"))
        .enable_all()
        .build()
        .unwrap()
}

fn events(log: &Log, id: task::Id) -> Vec<&'static str> {
    log.lock().unwrap().iter().filter(|e| e.1 == id).map(|e| e.0).collect()
}

#[test]
fn every_hook_sees_a_task_once_per_event_in_order() {
    let log = Log::default();
    let rt = hooked(&mut Builder::new_current_thread(), &log);
    let line = line!() + 1;
    let task = rt.spawn(async {
        task::yield_now().await;
    });
    let id = task.id();
    // The spawn hook ran on this thread, before the task could run.
    assert_eq!(events(&log, id), ["spawn"]);
    rt.block_on(task).unwrap();
    // Two polls (the yield), then the end: the terminate hook runs once the future is
    // gone, before the handle sees the end.
    assert_eq!(
        events(&log, id),
        ["spawn", "before", "after", "before", "after", "terminate"]
    );
    assert!(
        log.lock().unwrap().iter().all(|e| e.2 == line),
        "every hook saw the spawn's line"
    );
}

#[test]
fn poll_hooks_fire_on_a_multi_thread_runtime_around_each_poll() {
    let log = Log::default();
    let rt = hooked(Builder::new_multi_thread().worker_threads(2), &log);
    let task = rt.spawn(async {
        for _ in 0..3 {
            task::yield_now().await;
        }
    });
    let id = task.id();
    rt.block_on(task).unwrap();
    drop(rt);
    let seen = events(&log, id);
    assert_eq!(seen.iter().filter(|e| **e == "before").count(), 4);
    assert_eq!(seen.iter().filter(|e| **e == "after").count(), 4);
    assert_eq!(seen.last(), Some(&"terminate"));
}

#[test]
fn the_terminate_hook_sees_aborted_panicked_and_dropped_tasks() {
    let log = Log::default();
    let rt = hooked(&mut Builder::new_current_thread(), &log);
    let ids = rt.block_on(async {
        let aborted = netloop::spawn(std::future::pending::<()>());
        let panicked = netloop::spawn(async { panic!("on purpose") });
        let dropped = netloop::spawn(std::future::pending::<()>());
        let ids = [aborted.id(), panicked.id(), dropped.id()];
        task::yield_now().await;
        aborted.abort();
        assert!(aborted.await.unwrap_err().is_cancelled());
        assert!(panicked.await.unwrap_err().is_panic());
        ids
    });
    assert!(!events(&log, ids[2]).contains(&"terminate"), "still pending");
    // The runtime's drop drops the pending task: its end is seen too.
    drop(rt);
    for id in ids {
        assert_eq!(
            events(&log, id).iter().filter(|e| **e == "terminate").count(),
            1,
            "task {id}"
        );
    }
}

#[test]
fn blocking_tasks_get_only_the_terminate_hook_and_local_sets_none() {
    let log = Log::default();
    let rt = hooked(&mut Builder::new_current_thread(), &log);
    let blocking = rt.spawn_blocking(|| 7);
    let id = blocking.id();
    assert_eq!(rt.block_on(blocking).unwrap(), 7);
    // The hook runs on the pool's thread as the task ends, before its handle resolves.
    assert_eq!(events(&log, id), ["terminate"]);
    let local = LocalSet::new();
    let in_set = local.spawn_local(async {});
    let set_id = in_set.id();
    rt.block_on(local.run_until(in_set)).unwrap();
    assert!(
        events(&log, set_id).is_empty(),
        "tokio's hooks do not see a LocalSet's tasks"
    );
}

#[test]
fn a_local_runtime_reports_its_spawn_local_tasks() {
    let log = Log::default();
    let rt = Builder::new_current_thread()
        .on_task_spawn(hook(&log, "spawn"))
        .build_local(Default::default())
        .unwrap();
    let task = rt.spawn_local(async { std::rc::Rc::new(1) });
    let id = task.id();
    assert_eq!(*rt.block_on(task).unwrap(), 1);
    assert_eq!(events(&log, id), ["spawn"]);
    assert_eq!(rt.metrics().spawned_tasks_count(), 1);
}

#[test]
fn a_panicking_spawn_hook_reaches_the_spawner() {
    let rt = Builder::new_current_thread()
        .on_task_spawn(|_| panic!("the spawn hook refuses"))
        .build()
        .unwrap();
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.spawn(async {}))).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"the spawn hook refuses"));
}

#[test]
fn task_builder_and_join_set_builder_spawn_with_the_callers_location() {
    let log = Log::default();
    let rt = Builder::new_current_thread()
        .on_task_spawn(hook(&log, "spawn"))
        .enable_all()
        .build()
        .unwrap();
    let (line, set_line) = rt.block_on(async {
        let line = line!() + 1;
        let one = task::Builder::new().name("one").spawn(async { 1 }).unwrap();
        assert_eq!(one.await.unwrap(), 1);
        let mut set = JoinSet::new();
        let set_line = line!() + 1;
        set.build_task().name("two").spawn(async { 2 }).unwrap();
        assert_eq!(set.join_next().await.unwrap().unwrap(), 2);
        let blocking = task::Builder::new().spawn_blocking(|| 3).unwrap();
        assert_eq!(blocking.await.unwrap(), 3);
        (line, set_line)
    });
    let lines: Vec<u32> = log.lock().unwrap().iter().map(|e| e.2).collect();
    assert_eq!(lines, [line, set_line], "blocking tasks are not announced");
}

#[test]
fn spawned_tasks_count_counts_the_loops_tasks_not_blocking_ones() {
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let metrics = rt.metrics();
    rt.block_on(async {
        for _ in 0..10 {
            netloop::spawn(async {}).await.unwrap();
        }
        netloop::task::spawn_blocking(|| ()).await.unwrap();
    });
    assert_eq!(metrics.spawned_tasks_count(), 10);
}

#[test]
fn schedules_are_local_on_a_loop_and_remote_from_a_plain_thread() {
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    let metrics = rt.metrics();
    let handle = rt.handle().clone();
    // A spawn from a thread that drives no loop of the runtime is a remote schedule.
    let remote = std::thread::spawn(move || handle.spawn(async {})).join().unwrap();
    rt.block_on(remote).unwrap();
    assert_eq!(metrics.remote_schedule_count(), 1);
    assert_eq!(metrics.worker_local_schedule_count(0), 0);
    // A spawn on the loop's thread, and the wake of the task awaiting it, are local.
    rt.block_on(async {
        netloop::spawn(async { netloop::spawn(async {}).await.unwrap() })
            .await
            .unwrap();
    });
    assert_eq!(metrics.remote_schedule_count(), 1);
    assert_eq!(metrics.worker_local_schedule_count(0), 3);
    assert_eq!(metrics.worker_poll_count(0), 1 + 3);
}

#[test]
fn disable_lifo_slot_hands_a_tasks_spawns_to_another_loop_as_a_steal() {
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .disable_lifo_slot()
        .enable_all()
        .build()
        .unwrap();
    let metrics = rt.metrics();
    let (spawner, child) = rt.block_on(async {
        netloop::spawn(async {
            let me = netloop::runtime::worker_index();
            // The child starts on the other loop: this task may block its own loop
            // until the child has run.
            let (tx, rx) = std::sync::mpsc::channel();
            netloop::spawn(async move { tx.send(netloop::runtime::worker_index()).unwrap() });
            (me, rx.recv_timeout(Duration::from_secs(10)).unwrap())
        })
        .await
        .unwrap()
    });
    assert_ne!(spawner, child);
    drop(rt);
    let steals: u64 = (0..2).map(|w| metrics.worker_steal_count(w)).sum();
    let operations: u64 = (0..2).map(|w| metrics.worker_steal_operations(w)).sum();
    assert_eq!((steals, operations), (1, 1));
    assert_eq!(metrics.worker_steal_count(child.unwrap()), 1);
}

#[test]
fn an_overflow_is_a_run_queue_growing_past_tokios_local_queue() {
    let rt = Builder::new_current_thread().build().unwrap();
    let metrics = rt.metrics();
    rt.block_on(async {
        for _ in 0..256 {
            netloop::spawn(async {});
        }
        assert_eq!(metrics.worker_local_queue_depth(0), 256);
        assert_eq!(metrics.worker_overflow_count(0), 0, "256 tasks fit in tokio's queue");
        for _ in 0..100 {
            netloop::spawn(async {});
        }
        assert_eq!(metrics.worker_overflow_count(0), 1, "crossing 256 counts once");
    });
}

#[test]
fn worker_thread_id_is_the_thread_that_drives_the_loop() {
    let rt = Builder::new_current_thread().build().unwrap();
    let metrics = rt.metrics();
    assert_eq!(metrics.worker_thread_id(0), None, "the loop has not run yet");
    rt.block_on(async {});
    assert_eq!(metrics.worker_thread_id(0), Some(std::thread::current().id()));
    let other = std::thread::scope(|s| s.spawn(|| rt.block_on(async {})).thread().id());
    assert_eq!(metrics.worker_thread_id(0), Some(other));
}

/// While a task blocks in place, the loop's stand-in drives it and is its worker
/// thread; once the state is back, the loop's own thread is again.
#[test]
fn worker_thread_id_comes_back_after_a_block_in_place() {
    let rt = Builder::new_multi_thread().worker_threads(1).build().unwrap();
    let metrics = rt.metrics();
    let (during, after, own) = rt.block_on(async move {
        netloop::spawn(async move {
            let own = std::thread::current().id();
            let during = task::block_in_place(|| {
                // Long enough for the stand-in to take the loop.
                std::thread::sleep(Duration::from_millis(50));
                netloop::runtime::Handle::current().metrics().worker_thread_id(0)
            });
            let after = netloop::runtime::Handle::current().metrics().worker_thread_id(0);
            (during, after, own)
        })
        .await
        .unwrap()
    });
    assert_ne!(during, Some(own), "the stand-in drove the loop meanwhile");
    assert_eq!(after, Some(own), "the loop's thread drives it again");
    drop(metrics);
}

#[test]
fn noops_count_wake_ups_that_ran_nothing() {
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    let metrics = rt.metrics();
    rt.block_on(async {
        // The timer wakes the loop for block_on's future, which is no task.
        netloop::time::sleep(Duration::from_millis(5)).await;
    });
    assert!(metrics.worker_noop_count(0) >= 1);
    assert_eq!(metrics.worker_poll_count(0), 0);
}

#[test]
fn the_budget_forced_yield_count_counts_each_budget_that_ran_out() {
    let rt = Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        for _ in 0..3 * 128 {
            task::coop::consume_budget().await;
        }
    });
    // 384 units at 128 per poll: the budget ran out three times.
    assert_eq!(rt.metrics().budget_forced_yield_count(), 3);
}

#[test]
fn blocking_pool_figures() {
    let rt = Builder::new_current_thread().max_blocking_threads(1).build().unwrap();
    let metrics = rt.metrics();
    assert_eq!((metrics.num_blocking_threads(), metrics.blocking_queue_depth()), (0, 0));
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let first = rt.spawn_blocking(move || wait.recv().unwrap());
    let second = rt.spawn_blocking(|| ());
    // One thread at most: the second waits in the queue until the first is done.
    assert_eq!(metrics.num_blocking_threads(), 1);
    assert!(metrics.blocking_queue_depth() >= 1);
    release.send(()).unwrap();
    rt.block_on(async {
        first.await.unwrap();
        second.await.unwrap();
    });
    assert_eq!(metrics.blocking_queue_depth(), 0);
    drop(rt);
    assert_eq!(
        metrics.num_idle_blocking_threads(),
        0,
        "the pool's threads left at shutdown"
    );
}

#[test]
fn the_poll_time_histogram_counts_every_poll_in_its_buckets() {
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_metrics_poll_time_histogram()
        .metrics_poll_time_histogram_configuration(HistogramConfiguration::linear(Duration::from_millis(1), 4))
        .enable_all()
        .build()
        .unwrap();
    let metrics = rt.metrics();
    rt.block_on(async {
        for _ in 0..20 {
            netloop::spawn(async {}).await.unwrap();
        }
        netloop::spawn(async { std::thread::sleep(Duration::from_millis(3)) })
            .await
            .unwrap();
    });
    drop(rt);
    assert!(metrics.poll_time_histogram_enabled());
    assert_eq!(metrics.poll_time_histogram_num_buckets(), 4);
    assert_eq!(
        metrics.poll_time_histogram_bucket_range(3),
        Duration::from_millis(3)..Duration::from_nanos(u64::MAX)
    );
    let per_bucket: Vec<u64> = (0..4)
        .map(|b| (0..2).map(|w| metrics.poll_time_histogram_bucket_count(w, b)).sum())
        .collect();
    assert_eq!(per_bucket.iter().sum::<u64>(), 21);
    assert!(
        per_bucket[3] >= 1,
        "the 3 ms poll is in the last bucket: {per_bucket:?}"
    );
    let means: Duration = (0..2).map(|w| metrics.worker_mean_poll_time(w)).sum();
    assert!(means > Duration::ZERO, "a multi-thread runtime keeps a mean");
}

#[test]
fn a_log_histogram_has_tokios_buckets() {
    let rt = Builder::new_current_thread()
        .enable_metrics_poll_time_histogram()
        .metrics_poll_time_histogram_configuration(HistogramConfiguration::log(LogHistogram::default()))
        .build()
        .unwrap();
    let metrics = rt.metrics();
    assert_eq!(metrics.poll_time_histogram_num_buckets(), 119);
    assert_eq!(
        metrics.poll_time_histogram_bucket_range(1),
        Duration::from_nanos(96)..Duration::from_nanos(112)
    );
    assert_eq!(
        metrics.worker_mean_poll_time(0),
        Duration::ZERO,
        "no mean on a current-thread runtime"
    );
}

#[test]
#[should_panic(expected = "a spawned task panicked and the runtime is configured to shut down on unhandled panic")]
fn shutdown_runtime_stops_block_on_even_when_its_future_could_finish() {
    let rt = Builder::new_current_thread()
        .unhandled_panic(UnhandledPanic::ShutdownRuntime)
        .build()
        .unwrap();
    rt.block_on(async {
        // The panic wakes this future with the task's error, but block_on stops first.
        let _ = netloop::spawn(async { panic!("boom") }).await;
    });
}

#[test]
fn after_a_panic_shutdown_spawns_are_cancelled_and_block_on_panics() {
    let rt = Builder::new_current_thread()
        .unhandled_panic(UnhandledPanic::ShutdownRuntime)
        .build()
        .unwrap();
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            netloop::spawn(async { panic!("boom") });
            std::future::pending::<()>().await
        })
    }));
    assert!(first.is_err());
    assert!(
        futures::executor::block_on(rt.spawn(async {}))
            .unwrap_err()
            .is_cancelled()
    );
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(async {})));
    assert!(again.is_err(), "every later block_on panics too");
}

#[test]
#[should_panic(expected = "only supported in current thread runtime")]
fn shutdown_runtime_is_refused_on_a_multi_thread_builder() {
    Builder::new_multi_thread().unhandled_panic(UnhandledPanic::ShutdownRuntime);
}

#[test]
fn a_seeded_runtime_draws_the_same_select_branches() {
    let draw = || {
        let rt = Builder::new_current_thread()
            .rng_seed(RngSeed::from_bytes(b"netloop"))
            .build()
            .unwrap();
        rt.block_on(async {
            let mut picks = Vec::new();
            for _ in 0..16 {
                picks.push(netloop::select! {
                    x = async { 0 } => x,
                    x = async { 1 } => x,
                    x = async { 2 } => x,
                    x = async { 3 } => x,
                });
            }
            picks
        })
    };
    let first = draw();
    assert_eq!(first, draw());
    assert!(first.iter().any(|p| *p != first[0]), "the branches vary: {first:?}");
}

#[test]
fn with_the_alt_timer_a_sleep_of_a_runtime_that_shut_down_completes() {
    use futures::FutureExt;
    let rt = Builder::new_multi_thread()
        .worker_threads(1)
        .enable_alt_timer()
        .build()
        .unwrap();
    // The sleep is made on the runtime's loop and polled off it: it is not awaited.
    #[allow(clippy::async_yields_async)]
    let sleep = rt
        .block_on(rt.spawn(async { netloop::time::sleep(Duration::from_secs(3600)) }))
        .unwrap();
    let mut sleep = Box::pin(sleep);
    assert!((&mut sleep).now_or_never().is_none());
    drop(rt);
    assert!(sleep.now_or_never().is_some());
}

#[test]
fn without_the_alt_timer_it_panics_as_tokios_default_timer() {
    use futures::FutureExt;
    let rt = Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    // The sleep is made on the runtime's loop and polled off it: it is not awaited.
    #[allow(clippy::async_yields_async)]
    let sleep = rt
        .block_on(rt.spawn(async { netloop::time::sleep(Duration::from_secs(3600)) }))
        .unwrap();
    let mut sleep = Box::pin(sleep);
    assert!((&mut sleep).now_or_never().is_none());
    drop(rt);
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sleep.now_or_never())).unwrap_err();
    assert!(err.downcast_ref::<String>().unwrap().contains("being shutdown"));
}

#[test]
fn a_local_set_can_shut_down_on_a_panic() {
    let rt = Builder::new_current_thread().build().unwrap();
    let mut set = LocalSet::new();
    set.unhandled_panic(UnhandledPanic::ShutdownRuntime);
    let survivor_dropped = Arc::new(AtomicUsize::new(0));
    let guard = DropCount(survivor_dropped.clone());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(set.run_until(async move {
            task::spawn_local(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            });
            task::spawn_local(async { panic!("boom") });
            std::future::pending::<()>().await
        }))
    }));
    let message = panicked.unwrap_err();
    assert!(
        message
            .downcast_ref::<String>()
            .unwrap()
            .contains("LocalSet is configured to shutdown")
    );
    assert_eq!(survivor_dropped.load(SeqCst), 1, "the other task was dropped");
}

#[test]
fn command_spawn_with_uses_the_callers_spawning_function() {
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut called = false;
        let mut child = netloop::process::Command::new("true")
            .spawn_with(|command| {
                called = true;
                command.spawn()
            })
            .unwrap();
        assert!(child.wait().await.unwrap().success());
        assert!(called);
        let refused = netloop::process::Command::new("true").spawn_with(|_| Err(std::io::Error::other("refused")));
        assert_eq!(refused.unwrap_err().to_string(), "refused");
    });
}

struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Task dumps: `cargo test ... --features taskdump`.
#[cfg(feature = "taskdump")]
mod dump {
    use super::*;
    use netloop::runtime::Handle;

    #[inline(never)]
    async fn waits_on_a_channel(rx: netloop::sync::oneshot::Receiver<()>) {
        let _ = rx.await;
    }

    #[test]
    fn a_dump_names_each_waiting_task_and_where_it_waits() {
        let rt = Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (tx, rx) = netloop::sync::oneshot::channel();
        let waiting = rt.spawn(waits_on_a_channel(rx));
        let sleeping = rt.spawn(async { netloop::time::sleep(Duration::from_secs(3600)).await });
        let dump = rt.block_on(async {
            // Let both reach their wait first.
            netloop::time::sleep(Duration::from_millis(20)).await;
            Handle::current().dump().await
        });
        let mut ids: Vec<_> = dump.tasks().iter().map(|t| t.id()).collect();
        ids.sort();
        let mut expected = vec![waiting.id(), sleeping.id()];
        expected.sort();
        assert_eq!(ids, expected);
        let trace = dump
            .tasks()
            .iter()
            .find(|t| t.id() == waiting.id())
            .unwrap()
            .trace()
            .to_string();
        assert!(
            trace.contains("unstable.rs:"),
            "the trace has the test's frames: {trace}"
        );
        // The traced tasks were woken for the trace and go on as before.
        tx.send(()).unwrap();
        rt.block_on(waiting).unwrap();
        sleeping.abort();
    }

    #[test]
    fn a_task_blocked_in_place_is_left_out_and_the_dump_does_not_wait_for_it() {
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (entered, wait_entered) = std::sync::mpsc::channel();
        let (release, wait_release) = std::sync::mpsc::channel::<()>();
        let blocked = rt.spawn(async move {
            task::block_in_place(|| {
                entered.send(()).unwrap();
                wait_release.recv().unwrap();
            })
        });
        wait_entered.recv().unwrap();
        let dump = rt.block_on(rt.handle().dump());
        assert_eq!(dump.tasks().iter().count(), 0);
        release.send(()).unwrap();
        rt.block_on(blocked).unwrap();
    }

    #[test]
    fn a_trace_outside_any_task_stops_at_its_root() {
        use netloop::runtime::dump::Trace;
        use std::task::{Context, Waker};
        let mut future = Box::pin(Trace::root(async { task::yield_now().await }));
        let mut cx = Context::from_waker(Waker::noop());
        let (polled, trace) = Trace::capture(|| future.as_mut().poll(&mut cx));
        assert!(polled.is_pending(), "a leaf returns Pending while traced");
        assert_eq!(trace.resolve_backtraces().len(), 1, "one leaf was reached");
        assert!(!Handle::is_tracing());
    }
}
