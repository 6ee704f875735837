//! Behaviours of tokio that its own suite never states but the ecosystem relies on
//! (issue 40, `docs/compatibility.md`, "tokio's unwritten contracts"): when user code
//! runs, and which thread may drive a runtime.

use std::future::poll_fn;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

use netloop::runtime::Runtime;
use netloop_tests::{WAIT, current, multi, test_body};

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
        let rt = multi();
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
        let rt = multi();
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
