//! Behaviours of tokio that its own suite never states but the ecosystem relies on
//! (`docs/compatibility.md`, "tokio's unwritten contracts"): when user code
//! runs, and which thread may drive a runtime.

use std::future::poll_fn;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

use netloop::runtime::Runtime;
use netloop_tests::{WAIT, current, multi, single_loop, test_body};

/// The lock h2 keeps its streams under; the connection task's waker lives in it.
type Streams = Arc<Mutex<Option<Waker>>>;

/// h2's `RecvStream`: its destructor wakes the connection task with the streams' lock
/// held.
struct Stream(Streams);

impl Drop for Stream {
    fn drop(&mut self) {
        let streams = self.0.lock().unwrap();
        if let Some(connection) = streams.as_ref() {
            connection.wake_by_ref();
        }
    }
}

/// h2's `Connection`: its destructor takes the streams' lock (h2 blocks on it; this
/// tries, and reports whether it could, so that a failure is a message, not a hang).
struct Connection(Streams, mpsc::Sender<bool>);

impl Drop for Connection {
    fn drop(&mut self) {
        let _ = self.1.send(self.0.try_lock().is_ok());
    }
}

/// Lets a current-thread runtime run its tasks for a moment (a multi-thread one runs
/// them anyway).
fn drive(rt: &Runtime) {
    rt.block_on(async {
        for _ in 0..3 {
            netloop::task::yield_now().await;
        }
    });
}

/// Spawns the connection, then the stream, both waiting forever; returns once both
/// were polled, with the channel the connection's destructor reports on.
fn spawn_h2_shape(rt: &Runtime) -> mpsc::Receiver<bool> {
    let (took_tx, took_rx) = mpsc::channel();
    let (polled_tx, polled_rx) = mpsc::channel();
    let streams: Streams = Arc::default();
    let (s, p) = (streams.clone(), polled_tx.clone());
    rt.spawn(async move {
        let _connection = Connection(s.clone(), took_tx);
        poll_fn(|cx| {
            *s.lock().unwrap() = Some(cx.waker().clone());
            let _ = p.send(());
            Poll::<()>::Pending
        })
        .await
    });
    drive(rt);
    polled_rx.recv_timeout(WAIT).expect("the connection's first poll");
    rt.spawn(async move {
        let _stream = Stream(streams);
        let _ = polled_tx.send(());
        std::future::pending::<()>().await
    });
    drive(rt);
    polled_rx.recv_timeout(WAIT).expect("the stream's first poll");
    took_rx
}

fn assert_no_destructor_inside_the_wake(took_rx: mpsc::Receiver<bool>) {
    assert!(
        took_rx.recv_timeout(WAIT).expect("the connection's destructor ran"),
        "the connection's destructor ran inside the stream's wake, with the streams' lock held"
    );
}

#[test]
fn dropping_a_multi_thread_runtime_runs_no_destructor_inside_a_wake() {
    test_body(|| {
        // One loop: both tasks on it, so the stream's wake of the connection is local.
        let rt = single_loop();
        let took = spawn_h2_shape(&rt);
        drop(rt);
        assert_no_destructor_inside_the_wake(took);
    });
}

#[test]
fn dropping_a_current_thread_runtime_runs_no_destructor_inside_a_wake() {
    test_body(|| {
        let rt = current();
        let took = spawn_h2_shape(&rt);
        drop(rt);
        assert_no_destructor_inside_the_wake(took);
    });
}

#[test]
fn shutdown_timeout_runs_no_destructor_inside_a_wake() {
    test_body(|| {
        let rt = single_loop();
        let took = spawn_h2_shape(&rt);
        rt.shutdown_timeout(std::time::Duration::from_secs(1));
        assert_no_destructor_inside_the_wake(took);
    });
}

#[test]
fn dropping_a_local_set_runs_no_destructor_inside_a_wake() {
    test_body(|| {
        let rt = current();
        let set = netloop::task::LocalSet::new();
        let (took_tx, took_rx) = mpsc::channel();
        let streams: Streams = Arc::default();
        let s = streams.clone();
        set.spawn_local(async move {
            let _connection = Connection(s.clone(), took_tx);
            poll_fn(|cx| {
                *s.lock().unwrap() = Some(cx.waker().clone());
                Poll::<()>::Pending
            })
            .await
        });
        set.spawn_local(async move {
            let _stream = Stream(streams);
            std::future::pending::<()>().await
        });
        set.block_on(&rt, async {
            for _ in 0..3 {
                netloop::task::yield_now().await;
            }
        });
        drop(set);
        assert_no_destructor_inside_the_wake(took_rx);
    });
}

/// A test-server shape found in real suites: bind on one thread, then move the
/// runtime into a server thread and drive it there (tokio's `Runtime` is `Send`, and
/// its core goes to whichever thread blocks on it).
#[test]
fn a_current_thread_runtime_moves_to_another_thread_between_block_ons() {
    test_body(|| {
        let rt = current();
        let listener = rt.block_on(netloop::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        // A task spawned on the first thread, still waiting when the runtime moves.
        let (tx, rx) = netloop::sync::oneshot::channel::<u32>();
        let waiting = rt.spawn(async move { rx.await.unwrap() + 1 });
        rt.block_on(netloop::task::yield_now());
        let server = std::thread::spawn(move || {
            rt.block_on(async move {
                let (mut socket, _) = listener.accept().await.unwrap();
                netloop::io::AsyncWriteExt::write_all(&mut socket, b"moved")
                    .await
                    .unwrap();
                tx.send(41).unwrap();
                waiting.await.unwrap()
            })
        });
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        let mut got = String::new();
        std::io::Read::read_to_string(&mut client, &mut got).unwrap();
        assert_eq!(got, "moved");
        assert_eq!(
            server.join().unwrap(),
            42,
            "the task spawned before the move ran after it"
        );
    });
}

/// Dropped on another thread than the one that drove it, a current-thread runtime
/// drops its (Send) tasks' futures there, as tokio's does, instead of leaking them.
#[test]
fn a_current_thread_runtime_dropped_on_another_thread_drops_its_tasks() {
    struct Dropped(mpsc::Sender<()>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    test_body(|| {
        let rt = current();
        let (tx, rx) = mpsc::channel();
        let guard = Dropped(tx);
        rt.spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await
        });
        rt.block_on(netloop::task::yield_now());
        std::thread::spawn(move || drop(rt)).join().unwrap();
        rx.recv_timeout(WAIT)
            .expect("the task's future was dropped with the runtime");
    });
}

/// netloop's `spawn_local` outside a `LocalSet` (an extension tokio does not have)
/// keeps its guarantee: its `!Send` future is never polled or dropped off its thread.
/// While such a task lives, the runtime refuses to move, with a message that says why.
#[test]
fn a_current_thread_runtime_with_a_live_spawn_local_task_refuses_to_move() {
    test_body(|| {
        let rt = current();
        let (tx, rx) = netloop::sync::oneshot::channel::<()>();
        // The handle is the block's value, taken out to be awaited later.
        #[allow(clippy::async_yields_async)]
        let local = rt.block_on(async {
            let here = std::rc::Rc::new(());
            netloop::task::spawn_local(async move {
                let _here = here;
                let _ = rx.await;
            })
        });
        rt.block_on(netloop::task::yield_now());
        let rt = std::sync::Arc::new(rt);
        let other = rt.clone();
        let refused = std::thread::spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| other.block_on(async {})))
                .map_err(|p| netloop_tests::panic_text(&*p))
        })
        .join()
        .unwrap();
        let message = refused.expect_err("block_on on another thread must panic");
        assert!(message.contains("!Send tasks"), "{message}");
        // Once the task is over, the runtime moves again.
        tx.send(()).unwrap();
        rt.block_on(local).unwrap();
        let other = rt.clone();
        assert_eq!(
            std::thread::spawn(move || other.block_on(async { 5 })).join().unwrap(),
            5
        );
    });
}

/// Reports, from a task's destructor, whether the runtime's context was there and
/// whether `spawn` worked in it (tokio enters the runtime while it drops its tasks: a
/// destructor may spawn its async clean-up; that task is dropped unrun).
struct SpawnsInDrop(mpsc::Sender<(bool, bool)>);

impl Drop for SpawnsInDrop {
    fn drop(&mut self) {
        let context = netloop::runtime::Handle::try_current().is_ok();
        let spawned = std::panic::catch_unwind(|| {
            drop(netloop::spawn(async {}));
        })
        .is_ok();
        let _ = self.0.send((context, spawned));
    }
}

fn spawn_waiting_with(rt: &Runtime, guard: impl Send + 'static) {
    let (polled_tx, polled_rx) = mpsc::channel();
    rt.spawn(async move {
        let _guard = guard;
        let _ = polled_tx.send(());
        std::future::pending::<()>().await
    });
    drive(rt);
    polled_rx.recv_timeout(WAIT).expect("the task's first poll");
}

#[test]
fn a_tasks_destructor_at_runtime_drop_runs_in_the_runtimes_context_and_may_spawn() {
    for rt in [current(), multi()] {
        test_body(move || {
            let (tx, rx) = mpsc::channel();
            spawn_waiting_with(&rt, SpawnsInDrop(tx));
            drop(rt);
            let (context, spawned) = rx.try_recv().expect("the destructor ran before drop(rt) returned");
            assert!(
                context,
                "Handle::try_current() failed in a task's destructor at runtime drop"
            );
            assert!(spawned, "spawn panicked in a task's destructor at runtime drop");
        });
    }
}

#[test]
fn dropping_a_runtime_returns_after_every_tasks_future_was_dropped() {
    struct Flag(Arc<std::sync::atomic::AtomicUsize>);
    impl Drop for Flag {
        fn drop(&mut self) {
            // Slow on purpose: a drop that returned early would be seen.
            std::thread::sleep(std::time::Duration::from_millis(20));
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    for rt in [current(), multi()] {
        test_body(move || {
            let dropped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            for _ in 0..4 {
                spawn_waiting_with(&rt, Flag(dropped.clone()));
            }
            drop(rt);
            assert_eq!(dropped.load(std::sync::atomic::Ordering::SeqCst), 4);
        });
    }
}

/// `abort` only asks: the future is dropped by the task's next turn, never inside the
/// `abort` call (tokio's `remote_abort` schedules the task). Aborting under a lock that
/// the aborted task's destructor takes must not deadlock.
#[test]
fn abort_never_drops_the_future_inside_the_call() {
    for rt in [current(), multi()] {
        test_body(move || {
            let lock: Streams = Arc::default();
            let (took_tx, took_rx) = mpsc::channel();
            let l = lock.clone();
            let (polled_tx, polled_rx) = mpsc::channel();
            let victim = rt.spawn(async move {
                let _connection = Connection(l, took_tx);
                let _ = polled_tx.send(());
                std::future::pending::<()>().await
            });
            drive(&rt);
            polled_rx.recv_timeout(WAIT).expect("the victim's first poll");
            rt.block_on(async move {
                {
                    let _held = lock.lock().unwrap();
                    victim.abort();
                }
                assert!(victim.await.unwrap_err().is_cancelled());
            });
            assert_no_destructor_inside_the_wake(took_rx);
        });
    }
}

/// Dropping a `JoinHandle` detaches the task (tokio's rule; netloop's reactor-level
/// `Task` cancels on drop, which the runtime's handle must not inherit).
#[test]
fn dropping_a_join_handle_detaches_the_task() {
    for rt in [current(), multi()] {
        test_body(move || {
            let (tx, rx) = netloop::sync::oneshot::channel::<()>();
            let (done_tx, done_rx) = mpsc::channel();
            drop(rt.spawn(async move {
                let _ = rx.await;
                let _ = done_tx.send(());
            }));
            tx.send(()).unwrap();
            rt.block_on(async {
                for _ in 0..10 {
                    netloop::task::yield_now().await;
                }
            });
            done_rx.recv_timeout(WAIT).expect("the detached task ran to completion");
        });
    }
}

/// A task's waker is the same waker from poll to poll (`will_wake`), as tokio's is:
/// `AtomicWaker` and friends skip a clone on it.
#[test]
fn a_tasks_waker_will_wake_across_polls() {
    for rt in [current(), multi()] {
        test_body(move || {
            let same = rt.block_on(async {
                netloop::spawn(async {
                    let mut first: Option<Waker> = None;
                    let mut polls = 0;
                    poll_fn(|cx| {
                        polls += 1;
                        match &first {
                            None => {
                                first = Some(cx.waker().clone());
                                cx.waker().wake_by_ref();
                                Poll::Pending
                            }
                            Some(w) if polls < 3 => {
                                assert!(w.will_wake(cx.waker()));
                                cx.waker().wake_by_ref();
                                Poll::Pending
                            }
                            Some(w) => Poll::Ready(w.will_wake(cx.waker())),
                        }
                    })
                    .await
                })
                .await
                .unwrap()
            });
            assert!(same);
        });
    }
}

/// `spawn` never polls the future inside the call: on a current-thread runtime the
/// task first runs when the spawner yields.
#[test]
fn spawn_never_polls_inside_the_call() {
    for rt in [current(), multi()] {
        test_body(move || {
            rt.block_on(async {
                let polled = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let p = polled.clone();
                let handle = netloop::spawn(async move { p.store(true, std::sync::atomic::Ordering::SeqCst) });
                if netloop::runtime::Handle::current().runtime_flavor()
                    == netloop::runtime::RuntimeFlavor::CurrentThread
                {
                    assert!(!polled.load(std::sync::atomic::Ordering::SeqCst), "polled inside spawn");
                }
                handle.await.unwrap();
                assert!(polled.load(std::sync::atomic::Ordering::SeqCst));
            });
        });
    }
}

/// The output of a finished task whose `JoinHandle` is dropped unread is dropped by
/// that drop, on the dropping thread, as tokio's `JoinHandle` does.
#[test]
fn an_unread_output_is_dropped_by_the_join_handles_drop() {
    struct Output(mpsc::Sender<std::thread::ThreadId>);
    impl Drop for Output {
        fn drop(&mut self) {
            let _ = self.0.send(std::thread::current().id());
        }
    }
    for rt in [current(), multi()] {
        test_body(move || {
            let (tx, rx) = mpsc::channel();
            let handle = rt.spawn(async move { Output(tx) });
            drive(&rt);
            while !handle.is_finished() {
                std::thread::yield_now();
            }
            assert!(rx.try_recv().is_err(), "the output was dropped before its handle");
            drop(handle);
            assert_eq!(rx.try_recv(), Ok(std::thread::current().id()));
        });
    }
}

/// Dropping a runtime inside an async context panics, with tokio's message (a
/// runtime's drop blocks, which would stall the task's loop).
#[test]
fn dropping_a_runtime_inside_a_task_panics_as_on_tokio() {
    let outer = current();
    let message = outer.block_on(async {
        let inner = current();
        netloop_tests::panic_message(move || drop(inner))
    });
    assert!(
        message.contains("Cannot drop a runtime in a context where blocking is not allowed"),
        "{message}"
    );
}

netloop::task_local! {
    static REQUEST: u32;
}

/// A future run in a task-local scope sees the value in its destructor too: tokio's
/// `TaskLocalFuture` enters the scope to drop the future it wraps.
#[test]
fn a_task_local_is_set_while_its_scoped_future_is_dropped() {
    struct ReadsInDrop(mpsc::Sender<Option<u32>>);
    impl Drop for ReadsInDrop {
        fn drop(&mut self) {
            let _ = self.0.send(REQUEST.try_with(|v| *v).ok());
        }
    }
    let rt = current();
    let (tx, rx) = mpsc::channel();
    rt.block_on(async move {
        let scoped = REQUEST.scope(7, async move {
            let _guard = ReadsInDrop(tx);
            std::future::pending::<()>().await
        });
        // Polled once (so the guard lives in the future's state), then dropped.
        let _ = netloop::time::timeout(std::time::Duration::from_millis(1), scoped).await;
    });
    assert_eq!(rx.recv_timeout(WAIT), Ok(Some(7)));
}

/// `select!` drops every branch's future before it runs the winning branch's handler
/// (tokio's futures live in a block that ends before the handler): a handler may take
/// a lock or a resource that a losing branch still held.
#[test]
fn select_drops_the_losing_branches_before_the_handler_runs() {
    let rt = current();
    rt.block_on(async {
        let lock = Arc::new(Mutex::new(()));
        let l = lock.clone();
        // Held across the await on purpose: the losing branch keeps the lock.
        #[allow(clippy::await_holding_lock)]
        let holder = async move {
            let _held = l.lock().unwrap();
            std::future::pending::<()>().await
        };
        netloop::select! {
            _ = holder => unreachable!(),
            _ = netloop::task::yield_now() => {
                assert!(lock.try_lock().is_ok(), "the losing branch still held its lock in the handler");
            }
        }
    });
}

/// A current-thread runtime starts no thread of its own: `on_thread_start` and
/// `on_thread_stop` run only for the blocking pool's threads (tokio's current-thread
/// scheduler never calls them for the thread in `block_on`).
#[test]
fn a_current_thread_runtime_calls_thread_hooks_only_for_blocking_threads() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    test_body(|| {
        let (started, stopped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (s, t) = (started.clone(), stopped.clone());
        let rt = netloop::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_start(move || {
                s.fetch_add(1, SeqCst);
            })
            .on_thread_stop(move || {
                t.fetch_add(1, SeqCst);
            })
            .build()
            .unwrap();
        rt.block_on(async {
            netloop::spawn(async {}).await.unwrap();
            netloop::time::sleep(std::time::Duration::from_millis(1)).await;
        });
        assert_eq!(started.load(SeqCst), 0, "no thread of the runtime's started");
        rt.block_on(async { netloop::task::spawn_blocking(|| ()).await })
            .unwrap();
        assert_eq!(started.load(SeqCst), 1, "the blocking thread's start");
        drop(rt);
        assert_eq!(
            stopped.load(SeqCst),
            1,
            "the blocking thread's stop, before drop returned"
        );
    });
}

/// The refusal also sees a `!Send` task whose turn is deferred (it yielded when
/// `block_on` returned).
#[test]
fn a_current_thread_runtime_with_a_yielding_spawn_local_task_refuses_to_move() {
    test_body(|| {
        let rt = std::sync::Arc::new(current());
        let stop = std::rc::Rc::new(std::cell::Cell::new(false));
        let s = stop.clone();
        rt.block_on(async move {
            netloop::task::spawn_local(async move {
                while !s.get() {
                    netloop::task::yield_now().await;
                }
            });
            netloop::task::yield_now().await;
        });
        let other = rt.clone();
        let refused = std::thread::spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| other.block_on(async {}))).is_err()
        })
        .join()
        .unwrap();
        assert!(refused, "block_on on another thread must panic while the task lives");
        stop.set(true);
        rt.block_on(async {
            for _ in 0..3 {
                netloop::task::yield_now().await;
            }
        });
    });
}

/// tokio's workers park at least once, even one whose thread first runs after the
/// runtime began to shut down (tokio's `worker_park_count` test counts on it): a
/// runtime dropped as soon as it is built still shows a park on every worker.
#[test]
fn every_worker_parks_once_even_when_shutdown_comes_first() {
    test_body(|| {
        for _ in 0..20 {
            let rt = netloop::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build()
                .unwrap();
            let metrics = rt.metrics();
            drop(rt);
            for worker in 0..2 {
                assert!(metrics.worker_park_count(worker) >= 1, "worker {worker} never parked");
            }
        }
    });
}
