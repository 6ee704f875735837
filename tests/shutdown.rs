//! Runtime shutdown as tokio's: once it begins, no task is polled again (beyond the poll
//! in progress); every task's future is dropped without another poll, so no task sees
//! its sockets fail because the runtime is going away.
//!
//! Each program here is one that prints nothing on tokio: an accept loop that unwraps,
//! a connection task reading, a task waiting in `UdpSocket::recv_from`. Each is run in
//! both runtime flavours, on both I/O drivers, and for each way a runtime ends (drop,
//! `shutdown_timeout`, `shutdown_background`); `LocalSet` and `LocalRuntime` too.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use netloop::event_loop::IoDriver;
use netloop::io::{AsyncReadExt, AsyncWriteExt};
use netloop::net::{TcpListener, UdpSocket};
use netloop::runtime::{Builder, Runtime};
use netloop::task::{JoinHandle, LocalSet};

#[derive(Clone, Copy, Debug)]
enum Flavor {
    CurrentThread,
    MultiThread,
}

#[derive(Clone, Copy, Debug)]
enum Stop {
    Drop,
    Timeout,
    Background,
}

const FLAVORS: [Flavor; 2] = [Flavor::CurrentThread, Flavor::MultiThread];
const DRIVERS: [IoDriver; 2] = [IoDriver::Epoll, IoDriver::IoUring];
const STOPS: [Stop; 3] = [Stop::Drop, Stop::Timeout, Stop::Background];

fn runtime(flavor: Flavor, driver: IoDriver) -> Runtime {
    let mut b = match flavor {
        Flavor::CurrentThread => Builder::new_current_thread(),
        Flavor::MultiThread => {
            let mut b = Builder::new_multi_thread();
            b.worker_threads(2);
            b
        }
    };
    b.io_driver(driver).enable_all().build().unwrap()
}

fn stop(rt: Runtime, how: Stop) {
    match how {
        Stop::Drop => drop(rt),
        Stop::Timeout => rt.shutdown_timeout(Duration::from_secs(5)),
        Stop::Background => rt.shutdown_background(),
    }
}

/// Waits (at most 10 s) for a task of a runtime that is shutting down or gone, and
/// says whether it was cancelled, as every task still running at shutdown is.
fn cancelled<T: Send + 'static>(handle: JoinHandle<T>, case: &str) -> bool {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(futures::executor::block_on(handle).map(drop));
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(Err(e)) => e.is_cancelled(),
        Ok(Ok(())) => panic!("{case}: the task finished: it was polled after shutdown began"),
        Err(_) => panic!("{case}: the task's JoinHandle never resolved after shutdown"),
    }
}

/// The server of tokio's tutorials: an accept loop that unwraps, one task per
/// connection that unwraps its read. Every error a task meets is counted in `errors`.
async fn serve(listener: TcpListener, errors: Arc<AtomicUsize>) {
    loop {
        let (mut socket, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                errors.fetch_add(1, Ordering::SeqCst);
                panic!("accept failed: {e}");
            }
        };
        let errors = errors.clone();
        netloop::spawn(async move {
            socket.write_all(b"!").await.unwrap();
            let mut buf = [0u8; 8];
            match socket.read(&mut buf).await {
                Ok(_) => {}
                Err(e) => {
                    errors.fetch_add(1, Ordering::SeqCst);
                    panic!("read failed: {e}");
                }
            }
        });
    }
}

/// Starts `serve` on `rt` and connects one client, whose connection task is then
/// waiting in its read. Returns the client (kept open past shutdown) and the accept
/// loop's handle.
fn start_server(rt: &Runtime, errors: &Arc<AtomicUsize>) -> (std::net::TcpStream, JoinHandle<()>) {
    let errors = errors.clone();
    let (addr, accept) = rt.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        (addr, netloop::spawn(serve(listener, errors)))
    });
    let mut client = std::net::TcpStream::connect(addr).unwrap();
    client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // A current-thread runtime's tasks run only inside `block_on`.
    let reader = std::thread::spawn(move || {
        let mut one = [0u8; 1];
        client.read_exact(&mut one).map(|()| client)
    });
    rt.block_on(async {
        while !reader.is_finished() {
            netloop::time::sleep(Duration::from_millis(1)).await;
        }
    });
    (
        reader.join().unwrap().expect("the connection task wrote its byte"),
        accept,
    )
}

#[test]
fn an_accept_loop_that_unwraps_sees_no_error_at_shutdown() {
    for flavor in FLAVORS {
        for driver in DRIVERS {
            for how in STOPS {
                let rt = runtime(flavor, driver);
                let errors = Arc::new(AtomicUsize::new(0));
                let (client, accept) = start_server(&rt, &errors);
                stop(rt, how);
                let case = format!("{flavor:?} {driver:?} {how:?}");
                assert!(cancelled(accept, &case), "{case}: the accept loop was not cancelled");
                // Background shutdown goes on after `shutdown_background` returns: the
                // accept loop's cancellation is its end, its connection's comes with it.
                std::thread::sleep(Duration::from_millis(20));
                assert_eq!(
                    errors.load(Ordering::SeqCst),
                    0,
                    "{flavor:?} {driver:?} {how:?}: a task was polled after shutdown and saw its socket fail"
                );
                drop(client);
            }
        }
    }
}

#[test]
fn a_task_waiting_in_recv_from_is_dropped_not_failed_at_shutdown() {
    for flavor in FLAVORS {
        for driver in DRIVERS {
            for how in STOPS {
                let rt = runtime(flavor, driver);
                let returned = Arc::new(AtomicUsize::new(0));
                let seen = returned.clone();
                let task = rt.spawn(async move {
                    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
                    let mut buf = [0u8; 64];
                    let r = socket.recv_from(&mut buf).await;
                    seen.fetch_add(1, Ordering::SeqCst);
                    r.map(drop)
                });
                // Its first poll, where it starts waiting.
                rt.block_on(async { netloop::time::sleep(Duration::from_millis(20)).await });
                stop(rt, how);
                assert!(cancelled(task, &format!("{flavor:?} {driver:?} {how:?}")));
                assert_eq!(
                    returned.load(Ordering::SeqCst),
                    0,
                    "{flavor:?} {driver:?} {how:?}: recv_from returned at shutdown"
                );
            }
        }
    }
}

/// A task woken by another task's destructor at shutdown is not polled: in tokio every
/// task is closed before any is polled again.
#[test]
fn a_task_woken_by_a_dropped_task_at_shutdown_is_not_polled() {
    for flavor in FLAVORS {
        for how in STOPS {
            let rt = runtime(flavor, IoDriver::Epoll);
            let polled_after = Arc::new(AtomicUsize::new(0));
            let seen = polled_after.clone();
            let (waiter, holder) = rt.block_on(async move {
                let (tx, rx) = netloop::sync::oneshot::channel::<()>();
                let waiter = netloop::spawn(async move {
                    // Err only when the sender's task was dropped.
                    if rx.await.is_err() {
                        seen.fetch_add(1, Ordering::SeqCst);
                    }
                });
                let holder = netloop::spawn(async move {
                    let _tx = tx;
                    std::future::pending::<()>().await
                });
                netloop::time::sleep(Duration::from_millis(20)).await;
                (waiter, holder)
            });
            stop(rt, how);
            assert!(cancelled(holder, &format!("{flavor:?} {how:?}")));
            assert!(cancelled(waiter, &format!("{flavor:?} {how:?}")));
            assert_eq!(polled_after.load(Ordering::SeqCst), 0, "{flavor:?} {how:?}");
        }
    }
}

/// A destructor that runs at shutdown may still reach the runtime, as on tokio: the
/// spawn it makes is accepted and its task dropped unpolled (its handle cancelled).
#[test]
fn a_destructor_that_spawns_at_shutdown_does_not_panic() {
    struct SpawnOnDrop(Arc<std::sync::Mutex<Option<JoinHandle<()>>>>, Arc<AtomicUsize>);
    impl Drop for SpawnOnDrop {
        fn drop(&mut self) {
            let ran = self.1.clone();
            let handle = netloop::spawn(async move {
                ran.fetch_add(1, Ordering::SeqCst);
            });
            *self.0.lock().unwrap() = Some(handle);
        }
    }
    for flavor in FLAVORS {
        for how in STOPS {
            let rt = runtime(flavor, IoDriver::Epoll);
            let slot = Arc::new(std::sync::Mutex::new(None));
            let ran = Arc::new(AtomicUsize::new(0));
            let guard = SpawnOnDrop(slot.clone(), ran.clone());
            let task = rt.spawn(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            });
            rt.block_on(async { netloop::time::sleep(Duration::from_millis(20)).await });
            stop(rt, how);
            assert!(cancelled(task, &format!("{flavor:?} {how:?}")));
            let spawned = slot.lock().unwrap().take().expect("the destructor ran");
            assert!(cancelled(spawned, &format!("{flavor:?} {how:?}")));
            assert_eq!(ran.load(Ordering::SeqCst), 0, "{flavor:?} {how:?}");
        }
    }
}

#[test]
fn local_set_tasks_are_dropped_unpolled_whichever_goes_first() {
    for driver in DRIVERS {
        for runtime_first in [true, false] {
            let rt = runtime(Flavor::CurrentThread, driver);
            let local = LocalSet::new();
            let errors = Arc::new(AtomicUsize::new(0));
            let returned = Arc::new(AtomicUsize::new(0));
            let (e, seen) = (errors.clone(), returned.clone());
            let addr = local.block_on(&rt, async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                netloop::task::spawn_local(serve(listener, e));
                let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
                netloop::task::spawn_local(async move {
                    let mut buf = [0u8; 64];
                    let _ = socket.recv_from(&mut buf).await;
                    seen.fetch_add(1, Ordering::SeqCst);
                });
                netloop::time::sleep(Duration::from_millis(20)).await;
                addr
            });
            let client = std::net::TcpStream::connect(addr).unwrap();
            local.block_on(&rt, async { netloop::time::sleep(Duration::from_millis(20)).await });
            if runtime_first {
                drop(rt);
                drop(local);
            } else {
                drop(local);
                drop(rt);
            }
            drop(client);
            let case = format!("{driver:?}, runtime dropped first: {runtime_first}");
            assert_eq!(errors.load(Ordering::SeqCst), 0, "{case}");
            assert_eq!(returned.load(Ordering::SeqCst), 0, "{case}");
        }
    }
}

#[test]
fn local_runtime_tasks_are_dropped_unpolled() {
    for driver in DRIVERS {
        for timeout in [false, true] {
            let rt = Builder::new_current_thread()
                .io_driver(driver)
                .enable_all()
                .build_local(Default::default())
                .unwrap();
            let errors = Arc::new(AtomicUsize::new(0));
            let e = errors.clone();
            let addr = rt.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                netloop::task::spawn_local(serve(listener, e));
                addr
            });
            let client = std::net::TcpStream::connect(addr).unwrap();
            rt.block_on(async { netloop::time::sleep(Duration::from_millis(20)).await });
            if timeout {
                rt.shutdown_timeout(Duration::from_secs(5));
            } else {
                drop(rt);
            }
            drop(client);
            assert_eq!(
                errors.load(Ordering::SeqCst),
                0,
                "{driver:?}, shutdown_timeout: {timeout}"
            );
        }
    }
}
