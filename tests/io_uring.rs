//! Sockets on the io_uring driver: tokio's semantics through the completion path, and
//! the memory the kernel may write kept until its completion.
//!
//! Each test builds its runtime with `io_driver(IoDriver::IoUring)` and first checks
//! that the loops really run on the ring (`EventLoopHandle::io_driver`) and that the
//! accepted stream took the completion path; on a kernel that refuses io_uring the
//! tests say so and pass (the fallback has its own test).

use std::time::Duration;

use netloop::event_loop::{EventLoopHandle, IoDriver};
use netloop::io::{AsyncReadExt, AsyncWriteExt};
use netloop::net::{TcpListener, TcpStream};
use netloop::runtime::{Builder, Runtime};

fn ring_runtime(workers: usize) -> Option<Runtime> {
    let rt = Builder::new_multi_thread()
        .worker_threads(workers)
        .io_driver(IoDriver::IoUring)
        .enable_all()
        .build()
        .unwrap();
    let driver = rt.block_on(async {
        netloop::spawn(async { EventLoopHandle::current().unwrap().io_driver() })
            .await
            .unwrap()
    });
    if driver != IoDriver::IoUring {
        eprintln!("io_uring refused by this kernel: skipping");
        return None;
    }
    Some(rt)
}

fn within<F: std::future::Future>(rt: &Runtime, f: F) -> F::Output {
    rt.block_on(async {
        netloop::time::timeout(Duration::from_secs(20), f)
            .await
            .expect("test timed out")
    })
}

/// An echo over the ring: partial reads, many writes, EOF after the peer's shutdown.
#[test]
fn echo_round_trips_and_half_close() {
    let Some(rt) = ring_runtime(2) else { return };
    within(&rt, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = netloop::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 7];
            assert_eq!(s.read(&mut buf[..1]).await.unwrap(), 1);
            assert!(s.is_on_ring());
            s.write_all(&buf[..1]).await.unwrap();
            let mut total = 1;
            loop {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                total += n;
                s.write_all(&buf[..n]).await.unwrap();
            }
            s.shutdown().await.unwrap();
            total
        });
        let mut c = TcpStream::connect(addr).await.unwrap();
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let (mut r, mut w) = c.split();
        let send = async {
            for chunk in payload.chunks(1000) {
                w.write_all(chunk).await.unwrap();
            }
            w.shutdown().await.unwrap();
        };
        let mut back = Vec::new();
        let recv = r.read_to_end(&mut back);
        let ((), got) = netloop::join!(send, recv);
        got.unwrap();
        assert_eq!(back, payload);
        assert_eq!(server.await.unwrap(), payload.len());
    });
}

/// The accepted stream is on the ring; `peek` leaves the bytes for `read`; `try_read`
/// says `WouldBlock` when nothing is there and `readable` says when something is.
#[test]
fn accepted_streams_take_the_completion_path() {
    let Some(rt) = ring_runtime(1) else { return };
    // In a task: a stream first used on a loop's thread goes on that loop's ring
    // (`block_on`'s thread drives no loop of a multi-thread runtime).
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut c = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 16];
            assert_eq!(s.try_read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
            assert!(s.is_on_ring(), "an accepted stream on an io_uring loop uses the ring");
            c.write_all(b"hello").await.unwrap();
            s.readable().await.unwrap();
            let n = s.peek(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"hello");
            let n = s.try_read(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"hello");
            drop(c);
            let mut s = s;
            assert_eq!(
                s.read(&mut buf).await.unwrap(),
                0,
                "end of stream after the peer closed"
            );
        })
        .await
        .unwrap()
    });
}

/// Dropping a stream with a receive in flight and unsent bytes: the bytes still reach
/// the peer, then the connection closes; nothing leaks (buffers come back: many
/// connections in turn never run the pool dry).
#[test]
fn dropped_streams_send_what_they_accepted_and_give_buffers_back() {
    let Some(rt) = ring_runtime(2) else { return };
    within(&rt, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = netloop::spawn(async move {
            for _ in 0..300 {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut b = [0u8; 8192];
                // Receive everything (unread bytes would make the close a reset, as on
                // any runtime), answer more than the send window, drop at once.
                s.read_exact(&mut b).await.unwrap();
                s.write_all(&vec![7u8; 200_000][..]).await.unwrap();
            }
        });
        for _ in 0..300 {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(&[1u8; 8192]).await.unwrap();
            let mut got = Vec::new();
            c.read_to_end(&mut got).await.unwrap();
            assert_eq!(got.len(), 200_000);
        }
        server.await.unwrap();
    });
}

/// Shutting the runtime down with operations in flight (receives armed, sends queued)
/// loses nothing and hangs nothing: the loop drains its ring before it ends.
#[test]
fn runtime_shutdown_with_operations_in_flight() {
    let Some(rt) = ring_runtime(2) else { return };
    let addr = within(&rt, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        netloop::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                netloop::spawn(async move {
                    let mut b = [0u8; 64];
                    while let Ok(n) = s.read(&mut b).await {
                        if n == 0 {
                            break;
                        }
                    }
                });
            }
        });
        addr
    });
    let clients: Vec<std::net::TcpStream> = (0..20).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(100));
    let started = std::time::Instant::now();
    drop(rt);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "shutdown waited {:?}",
        started.elapsed()
    );
    // The server's sockets are closed: each client reads end of stream or a reset.
    for mut c in clients {
        use std::io::Read;
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 8];
        match c.read(&mut b) {
            Ok(0) => {}
            Ok(n) => panic!("read {n} bytes from a closed server"),
            Err(e) => assert_ne!(
                e.kind(),
                std::io::ErrorKind::WouldBlock,
                "the server socket stayed open"
            ),
        }
    }
}

/// `into_std` leaves the ring: bytes written afterwards are read by the std stream.
#[test]
fn into_std_leaves_the_ring() {
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut c = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (mut s, _) = listener.accept().await.unwrap();
            c.write_all(b"one").await.unwrap();
            let mut buf = [0u8; 3];
            s.read_exact(&mut buf).await.unwrap();
            assert!(s.is_on_ring());
            let mut std_stream = s.into_std().unwrap();
            c.write_all(b"two").await.unwrap();
            netloop::task::spawn_blocking(move || {
                use std::io::Read;
                std_stream.set_nonblocking(false).unwrap();
                let mut b = [0u8; 3];
                std_stream.read_exact(&mut b).unwrap();
                assert_eq!(&b, b"two");
            })
            .await
            .unwrap();
        })
        .await
        .unwrap()
    });
}

/// A builder that asks for epoll gets epoll, whatever the environment says.
#[test]
fn epoll_stays_the_default() {
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    let driver = rt.block_on(async { EventLoopHandle::current().unwrap().io_driver() });
    if std::env::var_os(netloop::event_loop::IO_DRIVER_ENV).is_none() {
        assert_eq!(driver, IoDriver::Epoll);
    }
    let rt = Builder::new_current_thread()
        .io_driver(IoDriver::Epoll)
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(
        rt.block_on(async { EventLoopHandle::current().unwrap().io_driver() }),
        IoDriver::Epoll
    );
}

/// A listener accepted from on its own loop takes connections through one multishot
/// accept; several tasks may await `accept` at once; a dropped listener cancels it.
#[test]
fn a_listener_on_its_loop_accepts_through_the_ring() {
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let listener = std::sync::Arc::new(TcpListener::bind("127.0.0.1:0").await.unwrap());
            let addr = listener.local_addr().unwrap();
            let acceptors: Vec<_> = (0..3)
                .map(|_| {
                    let listener = listener.clone();
                    netloop::spawn(async move {
                        let (mut s, peer) = listener.accept().await.unwrap();
                        let mut b = [0u8; 1];
                        s.read_exact(&mut b).await.unwrap();
                        s.write_all(&b).await.unwrap();
                        peer
                    })
                })
                .collect();
            netloop::task::yield_now().await;
            let mut clients = Vec::new();
            for i in 0..3u8 {
                let mut c = TcpStream::connect(addr).await.unwrap();
                c.write_all(&[i]).await.unwrap();
                let mut b = [0u8; 1];
                c.read_exact(&mut b).await.unwrap();
                assert_eq!(b[0], i);
                clients.push(c);
            }
            for a in acceptors {
                let peer = a.await.unwrap();
                assert!(clients.iter().any(|c| c.local_addr().unwrap() == peer));
            }
            assert!(listener.is_on_ring(), "accepted through the ring");
            drop(listener);
            // The port is free again once the cancelled accept let go of the socket.
            netloop::time::sleep(Duration::from_millis(50)).await;
            TcpListener::bind(addr)
                .await
                .expect("the dropped listener's port is free");
        })
        .await
        .unwrap()
    });
}
