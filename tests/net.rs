//! The networking acceptance tests: `TcpListener`, `TcpStream`, its halves and the
//! `serve` acceptor, on loopback only.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::io::{self, BufRead, BufReader, ErrorKind, IoSlice, IoSliceMut, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::channel::mpsc as amp;
use netloop::event_loop::EventLoopHandle;
use netloop::io::{AsyncReadExt, AsyncWriteExt, Interest};
use netloop::net::{Serve, TcpListener, TcpStream, serve};
use netloop::runtime::{Builder, Runtime};
use netloop::task;
use netloop::time::{sleep, timeout};
use netloop_tests::{WAIT, multi, test_body, within};

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

/// A seeded xorshift64 generator: reproducible "random" data and chunk sizes.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        // Spread small seeds; never zero.
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// In `1..=max`.
    fn size(&mut self, max: usize) -> usize {
        1 + (self.next_u64() % max as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        for chunk in out.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        out
    }
}

/// A multi-thread runtime with `loops` event loops, started lazily as in production.
fn runtime_with(loops: usize) -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(loops)
        .enable_all()
        .build()
        .expect("build a multi-thread runtime")
}

/// Two loops; see [`runtime_with`].
fn rt2() -> Runtime {
    runtime_with(2)
}

/// The id of the loop running the caller; panics off a loop.
fn current_loop_id() -> u64 {
    EventLoopHandle::current().expect("running on an event loop").id()
}

/// Echoes until EOF or an error, then shuts the write side.
async fn echo(mut stream: TcpStream) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if stream.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = stream.shutdown().await;
}

fn echo_handler(stream: TcpStream, _peer: SocketAddr) -> impl Future<Output = ()> {
    echo(stream)
}

/// Binds 127.0.0.1:0 and serves `echo` on it; returns the address.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local_addr");
    drop(serve(listener, echo_handler));
    addr
}

/// A connected (client, server) pair through a fresh listener.
async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .expect("connect");
    let (server, peer) = listener.accept().await.expect("accept");
    assert_eq!(peer, client.local_addr().unwrap());
    assert_eq!(server.peer_addr().unwrap(), client.local_addr().unwrap());
    assert_eq!(client.peer_addr().unwrap(), server.local_addr().unwrap());
    (client, server)
}

/// One round trip through an echo server.
async fn round_trip(stream: &mut TcpStream, msg: &[u8]) -> io::Result<()> {
    stream.write_all(msg).await?;
    let mut back = vec![0u8; msg.len()];
    stream.read_exact(&mut back).await?;
    assert_eq!(back, msg, "the echo differs from what was sent");
    Ok(())
}

fn is_reset_or_pipe(kind: ErrorKind) -> bool {
    matches!(kind, ErrorKind::ConnectionReset | ErrorKind::BrokenPipe)
}

// ---------------------------------------------------------------------------------
// A fresh runtime, used from block_on
// ---------------------------------------------------------------------------------

/// The plainest tokio-style test: bind, connect and accept straight from `block_on` on a
/// runtime that has run no task yet. The sockets are registered with loops picked by
/// `next()`, whose threads start lazily on the first *task*; a registration alone does
/// not start them, so nothing polls the sockets and `connect` waits forever.
#[test]
fn io_off_the_loops_on_a_fresh_runtime() {
    let stage = Arc::new(Mutex::new("build the runtime"));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let at = stage.clone();
    let body = thread::spawn(move || {
        let rt = multi();
        let step = |s| *at.lock().unwrap() = s;
        rt.block_on(async {
            step("bind");
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            step("connect (waits for the socket's writability, delivered by its loop)");
            let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            step("accept");
            let (mut server, _) = listener.accept().await.unwrap();
            step("write and read");
            client.write_all(b"hi").await.unwrap();
            let mut got = [0u8; 2];
            server.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"hi");
        });
        let _ = done_tx.send(());
        // On a hang the runtime is leaked with this thread: dropping it needs the loops.
        rt
    });
    match done_rx.recv_timeout(WAIT) {
        Ok(()) => drop(body.join().unwrap()),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => std::panic::resume_unwind(body.join().unwrap_err()),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
            "hangs at `{}`: sockets registered from block_on with a loop that has not started are never polled",
            stage.lock().unwrap()
        ),
    }
}

// ---------------------------------------------------------------------------------
// Echo under load
// ---------------------------------------------------------------------------------

#[test]
fn echo_1mib_random_chunks_64_connections() {
    const CONNECTIONS: u64 = 64;
    const SIZE: usize = 1 << 20;
    const MAX_CHUNK: usize = 64 * 1024;

    async fn client(addr: SocketAddr, seed: u64) -> io::Result<usize> {
        let data = XorShift::new(seed).bytes(SIZE);
        let mut stream = TcpStream::connect(addr).await?;
        let (mut rd, mut wr) = stream.split();
        let write = async {
            let mut sizes = XorShift::new(seed ^ 0x5157);
            let mut off = 0;
            while off < SIZE {
                let n = sizes.size(MAX_CHUNK).min(SIZE - off);
                wr.write_all(&data[off..off + n]).await?;
                off += n;
            }
            wr.shutdown().await
        };
        let read = async {
            let mut sizes = XorShift::new(seed ^ 0xECD0);
            let mut buf = vec![0u8; MAX_CHUNK];
            let mut off = 0;
            loop {
                let want = sizes.size(MAX_CHUNK);
                let n = rd.read(&mut buf[..want]).await?;
                if n == 0 {
                    return Ok::<_, io::Error>(off);
                }
                assert!(off + n <= SIZE, "connection {seed}: echo is longer than what was sent");
                if buf[..n] != data[off..off + n] {
                    let at = (0..n).find(|&i| buf[i] != data[off + i]).unwrap();
                    panic!("connection {seed}: echoed byte {} differs", off + at);
                }
                off += n;
            }
        };
        let (written, echoed) = futures::join!(write, read);
        written?;
        echoed
    }

    within(Duration::from_secs(20), || {
        let rt = rt2();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            // The server reads in random sizes too (seeded by the peer's port).
            let _acceptor = serve(listener, |mut stream: TcpStream, peer: SocketAddr| async move {
                let mut sizes = XorShift::new(u64::from(peer.port()));
                let mut buf = vec![0u8; MAX_CHUNK];
                loop {
                    let want = sizes.size(MAX_CHUNK);
                    match stream.read(&mut buf[..want]).await {
                        Ok(0) => break,
                        Ok(n) => stream.write_all(&buf[..n]).await.expect("server: echo write"),
                        Err(e) => panic!("server: echo read: {e}"),
                    }
                }
                stream.shutdown().await.expect("server: shutdown");
            });
            let clients: Vec<_> = (0..CONNECTIONS).map(|i| netloop::spawn(client(addr, i))).collect();
            for (i, c) in clients.into_iter().enumerate() {
                let echoed = c
                    .await
                    .unwrap_or_else(|e| panic!("client {i} panicked: {e}"))
                    .unwrap_or_else(|e| panic!("client {i}: {e}"));
                assert_eq!(echoed, SIZE, "client {i}: every byte comes back");
            }
        });
    });
}

// ---------------------------------------------------------------------------------
// Closing: half close, reset, refused, in use
// ---------------------------------------------------------------------------------

#[test]
fn half_close() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (seen_tx, mut seen_rx) = amp::unbounded::<(Vec<u8>, usize)>();
            drop(serve(listener, move |mut stream: TcpStream, _| {
                let seen_tx = seen_tx.clone();
                async move {
                    let mut got = Vec::new();
                    stream.read_to_end(&mut got).await.expect("server reads to EOF");
                    // EOF is sticky.
                    let mut more = [0u8; 16];
                    let again = stream.read(&mut more).await.expect("read after EOF");
                    let _ = seen_tx.unbounded_send((got.clone(), again));
                    // The server -> client direction still works after the client's FIN.
                    let mut reply = b"got: ".to_vec();
                    reply.extend_from_slice(&got);
                    stream.write_all(&reply).await.expect("server writes after EOF");
                    stream.shutdown().await.expect("server shutdown");
                }
            }));

            let mut client = TcpStream::connect(addr).await.unwrap();
            client.write_all(b"hello").await.unwrap();
            client.shutdown().await.unwrap();
            let (got, again) = timeout(WAIT, seen_rx.next())
                .await
                .expect("the server saw EOF")
                .unwrap();
            assert_eq!(got, b"hello");
            assert_eq!(again, 0, "a read after EOF reads EOF again");
            // Writing after our own shutdown fails.
            let err = client.write_all(b"late").await.expect_err("write after shutdown");
            assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err:?}");
            let mut reply = Vec::new();
            timeout(WAIT, client.read_to_end(&mut reply))
                .await
                .expect("the reply arrives")
                .unwrap();
            assert_eq!(reply, b"got: hello");
        });
    });
}

#[test]
fn peer_reset_mid_write_gives_error_not_hang() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            // 1. The client writes a lot; the server handler resets mid-stream.
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            drop(serve(listener, |mut stream: TcpStream, _| async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut got = 0;
                while got < 256 * 1024 {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                stream.set_linger(Some(Duration::ZERO)).unwrap();
                drop(stream); // RST
            }));
            let mut client = TcpStream::connect(addr).await.unwrap();
            let chunk = vec![7u8; 256 * 1024];
            let err = timeout(WAIT, async {
                loop {
                    if let Err(e) = client.write_all(&chunk).await {
                        return e;
                    }
                }
            })
            .await
            .expect("the client's write fails instead of hanging after the peer's reset");
            assert!(is_reset_or_pipe(err.kind()), "client write error: {err:?}");
            let again = timeout(WAIT, client.write_all(&chunk))
                .await
                .expect("a second write fails at once too");
            assert!(again.is_err());

            // 2. A server handler writes a lot; the client resets mid-stream.
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (result_tx, mut result_rx) = amp::unbounded();
            drop(serve(listener, move |mut stream: TcpStream, _| {
                let result_tx = result_tx.clone();
                async move {
                    let chunk = vec![9u8; 256 * 1024];
                    let outcome = timeout(WAIT, async {
                        loop {
                            if let Err(e) = stream.write_all(&chunk).await {
                                return e.kind();
                            }
                        }
                    })
                    .await;
                    let _ = result_tx.unbounded_send(outcome);
                }
            }));
            let mut client = TcpStream::connect(addr).await.unwrap();
            let mut first = vec![0u8; 64 * 1024];
            client.read_exact(&mut first).await.unwrap();
            client.set_linger(Some(Duration::ZERO)).unwrap();
            drop(client); // RST
            let outcome = timeout(Duration::from_secs(4), result_rx.next())
                .await
                .expect("the handler reports")
                .unwrap();
            let kind = outcome.expect("the handler's write fails instead of hanging after the peer's reset");
            assert!(is_reset_or_pipe(kind), "handler write error: {kind:?}");
        });
    });
}

/// A loopback port nothing listens on: bind port 0, read it, close the listener.
fn closed_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr
}

#[test]
fn connect_to_closed_port_is_connection_refused() {
    test_body(|| {
        let rt = rt2();
        let addr = closed_port();
        rt.block_on(async move {
            // Off the loops (block_on thread)...
            let err = TcpStream::connect(addr).await.expect_err("nothing listens");
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err:?}");
            // ...and on a loop.
            let err = netloop::spawn(async move { TcpStream::connect(addr).await.map(drop) })
                .await
                .unwrap()
                .expect_err("nothing listens");
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err:?}");
            // Several addresses: a refused one is skipped for the next.
            let live = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let both = [addr, live.local_addr().unwrap()];
            let stream = TcpStream::connect(&both[..]).await.expect("the second address works");
            assert_eq!(stream.peer_addr().unwrap(), both[1]);
            // Only refused addresses: the last error is returned.
            let err = TcpStream::connect(&[addr, addr][..]).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err:?}");
        });
    });
}

#[test]
fn bind_port_in_use_is_addr_in_use() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let first = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = first.local_addr().unwrap();
            let err = TcpListener::bind(addr).await.expect_err("the port is taken");
            assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err:?}");
            // Taken by a std listener (no SO_REUSEADDR on its side) as well.
            let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let err = TcpListener::bind(std_listener.local_addr().unwrap())
                .await
                .expect_err("the port is taken");
            assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err:?}");
            // The first listener is unharmed.
            let _client = TcpStream::connect(addr).await.unwrap();
            timeout(WAIT, first.accept()).await.unwrap().unwrap();
        });
    });
}

// ---------------------------------------------------------------------------------
// The acceptor: spreading, caps, exhaustion, isolation
// ---------------------------------------------------------------------------------

/// 1000 connections to a `serve` server with `loops` loops; returns the handler count
/// per loop id (every loop of the server present).
fn connections_per_loop(loops: usize) -> HashMap<u64, usize> {
    const CONNECTIONS: usize = 1000;
    const CONCURRENCY: usize = 50;
    let server = runtime_with(loops);
    let mut counts: HashMap<u64, usize> = server.handle().event_loops().iter().map(|l| (l.id(), 0)).collect();
    let addr = server.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(serve(listener, |mut stream: TcpStream, _| async move {
            let id = current_loop_id();
            let _ = stream.write_all(&id.to_le_bytes()).await;
        }));
        addr
    });
    // The clients live in a runtime of their own, so their connects do not take turns
    // in the server group's round robin.
    let clients = runtime_with(2);
    let ids: Vec<u64> = clients.block_on(async move {
        let tasks: Vec<_> = (0..CONCURRENCY)
            .map(|_| {
                netloop::spawn(async move {
                    let mut ids = Vec::new();
                    for _ in 0..CONNECTIONS / CONCURRENCY {
                        let mut stream = TcpStream::connect(addr).await.expect("connect");
                        let mut id = [0u8; 8];
                        stream.read_exact(&mut id).await.expect("the handler answers");
                        ids.push(u64::from_le_bytes(id));
                    }
                    ids
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    assert_eq!(ids.len(), CONNECTIONS);
    for id in ids {
        *counts
            .get_mut(&id)
            .expect("every handler ran on one of the server's loops") += 1;
    }
    counts
}

#[test]
fn thousand_connections_spread_across_loops_within_10_percent() {
    within(Duration::from_secs(20), || {
        for loops in [2, 4] {
            let counts = connections_per_loop(loops);
            assert_eq!(counts.len(), loops);
            let even = 1000.0 / loops as f64;
            for (id, &n) in &counts {
                let off = (n as f64 - even).abs() / even;
                assert!(
                    off <= 0.10,
                    "{loops} loops: loop {id} ran {n} of 1000 handlers ({:.0}% off even); all: {counts:?}",
                    off * 100.0
                );
            }
        }
    });
}

/// The acceptor picks loops with `event_loops().next()`, the cursor every off-loop
/// spawn, timer and socket registration of the runtime also advances. Here the test
/// thread spawns one small task per connection it makes (say, to record it): spawn and
/// accept then take turns on the cursor and, with 2 loops, every handler lands on the
/// same loop. (Connecting from `block_on` of the server's runtime does the same through
/// the client sockets' registrations, with a racy order: splits from 200/0 to 120/80.)
#[test]
fn spread_is_even_when_other_work_is_spawned_off_loop() {
    const CONNECTIONS: usize = 200;
    within(Duration::from_secs(10), || {
        let rt = rt2();
        let mut counts: HashMap<u64, usize> = rt.handle().event_loops().iter().map(|l| (l.id(), 0)).collect();
        let addr = rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            drop(serve(listener, |mut stream: TcpStream, _| async move {
                let _ = stream.write_all(&current_loop_id().to_le_bytes()).await;
            }));
            addr
        });
        let recorded = Arc::new(AtomicUsize::new(0));
        for _ in 0..CONNECTIONS {
            let r = recorded.clone();
            drop(rt.spawn(async move {
                r.fetch_add(1, Ordering::Relaxed);
            }));
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            stream.set_read_timeout(Some(WAIT)).unwrap();
            let mut id = [0u8; 8];
            stream.read_exact(&mut id).expect("the handler answers");
            *counts.get_mut(&u64::from_le_bytes(id)).unwrap() += 1;
        }
        let even = (CONNECTIONS / 2) as f64;
        for (id, &n) in &counts {
            assert!(
                (n as f64 - even).abs() / even <= 0.10,
                "loop {id} ran {n} of {CONNECTIONS} handlers; all: {counts:?} (the acceptor shares \
                 `EventLoopGroup::next()` with off-loop spawns)"
            );
        }
    });
}

#[test]
fn max_connections_per_loop_closes_excess() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            drop(
                Serve::new(listener)
                    .max_connections_per_loop(1)
                    .serve(|mut stream: TcpStream, _| async move {
                        // Greet with the loop's id, then echo until EOF.
                        if stream.write_all(&current_loop_id().to_le_bytes()).await.is_ok() {
                            echo(stream).await;
                        }
                    }),
            );
            async fn greeting(stream: &mut TcpStream) -> io::Result<u64> {
                let mut id = [0u8; 8];
                stream.read_exact(&mut id).await?;
                Ok(u64::from_le_bytes(id))
            }
            let mut a = TcpStream::connect(addr).await.unwrap();
            let id_a = timeout(WAIT, greeting(&mut a)).await.unwrap().unwrap();
            let mut b = TcpStream::connect(addr).await.unwrap();
            let id_b = timeout(WAIT, greeting(&mut b)).await.unwrap().unwrap();
            assert_ne!(id_a, id_b, "with one connection per loop the two go to different loops");

            // Both loops are full: the third connection is closed at once.
            let mut c = TcpStream::connect(addr).await.unwrap();
            let closed = timeout(WAIT, greeting(&mut c))
                .await
                .expect("the excess connection is closed, not left waiting")
                .expect_err("the excess connection is not served");
            assert!(
                matches!(closed.kind(), ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset),
                "{closed:?}"
            );
            // The served ones are unaffected.
            round_trip(&mut a, b"still here a").await.unwrap();
            round_trip(&mut b, b"still here b").await.unwrap();

            // Closing one frees its loop's slot: a new connection is served there.
            drop(a);
            let deadline = Instant::now() + WAIT;
            let (mut d, id_d) = loop {
                let mut d = TcpStream::connect(addr).await.unwrap();
                match timeout(WAIT, greeting(&mut d)).await.expect("served or closed at once") {
                    Ok(id) => break (d, id),
                    Err(_) if Instant::now() < deadline => sleep(Duration::from_millis(5)).await,
                    Err(e) => panic!("no slot came free after a connection closed: {e}"),
                }
            };
            assert_eq!(id_d, id_a, "the new connection takes the freed slot");
            round_trip(&mut d, b"new one").await.unwrap();
            round_trip(&mut b, b"b again").await.unwrap();
        });
    });
}

const EMFILE_CHILD_ENV: &str = "NETLOOP_TESTS_EMFILE_CHILD";
const EMFILE_READY: &str = "NETLOOP_EMFILE_SERVER";
/// Connections the child can accept before it runs out of descriptors.
const EMFILE_ROOM: u64 = 32;

/// Child mode of `emfile_pauses_accept_and_recovers`: an echo server whose process
/// has a small descriptor limit. Prints `NETLOOP_EMFILE_SERVER <port> <limit>`.
fn emfile_child() -> ! {
    // Leave when the parent goes away (our stdin is its pipe).
    thread::spawn(|| {
        let _ = io::stdin().read_to_end(&mut Vec::new());
        std::process::exit(0);
    });
    let rt = rt2();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("child: bind");
        let port = listener.local_addr().unwrap().port();
        // New descriptors take the lowest free numbers, so with every open one below
        // the limit, `limit - open` more can be made (the listing's own fd is counted
        // in `open` and `highest`, which only errs on the side of room). The limit is
        // set before the server starts: on io_uring the kernel reads it when the
        // multishot accept is submitted (docs/io-uring.md), and an accept armed before
        // would never run out.
        let fds: Vec<u64> = std::fs::read_dir("/proc/self/fd")
            .expect("child: list fds")
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
            .collect();
        let highest = fds.iter().copied().max().unwrap();
        let limit = (fds.len() as u64 + EMFILE_ROOM).max(highest + 1);
        let mut rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain syscalls on a valid, owned struct.
        unsafe {
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl), 0);
            rl.rlim_cur = limit as libc::rlim_t;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &rl), 0, "child: setrlimit");
        }
        drop(serve(listener, echo_handler));
        println!("\n{EMFILE_READY} {port} {limit}");
        io::stdout().flush().unwrap();
        std::future::pending::<()>().await
    });
    unreachable!()
}

fn proc_cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/<pid>/stat");
    // Fields after "(comm)": state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn proc_fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("list /proc/<pid>/fd")
        .count()
}

/// Sends one byte and waits up to `wait` for its echo; `Ok(false)` if none came.
fn std_echo(stream: &mut std::net::TcpStream, byte: u8, wait: Duration) -> io::Result<bool> {
    stream.write_all(&[byte])?;
    expect_echo(stream, byte, wait)
}

fn expect_echo(stream: &mut std::net::TcpStream, byte: u8, wait: Duration) -> io::Result<bool> {
    stream.set_read_timeout(Some(wait))?;
    let mut got = [0u8; 1];
    match stream.read(&mut got) {
        Ok(1) => {
            assert_eq!(got[0], byte);
            Ok(true)
        }
        Ok(_) => Err(io::Error::new(
            ErrorKind::UnexpectedEof,
            "the server closed the connection",
        )),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Kills the child (by its id) when dropped, however the test ends.
struct KillOnDrop(Arc<Mutex<Option<Child>>>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn emfile_pauses_accept_and_recovers() {
    if std::env::var_os(EMFILE_CHILD_ENV).is_some() {
        emfile_child();
    }
    let slot = Arc::new(Mutex::new(None));
    let _kill = KillOnDrop(slot.clone());
    within(Duration::from_secs(20), move || {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "emfile_pauses_accept_and_recovers",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(EMFILE_CHILD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the child server");
        let pid = child.id();
        let stdout = child.stdout.take().unwrap();
        *slot.lock().unwrap() = Some(child);

        let mut line = String::new();
        let mut lines = BufReader::new(stdout);
        let (port, limit) = loop {
            line.clear();
            assert_ne!(
                lines.read_line(&mut line).unwrap(),
                0,
                "the child exited before it served"
            );
            // libtest may have printed "test <name> ... " on the same line first.
            if let Some(at) = line.find(EMFILE_READY) {
                let rest = &line[at + EMFILE_READY.len()..];
                let mut it = rest.split_whitespace().map(|s| s.parse::<usize>().unwrap());
                break (it.next().unwrap() as u16, it.next().unwrap());
            }
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let connect = || std::net::TcpStream::connect(addr).expect("the kernel completes the handshake");

        // Open connections until one is not served: the child is at its limit.
        let mut served = Vec::new();
        let mut pending = loop {
            assert!(served.len() < limit, "the child never ran out of descriptors");
            let mut s = connect();
            if std_echo(&mut s, 1, Duration::from_millis(300)).unwrap() {
                served.push(s);
                continue;
            }
            if proc_fd_count(pid) >= limit {
                break vec![s];
            }
            // Merely slow, not at the limit: it must still be served.
            assert!(
                expect_echo(&mut s, 1, WAIT).unwrap(),
                "a connection below the fd limit was not served"
            );
            served.push(s);
        };
        assert_eq!(proc_fd_count(pid), limit, "the child's descriptors are all in use");
        // Two more wait in the backlog.
        for _ in 0..2 {
            let mut s = connect();
            s.write_all(&[2]).unwrap();
            pending.push(s);
        }

        // At the limit the acceptor pauses instead of spinning on EMFILE. Measuring CPU
        // needs a window of time, hence the sleep.
        // SAFETY: sysconf only reads a constant.
        let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let window = Duration::from_millis(1500);
        let before = proc_cpu_ticks(pid);
        let start = Instant::now();
        thread::sleep(window);
        let used = (proc_cpu_ticks(pid) - before) as f64 / tick;
        let share = used / start.elapsed().as_secs_f64();
        assert!(
            share < 0.10,
            "the child used {:.0}% of a core while out of descriptors",
            share * 100.0
        );
        for s in &mut served {
            assert!(
                std_echo(s, 3, WAIT).unwrap(),
                "connections already served keep working at the limit"
            );
        }

        // Free some descriptors: the backlog is served, then a new connection too.
        served.truncate(served.len() - 8);
        for (i, s) in pending.iter_mut().enumerate() {
            let byte = if i == 0 { 1 } else { 2 };
            assert!(
                expect_echo(s, byte, Duration::from_secs(5)).unwrap(),
                "connection {i} of the backlog was not served after descriptors came free"
            );
        }
        let mut fresh = connect();
        assert!(
            std_echo(&mut fresh, 4, Duration::from_secs(5)).unwrap(),
            "a new connection is served"
        );
        assert!(std_echo(&mut served[0], 5, WAIT).unwrap());
    });
}

#[test]
fn handler_may_be_not_send() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            drop(serve(listener, |mut stream: TcpStream, _| async move {
                // Rc and RefCell live across awaits: the future is !Send.
                let received = Rc::new(RefCell::new(Vec::new()));
                let reads = Rc::new(Cell::new(0u32));
                let thread = thread::current().id();
                let mut buf = [0u8; 64];
                loop {
                    let n = stream.read(&mut buf).await.unwrap();
                    assert_eq!(thread::current().id(), thread, "the handler never changes threads");
                    if n == 0 {
                        break;
                    }
                    reads.set(reads.get() + 1);
                    received.borrow_mut().extend_from_slice(&buf[..n]);
                }
                // A !Send helper task on the same loop shares the Rc.
                let shared = received.clone();
                let reversed = task::spawn_local(async move {
                    let mut v = shared.borrow().clone();
                    v.reverse();
                    v
                })
                .await
                .unwrap();
                stream.write_all(&reversed).await.unwrap();
                assert!(reads.get() >= 1);
            }));
            let mut client = TcpStream::connect(addr).await.unwrap();
            client.write_all(b"abc").await.unwrap();
            client.write_all(b"def").await.unwrap();
            client.shutdown().await.unwrap();
            let mut back = Vec::new();
            timeout(WAIT, client.read_to_end(&mut back)).await.unwrap().unwrap();
            assert_eq!(back, b"fedcba");
        });
    });
}

#[test]
fn error_on_one_connection_does_not_affect_others() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            drop(serve(listener, |mut stream: TcpStream, _| async move {
                // Echo, with the loop id first; "panic" makes the handler panic.
                if stream.write_all(&current_loop_id().to_le_bytes()).await.is_err() {
                    return;
                }
                let mut buf = [0u8; 1024];
                loop {
                    let n = match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if buf[..n].starts_with(b"panic") {
                        panic!("a handler panics on purpose (expected in this test)");
                    }
                    if stream.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }));
            async fn open(addr: SocketAddr) -> (TcpStream, u64) {
                let mut s = TcpStream::connect(addr).await.unwrap();
                let mut id = [0u8; 8];
                s.read_exact(&mut id).await.unwrap();
                (s, u64::from_le_bytes(id))
            }

            let bad_done = Arc::new(AtomicBool::new(false));
            let good: Vec<_> = (0..8)
                .map(|i| {
                    let bad_done = bad_done.clone();
                    netloop::spawn(async move {
                        let (mut s, id) = open(addr).await;
                        let mut trips = 0;
                        let mut after = 0;
                        while after < 50 {
                            round_trip(&mut s, format!("good {i} trip {trips}").as_bytes())
                                .await
                                .unwrap_or_else(|e| panic!("good connection {i} failed: {e}"));
                            trips += 1;
                            if bad_done.load(Ordering::Acquire) {
                                after += 1;
                            }
                        }
                        id
                    })
                })
                .collect();

            let bad: Vec<_> = (0..8)
                .map(|i| {
                    netloop::spawn(async move {
                        let (mut s, id) = open(addr).await;
                        if i % 2 == 0 {
                            // Reset mid-stream: the handler's next read or write fails.
                            s.write_all(&[0u8; 4096]).await.unwrap();
                            s.set_linger(Some(Duration::ZERO)).unwrap();
                            drop(s);
                        } else {
                            // The handler panics: its connection is closed, not leaked.
                            s.write_all(b"panic").await.unwrap();
                            let mut rest = Vec::new();
                            let r = timeout(WAIT, s.read_to_end(&mut rest))
                                .await
                                .expect("a panicked handler's connection is closed");
                            assert!(r.is_ok() || is_reset_or_pipe(r.as_ref().unwrap_err().kind()), "{r:?}");
                        }
                        id
                    })
                })
                .collect();
            let mut bad_loops = Vec::new();
            for b in bad {
                bad_loops.push(b.await.unwrap());
            }
            bad_done.store(true, Ordering::Release);
            let mut good_loops = Vec::new();
            for g in good {
                good_loops.push(timeout(WAIT, g).await.expect("good connections keep going").unwrap());
            }
            assert!(
                bad_loops.iter().any(|l| good_loops.contains(l)),
                "the failing connections shared a loop with good ones"
            );
            // The acceptor is alive too.
            let (mut s, _) = open(addr).await;
            round_trip(&mut s, b"after the failures").await.unwrap();
        });
    });
}

// ---------------------------------------------------------------------------------
// Streams: halves, moving between loops, readiness, peek, vectored writes
// ---------------------------------------------------------------------------------

#[test]
fn split_and_into_split_reunite() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let addr = echo_server().await;

            // Borrowed halves, used concurrently in one task.
            let mut stream = TcpStream::connect(addr).await.unwrap();
            {
                let (mut rd, mut wr) = stream.split();
                assert_eq!(rd.peer_addr().unwrap(), addr);
                assert_eq!(wr.local_addr().unwrap(), rd.local_addr().unwrap());
                let payload: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
                let write = async {
                    wr.write_all(&payload).await.unwrap();
                };
                let mut back = vec![0u8; payload.len()];
                let read = rd.read_exact(&mut back);
                let ((), n) = futures::join!(write, read);
                assert_eq!(n.unwrap(), payload.len());
                assert_eq!(back, payload);
            }
            round_trip(&mut stream, b"whole again").await.unwrap();

            // Owned halves in tasks on different loops, then reunited.
            let (rd, wr) = stream.into_split();
            let loops = rt_loops();
            let writer = task::spawn_on(&loops[0], async move {
                let mut wr = wr;
                wr.write_all(b"from the writer task").await.unwrap();
                wr
            });
            let reader = task::spawn_on(&loops[1], async move {
                let mut rd = rd;
                let mut got = [0u8; 20];
                rd.read_exact(&mut got).await.unwrap();
                assert_eq!(&got, b"from the writer task");
                rd
            });
            let (wr, rd) = (writer.await.unwrap(), reader.await.unwrap());

            // Halves of different streams do not reunite, and are given back.
            let other = TcpStream::connect(addr).await.unwrap();
            let (other_rd, other_wr) = other.into_split();
            let err = rd.reunite(other_wr).expect_err("halves of different streams");
            assert!(err.to_string().contains("not from the same socket"));
            let netloop::net::tcp::ReuniteError(rd, other_wr) = err;
            let other = other_wr.reunite(other_rd).expect("the other stream's own halves");
            drop(other);

            let mut stream = rd.reunite(wr).expect("the halves of one stream");
            round_trip(&mut stream, b"reunited").await.unwrap();

            // Dropping the owned write half shuts the write direction: the echo server
            // sees EOF and closes; the read half still reads what comes back.
            let (mut rd, mut wr) = stream.into_split();
            wr.write_all(b"last words").await.unwrap();
            drop(wr);
            let mut rest = Vec::new();
            timeout(WAIT, rd.read_to_end(&mut rest)).await.unwrap().unwrap();
            assert_eq!(rest, b"last words");

            // forget() leaves the write direction open.
            let (mut rd, wr) = TcpStream::connect(addr).await.unwrap().into_split();
            wr.forget();
            let mut byte = [0u8; 1];
            assert!(
                timeout(Duration::from_millis(100), rd.read(&mut byte)).await.is_err(),
                "no EOF: the server did not see a shutdown"
            );
        });
    });
}

/// Handles of the current runtime's loops.
fn rt_loops() -> Vec<EventLoopHandle> {
    netloop::runtime::Handle::current()
        .event_loops()
        .iter()
        .cloned()
        .collect()
}

#[test]
fn stream_moved_to_task_on_another_loop_still_works() {
    test_body(|| {
        let rt = rt2();
        let loops: Vec<EventLoopHandle> = rt.handle().event_loops().iter().cloned().collect();
        rt.block_on(async move {
            let addr = echo_server().await;
            // Connected on loop 0: registered with loop 0.
            let (stream, made_on) = task::spawn_on(&loops[0], async move {
                (TcpStream::connect(addr).await.unwrap(), current_loop_id())
            })
            .await
            .unwrap();
            assert_eq!(made_on, loops[0].id());
            // Used on loop 1, readiness still delivered by loop 0.
            let used_on = task::spawn_on(&loops[1], async move {
                let mut stream = stream;
                for i in 0..200 {
                    round_trip(&mut stream, format!("trip {i}").as_bytes()).await.unwrap();
                }
                let big: Vec<u8> = XorShift::new(7).bytes(1 << 20);
                let (mut rd, mut wr) = stream.split();
                let mut back = vec![0u8; big.len()];
                let (w, r) = futures::join!(wr.write_all(&big), rd.read_exact(&mut back));
                w.unwrap();
                r.unwrap();
                assert!(back == big);
                current_loop_id()
            })
            .await
            .unwrap();
            assert_eq!(used_on, loops[1].id());

            // A served connection handed by its handler to a task on another loop.
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (where_tx, mut where_rx) = amp::unbounded();
            let group = loops.clone();
            drop(serve(listener, move |stream: TcpStream, _| {
                let where_tx = where_tx.clone();
                let group = group.clone();
                async move {
                    let here = current_loop_id();
                    let other = group.iter().find(|l| l.id() != here).unwrap().clone();
                    let there = task::spawn_on(&other, async move {
                        echo(stream).await;
                        current_loop_id()
                    })
                    .await
                    .unwrap();
                    let _ = where_tx.unbounded_send((here, there));
                }
            }));
            let mut client = TcpStream::connect(addr).await.unwrap();
            for i in 0..100 {
                round_trip(&mut client, format!("moved {i}").as_bytes()).await.unwrap();
            }
            client.shutdown().await.unwrap();
            let mut rest = Vec::new();
            timeout(WAIT, client.read_to_end(&mut rest)).await.unwrap().unwrap();
            assert!(rest.is_empty());
            let (here, there) = timeout(WAIT, where_rx.next()).await.unwrap().unwrap();
            assert_ne!(here, there);
        });
    });
}

#[test]
fn try_read_try_write_and_ready() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let (a, mut b) = pair().await;
            let ready = a.ready(Interest::WRITABLE).await.unwrap();
            assert!(ready.is_writable(), "{ready:?}");
            assert_eq!(a.try_write(b"ping").unwrap(), 4);
            let both = Interest::READABLE | Interest::WRITABLE;
            assert!(both.is_readable() && both.is_writable());

            // Nothing to read yet on `a`.
            let mut buf = [0u8; 64];
            assert_eq!(a.try_read(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);

            // `b`: wait for readability, then read without waiting.
            let mut got = Vec::new();
            while got.len() < 4 {
                b.readable().await.unwrap();
                match b.try_read(&mut buf) {
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(got, b"ping");
            assert_eq!(b.try_read(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
            let ready = b.ready(both).await.unwrap();
            assert!(ready.is_writable() || ready.is_readable());
            b.writable().await.unwrap();

            // Vectored forms.
            assert_eq!(
                b.try_write_vectored(&[IoSlice::new(b"po"), IoSlice::new(b"ng")])
                    .unwrap(),
                4
            );
            let (mut x, mut y) = ([0u8; 2], [0u8; 2]);
            let mut n = 0;
            while n < 4 {
                a.readable().await.unwrap();
                match a.try_read_vectored(&mut [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)]) {
                    Ok(k) => {
                        assert_eq!(k, 4, "four bytes sent at once arrive at once on loopback");
                        n += k;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!((&x, &y), (b"po", b"ng"));

            // try_io runs a custom operation under the readiness of its interest.
            b.writable().await.unwrap();
            let r = b.try_io(Interest::WRITABLE, || Ok(17)).unwrap();
            assert_eq!(r, 17);

            // Fill `a`'s send path until WouldBlock; writability then waits for `b`.
            let chunk = vec![5u8; 64 * 1024];
            let mut sent = 0usize;
            loop {
                a.writable().await.unwrap();
                match a.try_write(&chunk) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        // The readiness was cleared: is the buffer really full?
                        if timeout(Duration::from_millis(50), a.writable()).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => panic!("{e}"),
                }
                assert!(sent < 256 << 20, "the send buffer never filled");
            }
            let waiting = netloop::spawn(async move {
                a.ready(Interest::WRITABLE).await.unwrap();
                a
            });
            let mut drained = 0;
            let mut big = vec![0u8; 256 * 1024];
            while drained < sent {
                let n = b.read(&mut big).await.unwrap();
                assert!(big[..n].iter().all(|&x| x == 5));
                drained += n;
            }
            let a = timeout(WAIT, waiting)
                .await
                .expect("writable again once drained")
                .unwrap();
            assert_eq!(a.try_write(b"x").unwrap(), 1);
        });
    });
}

#[test]
fn peek_does_not_consume() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let (mut a, mut b) = pair().await;
            a.write_all(b"hello world").await.unwrap();
            let mut peeked = [0u8; 32];
            let n = b.peek(&mut peeked).await.unwrap();
            assert!(n > 0 && b"hello world".starts_with(&peeked[..n]));
            let again = b.peek(&mut peeked).await.unwrap();
            assert!(again >= n, "peeking twice sees the same bytes (or more)");
            let mut got = [0u8; 11];
            b.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"hello world");

            // Through the halves.
            a.write_all(b"half").await.unwrap();
            {
                let (mut rd, _wr) = b.split();
                let mut p = [0u8; 4];
                let mut n = 0;
                while n < 4 {
                    n = rd.peek(&mut p).await.unwrap();
                }
                assert_eq!(&p, b"half");
            }
            let (mut rd, wr) = b.into_split();
            let mut p = [0u8; 4];
            let mut n = 0;
            while n < 4 {
                n = rd.peek(&mut p).await.unwrap();
            }
            assert_eq!(&p, b"half");
            let mut got = [0u8; 4];
            rd.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"half");

            // At EOF peek returns 0.
            a.shutdown().await.unwrap();
            assert_eq!(timeout(WAIT, rd.peek(&mut p)).await.unwrap().unwrap(), 0);
            drop(wr);
        });
    });
}

#[test]
fn vectored_write_is_whole() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let (mut a, mut b) = pair().await;
            assert!(netloop::io::AsyncWrite::is_write_vectored(&a));

            // A few small slices: one call writes all of them, not just the first.
            let parts: [&[u8]; 3] = [b"hello ", b"vectored ", b"world"];
            let slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
            let n = a.write_vectored(&slices).await.unwrap();
            assert_eq!(n, 20, "the whole vectored write went out at once");
            let mut got = [0u8; 20];
            b.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"hello vectored world");

            {
                // Large slices through a split write half, concurrently read.
                let big = XorShift::new(12).bytes(4 << 20);
                let (_rd, mut wr) = b.split();
                let write = async {
                    let chunks: Vec<IoSlice<'_>> = big.chunks(100 * 1024).map(IoSlice::new).collect();
                    let mut slices = chunks;
                    let mut bufs = &mut slices[..];
                    while !bufs.is_empty() {
                        let n = wr.write_vectored(bufs).await.unwrap();
                        IoSlice::advance_slices(&mut bufs, n);
                    }
                };
                let mut back = vec![0u8; big.len()];
                let read = async {
                    let mut echoed = 0;
                    while echoed < big.len() {
                        let n = a.read(&mut back[echoed..]).await.unwrap();
                        assert!(n > 0);
                        echoed += n;
                    }
                };
                timeout(WAIT, async { futures::join!(write, read) })
                    .await
                    .expect("large vectored writes complete");
                assert!(back == big);
            }

            // Many slices (more than IOV_MAX = 1024) with a silent peer: the OS writes
            // the first 1024 only, a short write although the send buffer has room, so
            // it must not wait for the buffer to drain (no writability edge would come).
            let data = XorShift::new(11).bytes(3000 * 10);
            let chunks: Vec<&[u8]> = data.chunks(10).collect();
            let mut slices: Vec<IoSlice<'_>> = chunks.iter().map(|c| IoSlice::new(c)).collect();
            let mut bufs = &mut slices[..];
            let mut written = 0;
            timeout(WAIT, async {
                while !bufs.is_empty() {
                    let n = a.write_vectored(bufs).await.unwrap();
                    assert!(n > 0);
                    written += n;
                    IoSlice::advance_slices(&mut bufs, n);
                }
            })
            .await
            .expect("vectored writes of many slices complete while the peer reads nothing");
            assert_eq!(written, data.len());
            let mut back = vec![0u8; data.len()];
            b.read_exact(&mut back).await.unwrap();
            assert!(back == data);
        });
    });
}

// ---------------------------------------------------------------------------------
// Addresses, std conversion, options, futures-io
// ---------------------------------------------------------------------------------

#[test]
fn bind_every_address_form() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            async fn check(listener: TcpListener, connect_with: impl netloop::net::ToSocketAddrs) {
                let addr = listener.local_addr().unwrap();
                assert!(addr.ip().is_loopback(), "{addr}");
                assert_ne!(addr.port(), 0);
                let client = TcpStream::connect(connect_with).await.expect("connect");
                assert_eq!(client.peer_addr().unwrap(), addr);
                let (_, peer) = timeout(WAIT, listener.accept()).await.unwrap().unwrap();
                assert_eq!(peer, client.local_addr().unwrap());
            }
            let port = |l: &TcpListener| l.local_addr().unwrap().port();

            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let p = port(&l);
            check(l, format!("127.0.0.1:{p}")).await;

            let l = TcpListener::bind(String::from("127.0.0.1:0")).await.unwrap();
            let p = port(&l);
            check(l, &format!("127.0.0.1:{p}")).await;

            let l = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
            let p = port(&l);
            check(l, ("127.0.0.1", p)).await;

            let l = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
            let a = l.local_addr().unwrap();
            check(l, a).await;

            let l = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
                .await
                .unwrap();
            let p = port(&l);
            check(l, (Ipv4Addr::LOCALHOST, p)).await;

            let l = TcpListener::bind((IpAddr::from(Ipv4Addr::LOCALHOST), 0)).await.unwrap();
            let p = port(&l);
            check(l, (IpAddr::from(Ipv4Addr::LOCALHOST), p)).await;

            // A host name, resolved off the loops.
            let l = TcpListener::bind(("localhost", 0)).await.unwrap();
            let p = port(&l);
            check(l, ("localhost", p)).await;
            let l = TcpListener::bind("localhost:0").await.unwrap();
            let p = port(&l);
            check(l, format!("localhost:{p}")).await;

            // A slice: the first address is taken, so the second is used.
            let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let candidates = [taken.local_addr().unwrap(), SocketAddr::from(([127, 0, 0, 1], 0))];
            let l = TcpListener::bind(&candidates[..]).await.unwrap();
            assert_ne!(l.local_addr().unwrap(), candidates[0]);
            let a = l.local_addr().unwrap();
            check(l, &[a][..]).await;

            // IPv6 loopback, where the host has it.
            match TcpListener::bind("[::1]:0").await {
                Ok(l) => {
                    let p = port(&l);
                    check(l, (Ipv6Addr::LOCALHOST, p)).await;
                }
                Err(e) => eprintln!("skipping ::1: {e}"),
            }

            // An empty slice resolves to nothing.
            let none: &[SocketAddr] = &[];
            let err = TcpListener::bind(none).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
        });
    });
}

fn is_nonblocking(fd: &impl AsRawFd) -> bool {
    // SAFETY: F_GETFL on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    assert!(flags >= 0, "fcntl: {}", io::Error::last_os_error());
    flags & libc::O_NONBLOCK != 0
}

#[test]
fn from_std_sets_nonblocking() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            assert!(!is_nonblocking(&std_listener));
            let addr = std_listener.local_addr().unwrap();
            let listener = TcpListener::from_std(std_listener).unwrap();

            let std_client = std::net::TcpStream::connect(addr).unwrap();
            assert!(!is_nonblocking(&std_client));
            let mut client = TcpStream::from_std(std_client).unwrap();
            let (mut server, _) = timeout(WAIT, listener.accept()).await.unwrap().unwrap();
            round_trip_pair(&mut client, &mut server).await;

            let back = client.into_std().unwrap();
            assert!(
                is_nonblocking(&back),
                "from_std set the stream non-blocking; into_std keeps it"
            );
            let mut byte = [0u8; 1];
            assert_eq!((&back).read(&mut byte).unwrap_err().kind(), ErrorKind::WouldBlock);
            let std_listener = listener.into_std().unwrap();
            assert!(is_nonblocking(&std_listener));
            assert_eq!(std_listener.accept().unwrap_err().kind(), ErrorKind::WouldBlock);

            // Back again: registered anew, and it works.
            let mut client = TcpStream::from_std(back).unwrap();
            round_trip_pair(&mut client, &mut server).await;
        });
    });
}

async fn round_trip_pair(a: &mut TcpStream, b: &mut TcpStream) {
    a.write_all(b"ping").await.unwrap();
    let mut got = [0u8; 4];
    timeout(WAIT, b.read_exact(&mut got)).await.unwrap().unwrap();
    assert_eq!(&got, b"ping");
    b.write_all(b"pong").await.unwrap();
    timeout(WAIT, a.read_exact(&mut got)).await.unwrap().unwrap();
    assert_eq!(&got, b"pong");
}

#[test]
fn nodelay_linger_ttl_round_trip() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let (a, _b) = pair().await;
            for on in [true, false, true] {
                a.set_nodelay(on).unwrap();
                assert_eq!(a.nodelay().unwrap(), on);
            }
            a.set_linger(Some(Duration::from_secs(5))).unwrap();
            assert_eq!(a.linger().unwrap(), Some(Duration::from_secs(5)));
            a.set_linger(Some(Duration::ZERO)).unwrap();
            assert_eq!(a.linger().unwrap(), Some(Duration::ZERO));
            a.set_linger(None).unwrap();
            assert_eq!(a.linger().unwrap(), None);
            a.set_ttl(42).unwrap();
            assert_eq!(a.ttl().unwrap(), 42);
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            listener.set_ttl(17).unwrap();
            assert_eq!(listener.ttl().unwrap(), 17);
        });
    });
}

mod with_futures_io {
    //! Only futures-io's traits in scope here.
    use futures::{AsyncReadExt, AsyncWriteExt};
    use netloop::net::TcpStream;
    use std::io::IoSlice;

    pub async fn exercise(mut client: TcpStream, server: TcpStream) {
        // The server echoes with futures' own split and copy.
        let echo = netloop::spawn(async move {
            let (rd, mut wr) = AsyncReadExt::split(server);
            let n = futures::io::copy(rd, &mut wr).await.unwrap();
            wr.close().await.unwrap();
            n
        });
        client.write_all(b"futures ").await.unwrap();
        client.flush().await.unwrap();
        let n = client
            .write_vectored(&[IoSlice::new(b"io "), IoSlice::new(b"traits")])
            .await
            .unwrap();
        assert_eq!(n, 9);
        let mut got = [0u8; 17];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"futures io traits");
        client.write_all(b"!").await.unwrap();
        client.close().await.unwrap();
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"!");
        assert_eq!(echo.await.unwrap(), 18);
    }
}

#[test]
fn futures_io_traits_work() {
    test_body(|| {
        let rt = rt2();
        rt.block_on(async {
            let (client, server) = pair().await;
            timeout(WAIT, with_futures_io::exercise(client, server))
                .await
                .expect("the futures-io exchange completes");
        });
    });
}

// ---------------------------------------------------------------------------------
// TcpSocket
// ---------------------------------------------------------------------------------

#[test]
fn tcp_socket_options_round_trip_before_connect_or_listen() {
    use netloop::net::TcpSocket;
    // No runtime needed to create and configure a socket.
    let s = TcpSocket::new_v4().unwrap();
    s.set_reuseaddr(true).unwrap();
    assert!(s.reuseaddr().unwrap());
    s.set_reuseport(true).unwrap();
    assert!(s.reuseport().unwrap());
    s.set_keepalive(true).unwrap();
    assert!(s.keepalive().unwrap());
    s.set_nodelay(true).unwrap();
    assert!(s.nodelay().unwrap());
    assert_eq!(s.linger().unwrap(), None);
    s.set_zero_linger().unwrap();
    assert_eq!(s.linger().unwrap(), Some(Duration::ZERO));
    s.set_recv_buffer_size(8192).unwrap();
    assert!(s.recv_buffer_size().unwrap() >= 8192);
    s.set_tos_v4(0x10).unwrap();
    assert_eq!(s.tos_v4().unwrap(), 0x10);
    let v6 = TcpSocket::new_v6().unwrap();
    v6.set_tclass_v6(0x20).unwrap();
    assert_eq!(v6.tclass_v6().unwrap(), 0x20);
}

#[test]
fn tcp_socket_listen_connect_and_errors() {
    use netloop::net::TcpSocket;
    test_body(|| {
        multi().block_on(async {
            let server = TcpSocket::new_v4().unwrap();
            server.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = server.local_addr().unwrap();
            let listener = server.listen(16).unwrap();

            // The address is taken: a second bind without SO_REUSEPORT is AddrInUse.
            let taken = TcpSocket::new_v4().unwrap();
            assert_eq!(taken.bind(addr).unwrap_err().kind(), ErrorKind::AddrInUse);

            let client = TcpSocket::new_v4().unwrap();
            client.set_nodelay(true).unwrap();
            let (stream, accepted) = both(client.connect(addr), listener.accept()).await;
            let (mut stream, (mut peer, _)) = (stream.unwrap(), accepted.unwrap());
            assert!(stream.nodelay().unwrap(), "options set before connect stay");
            stream.write_all(b"ping").await.unwrap();
            let mut buf = [0u8; 4];
            peer.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"ping");

            // Nobody listens there any more: connect is refused.
            drop(listener);
            let refused = TcpSocket::new_v4().unwrap().connect(addr).await.unwrap_err();
            assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
        });
    });
}

/// Both futures at once (a `join!` without the macro's imports).
async fn both<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    netloop::join!(a, b)
}

/// While a task blocks in place, its loop's stand-in polls the loop's sockets: a
/// connection served by another task of that loop is answered during the closure, as
/// on tokio, whose blocked worker hands its I/O driver on. The closure ends only once
/// the echo came back, so without that the test fails at the read's timeout.
#[test]
fn block_in_place_keeps_serving_its_loops_connections() {
    test_body(|| {
        let rt = Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let here = rt.handle().event_loops().get(0).unwrap().clone();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let server = task::spawn_on(&here, async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 16];
            loop {
                let n = conn.read(&mut buf).await.unwrap();
                if n == 0 {
                    return netloop::runtime::worker_index();
                }
                conn.write_all(&buf[..n]).await.unwrap();
            }
        });
        let addr = addr_rx.recv_timeout(WAIT).unwrap();
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        client.set_read_timeout(Some(WAIT)).unwrap();
        let mut echo = [0u8; 1];
        client.write_all(b"a").unwrap();
        client.read_exact(&mut echo).unwrap();
        // Block loop 0 in place until the next echo has come back.
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let blocker = task::spawn_on(&here, async move {
            task::block_in_place(|| {
                entered_tx.send(()).unwrap();
                release_rx.recv_timeout(Duration::from_secs(20)).is_ok()
            })
        });
        entered_rx.recv_timeout(WAIT).unwrap();
        client.write_all(b"b").unwrap();
        let echoed = client.read_exact(&mut echo).map(|()| echo);
        release_tx.send(()).unwrap();
        assert_eq!(echoed.expect("no echo while the loop blocked in place"), *b"b");
        assert!(rt.block_on(blocker).unwrap(), "the closure ended by the test");
        drop(client);
        assert_eq!(rt.block_on(server).unwrap(), Some(0), "the server stayed on its loop");
    });
}
