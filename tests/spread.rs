//! The tokio-shaped server (`accept` in a loop, `spawn` per connection) uses every
//! loop, and each connection's readiness wakes its task on that task's own loop.

use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use netloop::event_loop::EventLoopHandle;
use netloop::io::{AsyncReadExt, AsyncWriteExt};
use netloop::net::{TcpListener, TcpStream};
use netloop::runtime::{Builder, Runtime};
use netloop::task::{self, JoinSet};
use netloop_tests::{WAIT, test_body, within};

fn runtime_with(loops: usize) -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(loops)
        .enable_all()
        .build()
        .expect("build a multi-thread runtime")
}

fn current_loop_id() -> u64 {
    EventLoopHandle::current().expect("running on an event loop").id()
}

/// Readiness wakes that crossed threads, summed over the runtime's loops.
fn remote_io_wakes(rt: &Runtime) -> u64 {
    rt.handle()
        .event_loops()
        .iter()
        .map(|l| l.metrics().io_wakes_remote)
        .sum()
}

/// Runs one empty task on every loop and waits for it: each loop has then finished
/// the iteration that handled everything before, and published its counters.
fn settle(rt: &Runtime) {
    let loops: Vec<EventLoopHandle> = rt.handle().event_loops().iter().cloned().collect();
    rt.block_on(async move {
        for l in &loops {
            task::spawn_on(l, async {}).await.unwrap();
            task::spawn_on(l, async {}).await.unwrap();
        }
    });
}

/// The connection handler: three echoed round trips of 16 bytes, then the id of the
/// loop it ran on.
async fn handle(mut socket: TcpStream) {
    let mut buf = [0u8; 16];
    for _ in 0..3 {
        if socket.read_exact(&mut buf).await.is_err() || socket.write_all(&buf).await.is_err() {
            return;
        }
    }
    let _ = socket.write_all(&current_loop_id().to_le_bytes()).await;
}

/// A blocking client: three round trips, then the server's loop id.
fn client(addr: SocketAddr, i: usize) -> u64 {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(WAIT)).unwrap();
    for trip in 0..3u8 {
        let msg = [trip ^ (i as u8); 16];
        s.write_all(&msg).unwrap();
        let mut back = [0u8; 16];
        s.read_exact(&mut back).expect("the echo comes back");
        assert_eq!(back, msg);
    }
    let mut id = [0u8; 8];
    s.read_exact(&mut id).expect("the handler reports its loop");
    u64::from_le_bytes(id)
}

/// Connects `n` clients from `threads` plain threads; returns the loop id of each.
fn run_clients(addr: SocketAddr, n: usize, threads: usize) -> Vec<u64> {
    let workers: Vec<_> = (0..threads)
        .map(|t| thread::spawn(move || (t..n).step_by(threads).map(|i| client(addr, i)).collect::<Vec<_>>()))
        .collect();
    workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
}

/// Starts the plain tokio accept loop as a task: `accept`, then `spawn` per connection.
fn start_accept_loop(rt: &Runtime) -> SocketAddr {
    rt.block_on(async {
        let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
        drop(netloop::spawn(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            // Ends when the runtime shuts down (accept then fails).
            while let Ok((socket, _)) = listener.accept().await {
                netloop::spawn(async move { handle(socket).await });
            }
        }));
        addr_rx.await.unwrap()
    })
}

#[test]
fn accept_and_spawn_spreads_1000_connections_over_4_loops_each_woken_on_its_own() {
    const CONNECTIONS: usize = 1000;
    within(Duration::from_secs(30), || {
        let rt = runtime_with(4);
        let addr = start_accept_loop(&rt);
        let ids = run_clients(addr, CONNECTIONS, 25);
        let mut counts: HashMap<u64, usize> = rt.handle().event_loops().iter().map(|l| (l.id(), 0)).collect();
        for id in ids {
            *counts
                .get_mut(&id)
                .expect("every handler ran on one of the runtime's loops") += 1;
        }
        let even = CONNECTIONS as f64 / 4.0;
        for (id, &n) in &counts {
            let off = (n as f64 - even).abs() / even;
            assert!(
                off <= 0.10,
                "loop {id} ran {n} of {CONNECTIONS} connections ({:.0}% off even); all: {counts:?}",
                off * 100.0
            );
        }
        settle(&rt);
        let io_events: u64 = rt.handle().event_loops().iter().map(|l| l.metrics().io_events).sum();
        assert!(
            io_events >= CONNECTIONS as u64,
            "the loops saw the connections' readiness"
        );
        assert_eq!(
            remote_io_wakes(&rt),
            0,
            "every readiness wake reaches a task on the loop its socket is registered with"
        );
    });
}

/// A task that accepts and serves the connection itself (no spawn) has the socket on
/// its own loop; the accept's hand-off is not taken by another task's spawn.
#[test]
fn a_connection_served_inline_stays_on_the_accepting_loop() {
    test_body(|| {
        let rt = runtime_with(2);
        let (addr, served_on, spawned_on, accepted_on) = rt.block_on(async {
            let listener_loop = rt_loop(0);
            let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
            let server = task::spawn_on(&listener_loop, async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let accepted_on = current_loop_id();
                let (socket, _) = listener.accept().await.unwrap();
                // Another task of this loop spawns before this one does: it keeps
                // its affinity (`spawn_local` itself never moves).
                let spawned_on = task::spawn_local(async { netloop::spawn(async { current_loop_id() }).await })
                    .await
                    .unwrap()
                    .unwrap();
                handle(socket).await;
                (spawned_on, accepted_on)
            });
            let addr = addr_rx.await.unwrap();
            let served_on = task::spawn_blocking(move || client(addr, 0)).await.unwrap();
            let (spawned_on, accepted_on) = server.await.unwrap();
            (addr, served_on, spawned_on, accepted_on)
        });
        let _ = addr;
        assert_eq!(served_on, accepted_on, "served by the task that accepted it");
        assert_eq!(
            spawned_on, accepted_on,
            "an unrelated spawn on the accepting loop kept its affinity"
        );
        settle(&rt);
        assert_eq!(remote_io_wakes(&rt), 0);
    });
}

fn rt_loop(i: usize) -> EventLoopHandle {
    netloop::runtime::Handle::current()
        .event_loops()
        .get(i)
        .expect("the runtime has that loop")
        .clone()
}

/// An accepted socket used first on one loop and then moved to a task on another
/// still works; its wakes then cross threads, and the metric says so.
#[test]
fn an_accepted_socket_moved_after_first_use_still_works() {
    test_body(|| {
        let rt = runtime_with(2);
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (reported, here, there) = rt.block_on(async {
            let (first, second) = (rt_loop(0), rt_loop(1));
            let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
            let server = task::spawn_on(&first, async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let (mut socket, _) = listener.accept().await.unwrap();
                // First use here: registered with this loop.
                let mut buf = [0u8; 16];
                socket.read_exact(&mut buf).await.unwrap();
                socket.write_all(&buf).await.unwrap();
                let here = current_loop_id();
                // The rest on the other loop, which waits for data the client sends
                // only once the read is pending: its wake must come from `first`.
                let there = task::spawn_on(&second, async move {
                    let mut buf = [0u8; 16];
                    let mut read = std::pin::pin!(socket.read_exact(&mut buf));
                    // The client is told to send only once the read is pending, and the
                    // read is polled again only when woken: a poll made right after the
                    // go-ahead could find the bytes itself (on the ring, a read with no
                    // receive armed yet tries the socket), and no wake would cross.
                    let mut go = Some(go_tx);
                    std::future::poll_fn(|cx| {
                        let read = read.as_mut().poll(cx);
                        match (&read, go.take()) {
                            (std::task::Poll::Pending, Some(go)) => go.send(()).unwrap(),
                            (std::task::Poll::Ready(_), Some(_)) => panic!("nothing sent yet"),
                            _ => {}
                        }
                        read
                    })
                    .await
                    .unwrap();
                    socket.write_all(&buf).await.unwrap();
                    socket.write_all(&current_loop_id().to_le_bytes()).await.unwrap();
                    current_loop_id()
                })
                .await
                .unwrap();
                (here, there)
            });
            let addr = addr_rx.await.unwrap();
            let reported = task::spawn_blocking(move || {
                let mut s = std::net::TcpStream::connect(addr).expect("connect");
                s.set_read_timeout(Some(WAIT)).unwrap();
                let mut back = [0u8; 16];
                for msg in [[1u8; 16], [2u8; 16]] {
                    if msg[0] == 2 {
                        go_rx.recv_timeout(WAIT).expect("the moved task waits");
                    }
                    s.write_all(&msg).unwrap();
                    s.read_exact(&mut back).expect("the echo comes back");
                    assert_eq!(back, msg);
                }
                let mut id = [0u8; 8];
                s.read_exact(&mut id).unwrap();
                u64::from_le_bytes(id)
            })
            .await
            .unwrap();
            let (here, there) = server.await.unwrap();
            (reported, here, there)
        });
        assert_ne!(here, there);
        assert_eq!(reported, there);
        settle(&rt);
        assert!(
            remote_io_wakes(&rt) > 0,
            "the moved socket's wakes come from the loop it was registered with"
        );
    });
}

/// `spawn_local` after an accept stays on this loop (a `!Send` future cannot move),
/// and the hand-off goes to the next `spawn`; `JoinSet::spawn` takes it too.
#[test]
fn only_send_spawns_take_the_hand_off() {
    test_body(|| {
        let rt = runtime_with(2);
        rt.block_on(async {
            let home = rt_loop(0);
            let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
            let server = task::spawn_on(&home, async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let here = current_loop_id();
                let mut placed = Vec::new();
                for _ in 0..2 {
                    let (socket, _) = listener.accept().await.unwrap();
                    let local = task::spawn_local(async { current_loop_id() }).await.unwrap();
                    assert_eq!(local, here, "spawn_local stays on this loop");
                    let mut set = JoinSet::new();
                    set.spawn(async move {
                        handle(socket).await;
                        current_loop_id()
                    });
                    placed.push(set.join_next().await.unwrap().unwrap());
                }
                placed
            });
            let addr = addr_rx.await.unwrap();
            let served = task::spawn_blocking(move || (client(addr, 1), client(addr, 2)))
                .await
                .unwrap();
            let placed = server.await.unwrap();
            assert_eq!(placed, vec![served.0, served.1]);
            assert_ne!(placed[0], placed[1], "round-robin over the two loops");
        });
    });
}

/// Accept and spawn straight from `block_on` (the body of `#[netloop::main]`): the
/// accepting thread drives no loop, so spawns already go round-robin, and each socket
/// registers with the loop of the task that uses it.
#[test]
fn accept_from_block_on_spreads_and_keeps_wakes_local() {
    const CONNECTIONS: usize = 200;
    within(Duration::from_secs(20), || {
        let rt = runtime_with(2);
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let clients = thread::spawn(move || {
            let addr: SocketAddr = addr_rx.recv().unwrap();
            run_clients(addr, CONNECTIONS, 10)
        });
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let mut handlers = Vec::new();
            for _ in 0..CONNECTIONS {
                let (socket, _) = listener.accept().await.unwrap();
                handlers.push(netloop::spawn(async move { handle(socket).await }));
            }
            for h in handlers {
                h.await.unwrap();
            }
        });
        let ids = clients.join().unwrap();
        let mut counts: HashMap<u64, usize> = HashMap::new();
        for id in ids {
            *counts.entry(id).or_default() += 1;
        }
        assert_eq!(counts.len(), 2, "both loops served: {counts:?}");
        for (&id, &n) in &counts {
            assert!(
                n.abs_diff(CONNECTIONS / 2) <= CONNECTIONS / 20,
                "loop {id} ran {n} of {CONNECTIONS}: {counts:?}"
            );
        }
        settle(&rt);
        // The listener's wakes reach `block_on` on this thread: one per accept at most.
        let remote = remote_io_wakes(&rt);
        assert!(
            remote <= CONNECTIONS as u64,
            "{remote} remote wakes for {CONNECTIONS} connections: only the listener's may cross"
        );
    });
}
