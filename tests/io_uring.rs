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
use netloop::net::{TcpListener, TcpStream, UdpSocket};
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

/// Writes `payload` to `stream` in `chunk`-byte writes and shuts its write direction,
/// while reading everything the peer sends until end of stream.
async fn send_and_read_to_end<S>(stream: S, payload: &[u8], chunk: usize) -> Vec<u8>
where
    S: netloop::io::AsyncRead + netloop::io::AsyncWrite,
{
    let (mut r, mut w) = netloop::io::split(stream);
    let send = async {
        for part in payload.chunks(chunk) {
            w.write_all(part).await.unwrap();
        }
        w.shutdown().await.unwrap();
    };
    let mut back = Vec::new();
    let recv = r.read_to_end(&mut back);
    let ((), got) = netloop::join!(send, recv);
    got.unwrap();
    back
}

/// Sends `byte` and reads it back from an [`echo_one_byte`] peer.
async fn byte_round_trip<S: netloop::io::AsyncRead + netloop::io::AsyncWrite + Unpin>(c: &mut S, byte: u8) {
    c.write_all(&[byte]).await.unwrap();
    let mut b = [0u8; 1];
    c.read_exact(&mut b).await.unwrap();
    assert_eq!(b[0], byte);
}

/// Reads one byte and writes it back.
async fn echo_one_byte<S: netloop::io::AsyncRead + netloop::io::AsyncWrite + Unpin>(s: &mut S) {
    let mut b = [0u8; 1];
    s.read_exact(&mut b).await.unwrap();
    s.write_all(&b).await.unwrap();
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
        let c = TcpStream::connect(addr).await.unwrap();
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(send_and_read_to_end(c, &payload, 1000).await, payload);
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
                        echo_one_byte(&mut s).await;
                        peer
                    })
                })
                .collect();
            netloop::task::yield_now().await;
            let mut clients = Vec::new();
            for i in 0..3u8 {
                let mut c = TcpStream::connect(addr).await.unwrap();
                byte_round_trip(&mut c, i).await;
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

/// What `block_on`'s own future wrote is the kernel's before the future blocks the
/// thread (tokio's `buffered::echo_server` joins a std reader thread right after its
/// last write): a current-thread runtime's writes do not wait for the next turn.
#[test]
fn block_on_writes_reach_the_kernel_before_the_thread_blocks() {
    let rt = Builder::new_current_thread()
        .io_driver(IoDriver::IoUring)
        .enable_all()
        .build()
        .unwrap();
    if rt.block_on(async { EventLoopHandle::current().unwrap().io_driver() }) != IoDriver::IoUring {
        return;
    }
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            use std::io::Read;
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut b = [0u8; 5];
            s.read_exact(&mut b).map(|()| b)
        });
        let (mut s, _) = listener.accept().await.unwrap();
        s.write_all(b"hello").await.unwrap();
        assert!(s.is_on_ring());
        // Blocks the loop's thread: the bytes must already be with the kernel.
        assert_eq!(&reader.join().unwrap().expect("the bytes arrived"), b"hello");
    });
}

// Found in review: each failed before its fix.

fn ring_current_thread() -> Runtime {
    let rt = Builder::new_current_thread()
        .io_driver(IoDriver::IoUring)
        .enable_all()
        .build()
        .unwrap();
    let d = rt.block_on(async { EventLoopHandle::current().unwrap().io_driver() });
    assert_eq!(d, IoDriver::IoUring, "these tests need the ring");
    rt
}

fn echo_server_shape(settle: bool) {
    let rt = ring_current_thread();
    rt.block_on(async {
        const N: usize = 1024;
        let srv = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = srv.local_addr().unwrap();
        let msg = "foo bar baz";
        let t = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            let t2 = std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut b = vec![0; msg.len() * N];
                let mut got = 0;
                while got < b.len() {
                    match s.read(&mut b[got..]) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(_) => break,
                    }
                }
                got
            });
            for _ in 0..N {
                s.write_all(msg.as_bytes()).unwrap();
            }
            t2
        });
        let (mut a, _) = srv.accept().await.unwrap();
        let (mut b, _) = srv.accept().await.unwrap();
        let n = netloop::io::copy(&mut a, &mut b).await.unwrap();
        assert!(a.is_on_ring() && b.is_on_ring());
        if settle {
            netloop::time::sleep(Duration::from_millis(50)).await;
        }
        let t2 = t.join().unwrap();
        let got = t2.join().unwrap();
        assert_eq!(n, 11 * 1024);
        assert_eq!(got, 11 * 1024, "the std reader of b got {got} of {} bytes", 11 * 1024);
    });
}

#[test]
fn copy_then_blocking_join_gets_every_byte_out() {
    echo_server_shape(false);
}

#[test]
fn copy_then_a_loop_turn_gets_every_byte_out() {
    echo_server_shape(true);
}

/// tokio: `writable().await` waits while `try_write` says WouldBlock.
#[test]
fn writable_waits_while_the_send_window_is_full() {
    let rt = ring_current_thread();
    let spins = rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = std::net::TcpStream::connect(addr).unwrap(); // never reads
        let (s, _) = listener.accept().await.unwrap();
        let chunk = vec![0u8; 64 * 1024];
        let mut spins = 0u64;
        let r = netloop::time::timeout(Duration::from_secs(3), async {
            loop {
                s.writable().await.unwrap();
                match s.try_write(&chunk) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        spins += 1;
                        if spins == 1_000_000 {
                            return;
                        }
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        })
        .await;
        eprintln!("on ring: {}, timed out: {}", s.is_on_ring(), r.is_err());
        spins
    });
    assert!(
        spins < 1000,
        "writable() was Ready {spins} times while try_write said WouldBlock"
    );
}

/// One stream whose reader is slow takes the loop's whole buffer pool; another stream
/// of the loop then never receives.
#[test]
fn an_unread_stream_does_not_starve_its_loops_other_streams() {
    let rt = ring_current_thread();
    rt.block_on(async {
        use std::io::Write;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let c1 = std::net::TcpStream::connect(addr).unwrap();
        let (mut s1, _) = listener.accept().await.unwrap();
        let mut c2 = std::net::TcpStream::connect(addr).unwrap();
        let (mut s2, _) = listener.accept().await.unwrap();
        let mut b = [0u8; 16];
        assert!(
            netloop::time::timeout(Duration::from_millis(50), s1.read(&mut b))
                .await
                .is_err()
        );
        assert!(
            netloop::time::timeout(Duration::from_millis(50), s2.read(&mut b))
                .await
                .is_err()
        );
        assert!(s1.is_on_ring() && s2.is_on_ring());
        let _w = std::thread::spawn(move || {
            let mut c1 = c1;
            c1.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
            let buf = vec![1u8; 1 << 20];
            for _ in 0..8 {
                if c1.write_all(&buf).is_err() {
                    break;
                }
            }
            std::thread::sleep(Duration::from_secs(6));
        });
        netloop::time::sleep(Duration::from_millis(500)).await;
        c2.write_all(b"ping").unwrap();
        let r = netloop::time::timeout(Duration::from_secs(3), s2.read(&mut b)).await;
        assert!(matches!(r, Ok(Ok(4))), "s2's read of 4 bytes: {r:?}");
    });
}

/// Bytes whose completion waited in the completion queue when the stream left the
/// ring (`ready`) are read by a later read.
#[test]
fn leaving_the_ring_keeps_bytes_already_received() {
    let rt = ring_current_thread();
    rt.block_on(async {
        use std::io::Write;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        let (mut s, _) = listener.accept().await.unwrap();
        let mut b = [0u8; 16];
        // The client never reads: fill the server's send side, so that registering
        // for readiness later reports no writable edge.
        let chunk = vec![b'A'; 64 * 1024];
        while let Ok(Ok(_)) = netloop::time::timeout(Duration::from_millis(300), s.write(&chunk)).await {}
        assert!(
            netloop::time::timeout(Duration::from_millis(50), s.read(&mut b))
                .await
                .is_err()
        );
        assert!(s.is_on_ring());
        // A read that waits, woken by the receive: the receive stays armed, no reader kept.
        let (_, n) = netloop::join!(async { c.write_all(b"x").unwrap() }, s.read(&mut b));
        assert_eq!(n.unwrap(), 1);
        c.write_all(b"hello").unwrap();
        // The loop does not select meanwhile: the receive's completion waits in the CQ.
        std::thread::sleep(Duration::from_millis(100));
        {
            use std::os::fd::AsRawFd;
            let mut p = [0u8; 16];
            let n = unsafe {
                libc::recv(
                    s.as_raw_fd(),
                    p.as_mut_ptr().cast(),
                    16,
                    libc::MSG_PEEK | libc::MSG_DONTWAIT,
                )
            };
            eprintln!("bytes still in the socket before leaving the ring: {n}");
        }
        let r = s.try_io(netloop::io::Interest::READABLE, || {
            Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
        });
        eprintln!("try_io: {r:?}, on ring: {}", s.is_on_ring());
        let t0 = std::time::Instant::now();
        let r = netloop::time::timeout(Duration::from_secs(2), s.read(&mut b)).await;
        eprintln!("read after leaving the ring: {r:?} after {:?}", t0.elapsed());
        assert!(matches!(r, Ok(Ok(5))), "read after leaving the ring: {r:?}");
        assert!(
            t0.elapsed() < Duration::from_secs(1),
            "the read was not woken by its bytes"
        );
    });
}

/// After `into_std` and a close, sends the ring still had for the stream go out on
/// whatever the descriptor number names next.
#[test]
fn into_std_never_sends_on_a_reused_descriptor_number() {
    use std::os::fd::AsRawFd;
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let c1 = std::net::TcpStream::connect(addr).unwrap();
            let (mut s1, _) = listener.accept().await.unwrap();
            let chunk = vec![b'A'; 64 * 1024];
            let mut total = 0;
            loop {
                match netloop::time::timeout(Duration::from_millis(300), s1.write(&chunk)).await {
                    Ok(Ok(n)) => total += n,
                    Err(_) => break,
                    Ok(Err(e)) => panic!("{e}"),
                }
            }
            assert!(s1.is_on_ring());
            let fd1 = s1.as_raw_fd();
            drop(s1.into_std().unwrap());
            let c2 = std::net::TcpStream::connect(addr).unwrap();
            let (mut s2, _) = listener.accept().await.unwrap();
            eprintln!("wrote {total}; fd1 {fd1}, c2 {}, s2 {}", c2.as_raw_fd(), s2.as_raw_fd());
            let drained = netloop::task::spawn_blocking(move || {
                use std::io::Read;
                let mut c1 = c1;
                c1.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
                let mut b = vec![0u8; 1 << 16];
                let mut n = 0;
                while let Ok(k) = c1.read(&mut b) {
                    if k == 0 {
                        break;
                    }
                    n += k;
                }
                n
            })
            .await
            .unwrap();
            netloop::time::sleep(Duration::from_millis(200)).await;
            let mut b = vec![0u8; 1 << 17];
            let at_s2 = match netloop::time::timeout(Duration::from_millis(300), s2.read(&mut b)).await {
                Ok(Ok(n)) => n,
                _ => 0,
            };
            let at_c2 = netloop::task::spawn_blocking(move || {
                use std::io::Read;
                let mut c2 = c2;
                c2.set_nonblocking(true).unwrap();
                let mut b = vec![0u8; 1 << 17];
                let mut n = 0;
                while let Ok(k) = c2.read(&mut b) {
                    if k == 0 {
                        break;
                    }
                    n += k;
                }
                n
            })
            .await
            .unwrap();
            eprintln!("c1 drained {drained}; bytes that reached s2: {at_s2}; reached c2: {at_c2}");
            assert_eq!((at_s2, at_c2), (0, 0), "connection 2 got connection 1's bytes");
        })
        .await
        .unwrap()
    });
}

/// A dropped stream whose peer never reads does not keep its descriptor: its sends get
/// a grace (60 s without progress), then they are cancelled and the socket closes with
/// a reset, so that the peer cannot take the bytes it got for all of them. Takes about
/// 61 s, so it is left out of `cargo test --workspace`; `.ci/run` runs it (`--ignored`).
#[test]
#[ignore = "takes 61 s (the grace): .ci/run runs it with --ignored"]
fn a_dropped_stream_whose_peer_never_reads_closes_after_its_grace() {
    use std::os::fd::AsRawFd;
    let Some(rt) = ring_runtime(1) else { return };
    // Descriptors of this process open on `inode`'s socket (other tests run beside).
    let open_on = |inode: &std::path::Path| {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target == inode)
            .count()
    };
    // Longer than `within`'s limit: the grace is 60 s.
    rt.block_on(async move {
        netloop::spawn(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut s, _) = listener.accept().await.unwrap();
            // Fill the kernel's buffers and the send window: a send stays in flight.
            let chunk = vec![1u8; 64 * 1024];
            while netloop::time::timeout(Duration::from_millis(300), s.write_all(&chunk))
                .await
                .is_ok()
            {}
            assert!(s.is_on_ring());
            let inode = std::fs::read_link(format!("/proc/self/fd/{}", s.as_raw_fd())).unwrap();
            assert_eq!(open_on(&inode), 2, "the stream's descriptor and the ring socket's own");
            drop(s);
            netloop::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(open_on(&inode), 1, "the stream's descriptor closes at once");
            let started = std::time::Instant::now();
            while open_on(&inode) > 0 {
                assert!(
                    started.elapsed() < Duration::from_secs(75),
                    "the ring socket's descriptor never closed"
                );
                netloop::time::sleep(Duration::from_millis(100)).await;
            }
            assert!(started.elapsed() > Duration::from_secs(55), "closed before its grace");
            // The reset has reached the peer, which read nothing.
            netloop::time::sleep(Duration::from_millis(100)).await;
            let err = client.take_error().unwrap().map(|e| e.kind());
            assert_eq!(err, Some(std::io::ErrorKind::ConnectionReset), "the peer sees a reset");
            drop(client);
        })
        .await
        .unwrap()
    });
}

// Unix sockets, connected streams and several waiters on the ring.

/// A socket path of its own for each test (removed first: a file left by an earlier
/// run would make `bind` fail).
fn socket_path(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("netloop-uring-{name}-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// A Unix listener accepted from on its own loop takes connections through the ring's
/// multishot accept, as a TCP listener does; several tasks may await `accept` at once,
/// each accepted stream is on the ring, and its peer's address is the one `accept`
/// gives (an unbound client: unnamed). A dropped listener's accept is cancelled and its
/// socket closed: a later connect is refused.
#[test]
fn a_unix_listener_on_its_loop_accepts_through_the_ring() {
    use netloop::net::{UnixListener, UnixStream};
    let Some(rt) = ring_runtime(1) else { return };
    let path = socket_path("listener");
    within(&rt, async move {
        netloop::spawn(async move {
            let listener = std::sync::Arc::new(UnixListener::bind(&path).unwrap());
            let acceptors: Vec<_> = (0..3)
                .map(|_| {
                    let listener = listener.clone();
                    netloop::spawn(async move {
                        let (mut s, peer) = listener.accept().await.unwrap();
                        assert!(s.is_on_ring(), "an accepted Unix stream on its loop uses the ring");
                        echo_one_byte(&mut s).await;
                        peer.is_unnamed()
                    })
                })
                .collect();
            netloop::task::yield_now().await;
            let mut clients = Vec::new();
            for i in 0..3u8 {
                let mut c = UnixStream::connect(&path).await.unwrap();
                byte_round_trip(&mut c, i).await;
                clients.push(c);
            }
            for a in acceptors {
                assert!(a.await.unwrap(), "an unbound client's address is unnamed");
            }
            assert!(listener.is_on_ring(), "accepted through the ring");
            // An accept armed and waiting when the listener goes.
            let waiting = {
                let listener = listener.clone();
                netloop::spawn(async move { listener.accept().await.map(drop) })
            };
            netloop::task::yield_now().await;
            waiting.abort();
            let _ = waiting.await;
            drop(listener);
            netloop::time::sleep(Duration::from_millis(50)).await;
            let refused = UnixStream::connect(&path).await.expect_err("nothing listens any more");
            assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
            std::fs::remove_file(&path).unwrap();
        })
        .await
        .unwrap()
    });
}

/// Streams accepted by a Unix listener on the ring: a round trip of many writes,
/// half-close both ways (EOF after the peer's shutdown, the other direction still
/// open), and the peer's reset reported.
#[test]
fn unix_streams_accepted_on_the_ring_round_trip_and_half_close() {
    use netloop::net::{UnixListener, UnixStream};
    let Some(rt) = ring_runtime(2) else { return };
    let path = socket_path("echo");
    within(&rt, async move {
        let listener = UnixListener::bind(&path).unwrap();
        let server = netloop::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let mut total = 0;
            loop {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                assert!(s.is_on_ring());
                total += n;
                s.write_all(&buf[..n]).await.unwrap();
            }
            // The client's write direction is shut; ours is still open.
            s.write_all(b"bye").await.unwrap();
            s.shutdown().await.unwrap();
            total
        });
        let c = UnixStream::connect(&path).await.unwrap();
        let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        let back = send_and_read_to_end(c, &payload, 1500).await;
        assert_eq!(&back[..payload.len()], &payload[..]);
        assert_eq!(&back[payload.len()..], b"bye");
        assert_eq!(server.await.unwrap(), payload.len());
        std::fs::remove_file(&path).unwrap();
    });
}

/// Whether the socket behind `fd` is in an epoll instance of this process (the
/// instances' `fdinfo` lists each watched file by descriptor number and inode).
fn watched_by_epoll(fd: &impl std::os::fd::AsRawFd) -> bool {
    use std::os::unix::fs::MetadataExt;
    let fd = fd.as_raw_fd();
    let ino = std::fs::metadata(format!("/proc/self/fd/{fd}")).unwrap().ino();
    let wanted = (fd.to_string(), format!("{ino:x}"));
    std::fs::read_dir("/proc/self/fd").unwrap().flatten().any(|entry| {
        let is_epoll = std::fs::read_link(entry.path()).is_ok_and(|l| l.to_string_lossy() == "anon_inode:[eventpoll]");
        let info = is_epoll
            .then(|| std::fs::read_to_string(format!("/proc/self/fdinfo/{}", entry.file_name().to_string_lossy())).ok())
            .flatten()
            .unwrap_or_default();
        info.lines().filter(|l| l.starts_with("tfd:")).any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let tfd = words.get(1).copied();
            let ino = words.iter().find_map(|w| w.strip_prefix("ino:"));
            (tfd, ino) == (Some(wanted.0.as_str()), Some(wanted.1.as_str()))
        })
    })
}

/// A `TcpStream::connect` stream used on its io_uring loop's thread leaves epoll, where
/// it waited for the handshake, and takes the completion path: not readable until the
/// peer writes, a round trip, `peer_addr`, half-close both ways, and what it wrote just
/// before being dropped still reaches the peer.
#[test]
fn connected_tcp_streams_take_the_completion_path() {
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let mut c = TcpStream::connect(addr).await.unwrap();
            let (mut s, peer) = listener.accept().await.unwrap();
            assert!(!watched_by_epoll(&c), "the connected stream left epoll");
            assert_eq!(c.peer_addr().unwrap(), addr);
            assert_eq!(c.local_addr().unwrap(), peer);
            let mut buf = [0u8; 16];
            assert_eq!(c.try_read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
            assert!(c.is_on_ring(), "a connected stream on an io_uring loop uses the ring");
            assert!(
                netloop::time::timeout(Duration::from_millis(50), c.readable())
                    .await
                    .is_err(),
                "nothing to read until the peer writes"
            );
            s.write_all(b"hello").await.unwrap();
            c.readable().await.unwrap();
            c.read_exact(&mut buf[..5]).await.unwrap();
            assert_eq!(&buf[..5], b"hello");
            netloop::join!(byte_round_trip(&mut s, 7), echo_one_byte(&mut c));
            // Half-close: the peer's write direction first, ours still open.
            s.shutdown().await.unwrap();
            assert_eq!(
                c.read(&mut buf).await.unwrap(),
                0,
                "end of stream after the peer's shutdown"
            );
            c.write_all(b"still open").await.unwrap();
            // Dropped right after a write: the bytes still go out, then end of stream.
            drop(c);
            let mut rest = Vec::new();
            s.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, b"still open");
        })
        .await
        .unwrap()
    });
}

/// A `UnixStream::connect` stream, and one of `UnixSocket::connect`, on their io_uring
/// loop's thread: out of epoll, on the ring, a round trip and end of stream.
#[test]
fn connected_unix_streams_take_the_completion_path() {
    use netloop::net::{UnixListener, UnixSocket, UnixStream};
    let Some(rt) = ring_runtime(1) else { return };
    let path = socket_path("connect");
    within(&rt, async move {
        netloop::spawn(async move {
            let listener = UnixListener::bind(&path).unwrap();
            let by_path = UnixStream::connect(&path).await.unwrap();
            let by_socket = UnixSocket::new_stream().unwrap().connect(&path).await.unwrap();
            for mut c in [by_path, by_socket] {
                let (mut s, _) = listener.accept().await.unwrap();
                assert!(!watched_by_epoll(&c), "the connected stream left epoll");
                assert_eq!(c.peer_addr().unwrap().as_pathname(), Some(path.as_path()));
                netloop::join!(byte_round_trip(&mut c, 1), echo_one_byte(&mut s));
                assert!(
                    c.is_on_ring(),
                    "a connected Unix stream on an io_uring loop uses the ring"
                );
                drop(s);
                let mut buf = [0u8; 4];
                assert_eq!(c.read(&mut buf).await.unwrap(), 0);
            }
            std::fs::remove_file(&path).unwrap();
        })
        .await
        .unwrap()
    });
}

/// A connect's errors are tokio's on an io_uring loop: nothing listening is
/// `ConnectionRefused` for TCP and for a Unix path.
#[test]
fn connect_errors_on_an_io_uring_loop() {
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let addr = {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                l.local_addr().unwrap()
            };
            let e = TcpStream::connect(addr).await.expect_err("nothing listens there");
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
            let path = socket_path("refused");
            drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
            let e = netloop::net::UnixStream::connect(&path)
                .await
                .expect_err("nothing listens there");
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
            std::fs::remove_file(&path).unwrap();
        })
        .await
        .unwrap()
    });
}

/// A stream connected off every loop (a multi-thread runtime's `block_on`) is placed at
/// its first use: used there it is registered for readiness again and works; moved to a
/// task first, it goes on that task's loop's ring.
#[test]
fn a_stream_connected_off_the_loops_is_placed_at_its_first_use() {
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = netloop::spawn(async move {
            for _ in 0..2 {
                let (mut s, _) = listener.accept().await.unwrap();
                netloop::spawn(async move { echo_one_byte(&mut s).await });
            }
        });
        let mut here = TcpStream::connect(addr).await.unwrap();
        byte_round_trip(&mut here, 3).await;
        assert!(!here.is_on_ring(), "used off every loop: readiness");
        assert!(watched_by_epoll(&here), "registered for readiness at its first use");
        let mut moved = TcpStream::connect(addr).await.unwrap();
        netloop::spawn(async move {
            byte_round_trip(&mut moved, 4).await;
            assert!(moved.is_on_ring(), "first used on an io_uring loop's thread");
        })
        .await
        .unwrap();
        server.await.unwrap();
    });
}

/// Several tasks awaiting `readable()`, then `writable()`, on one stream on the ring:
/// each is woken (tokio wakes every waiter), not only the last to poll.
#[test]
fn every_task_awaiting_readable_or_writable_on_the_ring_is_woken() {
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let s = std::sync::Arc::new(listener.accept().await.unwrap().0);
            let mut buf = [0u8; 8];
            assert_eq!(s.try_read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
            assert!(s.is_on_ring());
            let waiters = |write: bool| -> Vec<_> {
                (0..3)
                    .map(|_| {
                        let s = s.clone();
                        netloop::spawn(async move {
                            if write { s.writable().await } else { s.readable().await }.unwrap();
                        })
                    })
                    .collect()
            };
            let readers = waiters(false);
            netloop::task::yield_now().await;
            peer.write_all(b"x").await.unwrap();
            for r in readers {
                netloop::time::timeout(Duration::from_secs(5), r)
                    .await
                    .expect("every reader woken")
                    .unwrap();
            }
            assert_eq!(s.try_read(&mut buf).unwrap(), 1);
            // The send window full (the peer reads nothing yet).
            let chunk = vec![7u8; 16 * 1024];
            let mut written = 0;
            loop {
                match s.try_write(&chunk) {
                    Ok(n) => written += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
            let writers = waiters(true);
            netloop::task::yield_now().await;
            let mut got = vec![0u8; written];
            peer.read_exact(&mut got).await.unwrap();
            for w in writers {
                netloop::time::timeout(Duration::from_secs(5), w)
                    .await
                    .expect("every writer woken")
                    .unwrap();
            }
        })
        .await
        .unwrap()
    });
}

/// Writes on the ring keep tokio's write readiness: `writable()` stays ready until a
/// write finds no room (a write that fills the window exactly leaves it ready), and a
/// stream leaving the ring then (`ready`) is not taken as writable until its socket
/// says so. `shutdown()` does not wait for a peer that reads only afterwards: the peer
/// then gets every byte, then end of stream.
#[test]
fn write_readiness_and_shutdown_as_tokio_on_the_ring() {
    use futures::FutureExt;
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (mut s, _) = listener.accept().await.unwrap();
            let chunk = vec![5u8; 1000];
            let mut written = 0;
            loop {
                assert!(
                    s.writable().now_or_never().is_some(),
                    "writable until a write would block ({written} bytes written)"
                );
                match s.try_write(&chunk) {
                    Ok(n) => written += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
            assert!(s.is_on_ring());
            assert!(s.writable().now_or_never().is_none(), "not writable after WouldBlock");
            netloop::time::timeout(Duration::from_secs(5), s.shutdown())
                .await
                .expect("shutdown does not wait for the peer to read")
                .unwrap();
            let mut got = Vec::new();
            peer.read_to_end(&mut got).await.unwrap();
            assert_eq!(got.len(), written, "every byte, then end of stream");

            // A stream leaving the ring with its window full.
            let mut peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (s, _) = listener.accept().await.unwrap();
            let mut written = 0;
            while let Ok(n) = s.try_write(&chunk) {
                written += n;
            }
            assert!(s.is_on_ring());
            let ready = s.ready(netloop::io::Interest::WRITABLE);
            futures::pin_mut!(ready);
            assert!((&mut ready).now_or_never().is_none(), "not writable after WouldBlock");
            assert!(!s.is_on_ring(), "ready() takes the stream off the ring");
            let mut got = vec![0u8; written];
            peer.read_exact(&mut got).await.unwrap();
            let ready = netloop::time::timeout(Duration::from_secs(5), ready)
                .await
                .expect("writable once its socket says so")
                .unwrap();
            assert!(ready.is_writable());
        })
        .await
        .unwrap()
    });
}

/// Streams connected from the start, `from_std` (TCP and Unix) and `UnixStream::pair`,
/// are placed as connected ones: on their io_uring loop's thread they leave epoll and
/// take the completion path (not readable until the peer writes), and round trip.
#[test]
fn from_std_and_pair_streams_take_the_completion_path() {
    use futures::FutureExt;
    use netloop::net::UnixStream;
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let std_client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut s, _) = listener.accept().await.unwrap();
            let mut c = TcpStream::from_std(std_client).unwrap();
            assert!(!watched_by_epoll(&c), "a from_std stream left epoll");
            assert!(c.readable().now_or_never().is_none(), "nothing to read yet");
            assert!(
                c.is_on_ring(),
                "a from_std TCP stream on an io_uring loop uses the ring"
            );
            netloop::join!(byte_round_trip(&mut c, 8), echo_one_byte(&mut s));

            let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
            let (mut a, mut b) = (UnixStream::from_std(a).unwrap(), UnixStream::from_std(b).unwrap());
            netloop::join!(byte_round_trip(&mut a, 9), echo_one_byte(&mut b));
            assert!(a.is_on_ring() && b.is_on_ring(), "from_std Unix streams use the ring");

            let (mut a, mut b) = UnixStream::pair().unwrap();
            assert!(!watched_by_epoll(&a) && !watched_by_epoll(&b), "a pair leaves epoll");
            assert!(a.readable().now_or_never().is_none(), "nothing to read yet");
            netloop::join!(byte_round_trip(&mut a, 10), echo_one_byte(&mut b));
            assert!(a.is_on_ring() && b.is_on_ring(), "a pair uses the ring");
            drop(b);
            let mut buf = [0u8; 1];
            assert_eq!(a.read(&mut buf).await.unwrap(), 0);
        })
        .await
        .unwrap()
    });
}

// ---- review 2 (ring-coverage) ------------------------------------------------------

/// A `shutdown()` that finds unsent bytes, on the loop's thread, takes in the ring's
/// completions (`reap_now`): the loop's own poll of its epoll instance may be among
/// them, and the readiness it announced (here a datagram for a waiting UDP socket) must
/// still reach the selector.
#[test]
fn shutdown_with_unsent_bytes_keeps_epoll_events() {
    let rt = ring_current_thread();
    rt.block_on(async {
        netloop::spawn(async {
            let udp = netloop::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let udp_addr = udp.local_addr().unwrap();
            let recv = netloop::spawn(async move {
                let mut b = [0u8; 8];
                udp.recv(&mut b).await.unwrap()
            });
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut c = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (mut s, _) = listener.accept().await.unwrap();
            byte_round_trip_pair(&mut c, &mut s).await;
            assert!(c.is_on_ring());
            netloop::task::yield_now().await; // the UDP task waits on epoll now
            // The datagram makes epoll ready: the ring's poll of epoll posts its completion.
            let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            sender.send_to(b"ping", udp_addr).unwrap();
            // A write (a send queued), then shutdown: it finds the send unfinished.
            c.write_all(b"bye").await.unwrap();
            c.shutdown().await.unwrap();
            let got = netloop::time::timeout(Duration::from_secs(3), recv).await;
            assert!(got.is_ok(), "the datagram's readiness was lost (UDP recv never woken)");
            let mut rest = Vec::new();
            s.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, b"bye");
        })
        .await
        .unwrap()
    });
}

async fn byte_round_trip_pair(c: &mut TcpStream, s: &mut TcpStream) {
    netloop::join!(byte_round_trip(c, 1), echo_one_byte(s));
}

struct CountingWake;
impl std::task::Wake for CountingWake {
    fn wake(self: std::sync::Arc<Self>) {}
}

/// Polls `make()`'s future once with each of `n` distinct wakers, dropping it each time
/// (a `readable()` in a `timeout` or `select!` that lost, in short-lived tasks), and
/// returns how many of those wakers the socket still holds.
fn wakers_kept_after_dropped_futures<F: std::future::Future>(n: usize, mut make: impl FnMut() -> F) -> usize {
    let arcs: Vec<_> = (0..n).map(|_| std::sync::Arc::new(CountingWake)).collect();
    for a in &arcs {
        let w = std::task::Waker::from(a.clone());
        let mut cx = std::task::Context::from_waker(&w);
        let f = make();
        futures::pin_mut!(f);
        assert!(f.as_mut().poll(&mut cx).is_pending());
    }
    arcs.iter().map(|a| std::sync::Arc::strong_count(a) - 1).sum()
}

/// The most wakers a direction's shared waiter list keeps (`shared_waiters::MAX`).
const MAX_SHARED_WAITERS: usize = 64;

/// A dropped `readable()`/`writable()`/`accept()` future leaves its waker in the
/// direction's list (tokio's unlink themselves); the list is bounded, so an idle
/// long-lived stream polled by many short-lived waits does not hold every one of those
/// tasks.
#[test]
fn dropped_readiness_futures_leave_a_bounded_number_of_wakers_on_the_ring() {
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let _peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(s.try_read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
            assert!(s.is_on_ring());
            let readable = wakers_kept_after_dropped_futures(1000, || s.readable());
            // The send window full (the peer reads nothing).
            let chunk = vec![7u8; 16 * 1024];
            while s.try_write(&chunk).is_ok() {}
            let writable = wakers_kept_after_dropped_futures(1000, || s.writable());
            let path = socket_path("waiters");
            let ul = netloop::net::UnixListener::bind(&path).unwrap();
            let accept = wakers_kept_after_dropped_futures(1000, || ul.accept());
            assert!(ul.is_on_ring());
            std::fs::remove_file(&path).unwrap();
            for (what, kept) in [("readable", readable), ("writable", writable), ("accept", accept)] {
                assert!(
                    kept <= MAX_SHARED_WAITERS,
                    "{kept} wakers of dropped {what}() futures held"
                );
            }
        })
        .await
        .unwrap()
    });
}

/// A non-blocking connect still under way, wrapped by `from_std` (a pattern of
/// socket2-based connectors): `writable()` waits for the handshake, as tokio's, on
/// both drivers (the stream stays on readiness until it is connected).
#[test]
fn from_std_of_a_connecting_socket_is_not_writable_before_the_handshake() {
    use std::os::fd::FromRawFd;
    for driver in [IoDriver::Epoll, IoDriver::IoUring] {
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .io_driver(driver)
            .enable_all()
            .build()
            .unwrap();
        let res = within(&rt, async {
            netloop::spawn(async {
                // A listener with a full accept queue: a further SYN is dropped, the
                // connect stays in SYN_SENT (retransmitted after 1 s).
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                use std::os::fd::AsRawFd;
                assert_eq!(unsafe { libc::listen(l.as_raw_fd(), 0) }, 0);
                let addr = l.local_addr().unwrap();
                let _fill: Vec<_> = (0..1).map(|_| std::net::TcpStream::connect(addr)).collect();
                std::thread::sleep(Duration::from_millis(50));
                let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0) };
                let std::net::SocketAddr::V4(v4) = addr else {
                    unreachable!()
                };
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as _,
                    sin_port: v4.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from(*v4.ip()).to_be(),
                    },
                    sin_zero: [0; 8],
                };
                let r = unsafe {
                    libc::connect(
                        fd,
                        (&sin as *const libc::sockaddr_in).cast(),
                        std::mem::size_of_val(&sin) as _,
                    )
                };
                assert_eq!(r, -1);
                assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EINPROGRESS));
                let s = TcpStream::from_std(unsafe { std::net::TcpStream::from_raw_fd(fd) }).unwrap();
                let early = netloop::time::timeout(Duration::from_millis(300), s.writable())
                    .await
                    .is_ok();
                let connected = s.peer_addr().is_ok();
                (early, connected, s.is_on_ring())
            })
            .await
            .unwrap()
        });
        eprintln!(
            "{driver:?}: writable within 300ms={} connected={} on_ring={}",
            res.0, res.1, res.2
        );
        assert!(!res.0 || res.1, "{driver:?}: writable() before the handshake completed");
    }
}

/// A Unix listener whose multishot accept was armed on runtime A, moved to runtime B,
/// accepts there (A alive), and reports an error rather than hanging once A is gone.
#[test]
fn unix_listener_moved_to_another_runtime() {
    use netloop::net::{UnixListener, UnixStream};
    let Some(a) = ring_runtime(1) else { return };
    let b = ring_runtime(1).unwrap();
    let path = socket_path("moved");
    let listener = within(&a, {
        let path = path.clone();
        async move {
            netloop::spawn(async move {
                let l = UnixListener::bind(&path).unwrap();
                let _c = UnixStream::connect(&path).await.unwrap();
                l.accept().await.unwrap();
                assert!(l.is_on_ring());
                // Arm again and leave an accept waiting.
                {
                    let f = l.accept();
                    futures::pin_mut!(f);
                    assert!(futures::FutureExt::now_or_never(&mut f).is_none());
                }
                l
            })
            .await
            .unwrap()
        }
    });
    let listener = std::sync::Arc::new(listener);
    within(&b, {
        let (path, listener) = (path.clone(), listener.clone());
        async move {
            netloop::spawn(async move {
                let acc = {
                    let listener = listener.clone();
                    netloop::spawn(async move { listener.accept().await.map(drop) })
                };
                let _c = UnixStream::connect(&path).await.unwrap();
                netloop::time::timeout(Duration::from_secs(3), acc)
                    .await
                    .expect("accept on B while A lives")
                    .unwrap()
                    .unwrap();
            })
            .await
            .unwrap()
        }
    });
    drop(a);
    let r = within(&b, {
        let path = path.clone();
        async move {
            netloop::spawn(async move {
                let acc = netloop::spawn(async move { listener.accept().await.map(drop) });
                let _c = std::os::unix::net::UnixStream::connect(&path);
                netloop::time::timeout(Duration::from_secs(3), acc).await
            })
            .await
            .unwrap()
        }
    });
    let _ = std::fs::remove_file(&path);
    eprintln!("accept after its first runtime dropped: {r:?}");
    assert!(r.is_ok(), "accept hangs once the runtime whose ring armed it is gone");
}

/// The same on epoll (the readiness path's shared waiter list).
#[test]
fn dropped_readiness_futures_leave_a_bounded_number_of_wakers_on_epoll() {
    let rt = Builder::new_multi_thread()
        .worker_threads(1)
        .io_driver(IoDriver::Epoll)
        .enable_all()
        .build()
        .unwrap();
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let _peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(s.try_read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
            let readable = wakers_kept_after_dropped_futures(1000, || s.readable());
            let path = socket_path("waiters-epoll");
            let ul = netloop::net::UnixListener::bind(&path).unwrap();
            let accept = wakers_kept_after_dropped_futures(1000, || ul.accept());
            std::fs::remove_file(&path).unwrap();
            assert!(
                readable <= MAX_SHARED_WAITERS,
                "{readable} wakers of dropped readable() futures held"
            );
            assert!(
                accept <= MAX_SHARED_WAITERS,
                "{accept} wakers of dropped accept() futures held"
            );
        })
        .await
        .unwrap()
    });
}

/// Fills `s`'s send window while its peer reads nothing: returns the bytes accepted.
fn fill_window(s: &TcpStream) -> usize {
    let chunk = vec![0x5au8; 16 * 1024];
    let mut written = 0;
    loop {
        match s.try_write(&chunk) {
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return written,
            Err(e) => panic!("{e}"),
        }
    }
}

/// A std reader thread for `addr`'s accepted peer: every byte until end of stream (or
/// an error/timeout, reported).
fn std_reader(std_peer: std::net::TcpStream, delay: Duration) -> std::thread::JoinHandle<Result<usize, String>> {
    std::thread::spawn(move || {
        use std::io::Read;
        std::thread::sleep(delay);
        let mut s = std_peer;
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0;
        loop {
            match s.read(&mut buf) {
                Ok(0) => return Ok(total),
                Ok(n) => total += n,
                Err(e) => return Err(format!("after {total} bytes: {e}")),
            }
        }
    })
}

/// shutdown() with unsent bytes then drop; shutdown from another thread; shutdown then
/// the runtime's end: the peer gets every byte, then end of stream.
#[test]
fn fin_after_every_byte() {
    for case in ["drop", "other_thread", "runtime_end"] {
        let Some(rt) = ring_runtime(1) else { return };
        let (written, reader) = within(&rt, async move {
            netloop::spawn(async move {
                let std_l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let mut s = TcpStream::connect(std_l.local_addr().unwrap()).await.unwrap();
                let (peer, _) = std_l.accept().unwrap();
                let reader = std_reader(peer, Duration::from_millis(200));
                // More than the kernel's buffers hold: the last sends wait for the reader.
                let big = vec![0x11u8; 8 << 20];
                s.write_all(&big).await.unwrap();
                let written = big.len() + fill_window(&s);
                assert!(s.is_on_ring());
                match case {
                    "drop" => {
                        s.shutdown().await.unwrap();
                        drop(s);
                    }
                    "other_thread" => {
                        let s = std::thread::spawn(move || {
                            futures::executor::block_on(s.shutdown()).unwrap();
                            s
                        })
                        .join()
                        .unwrap();
                        netloop::time::sleep(Duration::from_millis(10)).await;
                        std::mem::forget(s); // kept open: the FIN must come from the shutdown
                    }
                    _ => {
                        s.shutdown().await.unwrap();
                        std::mem::forget(s);
                    }
                }
                (written, reader)
            })
            .await
            .unwrap()
        });
        drop(rt);
        let got = reader.join().unwrap();
        eprintln!("{case}: written {written}, peer got {got:?}");
        assert_eq!(got, Ok(written), "{case}");
    }
}

/// A stream that leaves the ring (`ready()`) while its sends are stuck behind a peer
/// that does not read yet, then shuts down: the FIN must still follow every accepted
/// byte (tokio: the kernel holds them and sends its FIN after).
#[test]
fn shutdown_after_leaving_the_ring_keeps_queued_bytes() {
    use futures::FutureExt;
    let Some(rt) = ring_runtime(1) else { return };
    let (written, reader) = within(&rt, async {
        netloop::spawn(async {
            let std_l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mut s = TcpStream::connect(std_l.local_addr().unwrap()).await.unwrap();
            let (peer, _) = std_l.accept().unwrap();
            let reader = std_reader(peer, Duration::from_millis(300));
            let written = fill_window(&s);
            assert!(s.is_on_ring());
            let _ = s.ready(netloop::io::Interest::READABLE).now_or_never();
            assert!(!s.is_on_ring());
            s.shutdown().await.unwrap();
            netloop::time::sleep(Duration::from_millis(1500)).await;
            (written, reader)
        })
        .await
        .unwrap()
    });
    let got = reader.join().unwrap();
    eprintln!("written {written}, peer got {got:?}");
    assert_eq!(got, Ok(written));
}

/// After leaving the ring (`ready()`), a direct write must not overtake bytes the ring
/// accepted and has not sent yet.
#[test]
fn writes_after_leaving_the_ring_keep_their_order() {
    use futures::FutureExt;
    let Some(rt) = ring_runtime(1) else { return };
    let got = within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (s, _) = listener.accept().await.unwrap();
            let written = fill_window(&s);
            assert!(s.is_on_ring());
            let _ = s.ready(netloop::io::Interest::READABLE).now_or_never();
            assert!(!s.is_on_ring());
            s.writable().await.unwrap();
            assert_eq!(s.try_write(b"TAIL").unwrap(), 4);
            let mut got = vec![0u8; written + 4];
            peer.read_exact(&mut got).await.unwrap();
            got
        })
        .await
        .unwrap()
    });
    let pos = got.windows(4).position(|w| w == b"TAIL");
    eprintln!("TAIL found at {pos:?} of {}", got.len() - 4);
    assert_eq!(
        pos,
        Some(got.len() - 4),
        "a direct write overtook the ring's queued bytes"
    );
}

/// As above, with the ring's sends stuck behind a peer that reads only later: the
/// socket becomes writable for epoll and for the ring's send at the same moment.
#[test]
fn writes_after_leaving_a_stuck_ring_keep_their_order() {
    use futures::FutureExt;
    let Some(rt) = ring_runtime(1) else { return };
    let (written, got) = within(&rt, async {
        netloop::spawn(async {
            let std_l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let s = TcpStream::connect(std_l.local_addr().unwrap()).await.unwrap();
            let (peer, _) = std_l.accept().unwrap();
            let reader = std::thread::spawn(move || {
                use std::io::Read;
                std::thread::sleep(Duration::from_millis(500));
                let mut peer = peer;
                peer.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
                let mut all = Vec::new();
                let _ = peer.read_to_end(&mut all);
                all
            });
            let chunk = vec![0x5au8; 16 * 1024];
            let mut written = 0;
            let start = std::time::Instant::now();
            while start.elapsed() < Duration::from_millis(200) {
                match s.try_write(&chunk) {
                    Ok(n) => written += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        netloop::time::sleep(Duration::from_millis(1)).await
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            assert!(s.is_on_ring());
            let _ = s.ready(netloop::io::Interest::READABLE).now_or_never();
            assert!(!s.is_on_ring());
            loop {
                s.writable().await.unwrap();
                match s.try_write(b"TAIL") {
                    Ok(n) => {
                        assert_eq!(n, 4);
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(e) => panic!("{e}"),
                }
            }
            netloop::time::sleep(Duration::from_millis(300)).await;
            drop(s);
            (written, reader.join().unwrap())
        })
        .await
        .unwrap()
    });
    let pos = got.windows(4).position(|w| w == b"TAIL");
    eprintln!("written {written}; peer got {} bytes; TAIL at {pos:?}", got.len());
    assert_eq!(
        (got.len(), pos),
        (written + 4, Some(written)),
        "bytes lost or overtaken"
    );
}

/// `writable()` after `shutdown()` is ready on the ring, as tokio's (the socket is
/// writable; a write then says EPIPE).
#[test]
fn writable_after_shutdown() {
    let Some(rt) = ring_runtime(1) else { return };
    let r = within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let _peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (mut s, _) = listener.accept().await.unwrap();
            s.write_all(b"x").await.unwrap();
            assert!(s.is_on_ring());
            s.shutdown().await.unwrap();
            s.writable().await.map_err(|e| e.to_string())
        })
        .await
        .unwrap()
    });
    assert_eq!(r, Ok(()));
}

/// A task awaiting `readable()` on the ring while another task takes the stream off the
/// ring (`ready()`, `try_io`, `async_io`) is woken, polls again by readiness, and sees
/// the bytes that arrive next.
#[test]
fn readable_waiters_survive_leaving_the_ring() {
    use futures::FutureExt;
    let Some(rt) = ring_runtime(1) else { return };
    within(&rt, async {
        netloop::spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let s = std::sync::Arc::new(listener.accept().await.unwrap().0);
            let mut buf = [0u8; 8];
            assert_eq!(s.try_read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
            assert!(s.is_on_ring());
            let waiter = {
                let s = s.clone();
                netloop::spawn(async move { s.readable().await.unwrap() })
            };
            netloop::task::yield_now().await; // the waiter waits on the ring
            let _ = s.ready(netloop::io::Interest::WRITABLE).now_or_never();
            assert!(!s.is_on_ring());
            peer.write_all(b"hello").await.unwrap();
            netloop::time::timeout(Duration::from_secs(3), waiter)
                .await
                .expect("the readable() waiter was never woken after the stream left the ring")
                .unwrap();
        })
        .await
        .unwrap()
    });
}

/// The same on epoll: `writable()` after `shutdown()` is ready, as tokio's.
#[test]
fn writable_after_shutdown_on_epoll() {
    let rt = Builder::new_multi_thread()
        .worker_threads(1)
        .io_driver(IoDriver::Epoll)
        .enable_all()
        .build()
        .unwrap();
    let writable = within(&rt, async move {
        netloop::spawn(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let _peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (mut s, _) = listener.accept().await.unwrap();
            s.write_all(b"x").await.unwrap();
            s.shutdown().await.unwrap();
            s.writable().await.map_err(|e| e.to_string())
        })
        .await
        .unwrap()
    });
    assert_eq!(writable, Ok(()));
}

// UDP sockets on the ring.

/// Runs `f` as a task of the runtime's loop: a socket first used there goes on the ring.
fn on_the_loop<F>(rt: &Runtime, f: F) -> F::Output
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    within(rt, async { netloop::spawn(f).await.unwrap() })
}

async fn udp_socket() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").await.unwrap()
}

/// Arms `socket`'s receive on the ring (a `try_recv` that finds nothing does) and lets
/// the loop submit it, so that what is sent next arrives through a `recvmsg`.
async fn arm_receive(socket: &UdpSocket) {
    let mut none = [0u8; 1];
    assert_eq!(
        socket.try_recv(&mut none).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing to receive yet"
    );
    netloop::time::sleep(Duration::from_millis(20)).await;
}

/// A UDP socket bound and used on its io_uring loop's thread leaves epoll and is on the
/// ring: datagrams round trip with their senders, received directly (sent before the
/// receive) and through the ring's `recvmsg` (sent after it was armed). `into_std`
/// leaves the ring. A socket first used off the loops stays on readiness and works.
#[test]
fn udp_sockets_on_an_io_uring_loop_use_the_ring() {
    let Some(rt) = ring_runtime(1) else { return };
    on_the_loop(&rt, async {
        let (a, b) = (udp_socket().await, udp_socket().await);
        let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        assert!(!watched_by_epoll(&a), "a socket bound on an io_uring loop left epoll");
        a.send_to(b"ping", b_addr).await.unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(b.recv_from(&mut buf).await.unwrap(), (4, a_addr));
        assert_eq!(&buf[..4], b"ping");
        assert!(
            a.is_on_ring() && b.is_on_ring(),
            "UDP sockets on an io_uring loop use the ring"
        );

        arm_receive(&a).await;
        b.send_to(b"pong", a_addr).await.unwrap();
        assert_eq!(a.recv_from(&mut buf).await.unwrap(), (4, b_addr));
        assert_eq!(&buf[..4], b"pong");

        if let Ok(v6) = UdpSocket::bind("[::1]:0").await {
            let v6_addr = v6.local_addr().unwrap();
            let peer = UdpSocket::bind("[::1]:0").await.unwrap();
            arm_receive(&v6).await;
            peer.send_to(b"six", v6_addr).await.unwrap();
            assert_eq!(v6.recv_from(&mut buf).await.unwrap(), (3, peer.local_addr().unwrap()));
            assert!(v6.is_on_ring());
        }

        let std_b = b.into_std().unwrap();
        std_b.set_nonblocking(false).unwrap();
        std_b.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        a.send_to(b"std", b_addr).await.unwrap();
        assert_eq!(std_b.recv_from(&mut buf).unwrap(), (3, a_addr));
    });
    within(&rt, async {
        let (c, d) = (udp_socket().await, udp_socket().await);
        c.send_to(b"off", d.local_addr().unwrap()).await.unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(d.recv(&mut buf).await.unwrap(), 3);
        assert!(
            !c.is_on_ring() && !d.is_on_ring(),
            "first used off the loops: readiness"
        );
    });
}

/// A datagram larger than the buffer is cut to fit and the rest discarded (the next
/// receive gets the next datagram), whether it was received directly or through the
/// ring; a peek cuts it too and leaves it whole for the receive.
#[test]
fn a_udp_datagram_bigger_than_the_buffer_is_truncated() {
    let Some(rt) = ring_runtime(1) else { return };
    on_the_loop(&rt, async {
        let (a, b) = (udp_socket().await, udp_socket().await);
        let b_addr = b.local_addr().unwrap();
        let big: Vec<u8> = (0..100u8).collect();
        for armed in [false, true] {
            if armed {
                arm_receive(&b).await;
            }
            a.send_to(&big, b_addr).await.unwrap();
            a.send_to(b"end", b_addr).await.unwrap();
            let mut small = [0u8; 4];
            assert_eq!(b.peek(&mut small).await.unwrap(), 4);
            assert_eq!(small, [0, 1, 2, 3]);
            let mut eight = [0u8; 8];
            assert_eq!(b.recv(&mut eight).await.unwrap(), 8, "armed: {armed}");
            assert_eq!(&eight[..], &big[..8]);
            assert_eq!(b.recv(&mut eight).await.unwrap(), 3, "the rest was discarded");
            assert_eq!(&eight[..3], b"end");
        }
        assert!(b.is_on_ring());
    });
}

/// A 65,000-byte datagram is received whole into a large enough buffer, directly and
/// through the ring's `recvmsg`.
#[test]
fn a_65000_byte_udp_datagram_arrives_whole() {
    let Some(rt) = ring_runtime(1) else { return };
    on_the_loop(&rt, async {
        let (a, b) = (udp_socket().await, udp_socket().await);
        let b_addr = b.local_addr().unwrap();
        let big: Vec<u8> = (0..65_000u32).map(|i| (i % 251) as u8).collect();
        for armed in [false, true] {
            if armed {
                arm_receive(&b).await;
            }
            assert_eq!(a.send_to(&big, b_addr).await.unwrap(), 65_000);
            let mut buf = vec![0u8; 65_536];
            let (n, from) = b.recv_from(&mut buf).await.unwrap();
            assert_eq!((n, from), (65_000, a.local_addr().unwrap()), "armed: {armed}");
            assert!(buf[..n] == big[..], "armed: {armed}");
        }
        assert!(b.is_on_ring());
    });
}

/// `peek` leaves the datagram for `recv` (with its sender, `peek_sender` too); after
/// the receive nothing is left. A datagram the ring received stays the next receive's
/// when the socket leaves the ring for readiness (`ready`).
#[test]
fn udp_peek_leaves_the_datagram_for_recv() {
    use netloop::io::Interest;
    let Some(rt) = ring_runtime(1) else { return };
    on_the_loop(&rt, async {
        let (a, b) = (udp_socket().await, udp_socket().await);
        let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let mut buf = [0u8; 16];
        for armed in [false, true] {
            if armed {
                arm_receive(&b).await;
            }
            a.send_to(b"first", b_addr).await.unwrap();
            assert_eq!(b.peek_from(&mut buf).await.unwrap(), (5, a_addr));
            assert_eq!(b.peek_sender().await.unwrap(), a_addr);
            assert_eq!(b.try_peek_from(&mut buf).unwrap(), (5, a_addr));
            buf = [0; 16];
            assert_eq!(b.recv_from(&mut buf).await.unwrap(), (5, a_addr));
            assert_eq!(&buf[..5], b"first");
            assert_eq!(
                b.try_recv(&mut buf).unwrap_err().kind(),
                std::io::ErrorKind::WouldBlock,
                "armed: {armed}"
            );
        }
        assert!(b.is_on_ring());

        // Held by the ring (the receive armed ahead took it), then readiness asked for.
        netloop::time::sleep(Duration::from_millis(20)).await;
        a.send_to(b"held", b_addr).await.unwrap();
        b.readable().await.unwrap();
        let ready = b.ready(Interest::READABLE).await.unwrap();
        assert!(ready.is_readable());
        assert!(!b.is_on_ring(), "ready() leaves the ring");
        assert_eq!(b.recv_from(&mut buf).await.unwrap(), (4, a_addr));
        assert_eq!(&buf[..4], b"held");
        a.send_to(b"next", b_addr).await.unwrap();
        assert_eq!(b.recv_from(&mut buf).await.unwrap(), (4, a_addr));
        assert_eq!(&buf[..4], b"next");
    });
}

/// `try_recv` says `WouldBlock` while nothing is there and succeeds once `readable`
/// says so, whether `readable` waited on a poll (nothing armed) or on the armed receive.
#[test]
fn udp_try_recv_would_block_then_ok() {
    let Some(rt) = ring_runtime(1) else { return };
    on_the_loop(&rt, async {
        let (a, b) = (udp_socket().await, udp_socket().await);
        let b_addr = b.local_addr().unwrap();
        let mut buf = [0u8; 16];
        // Nothing armed: `readable` waits on a poll.
        let send_later = async {
            netloop::time::sleep(Duration::from_millis(20)).await;
            a.send_to(b"one", b_addr).await.unwrap();
        };
        let (readable, ()) = netloop::join!(b.readable(), send_later);
        readable.unwrap();
        assert_eq!(b.try_recv(&mut buf).unwrap(), 3);
        assert!(b.is_on_ring());
        // This WouldBlock arms the receive: `readable` waits on it.
        assert_eq!(b.try_recv(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
        let send_later = async {
            netloop::time::sleep(Duration::from_millis(20)).await;
            a.send_to(b"two!", b_addr).await.unwrap();
        };
        let (readable, ()) = netloop::join!(b.readable(), send_later);
        readable.unwrap();
        assert_eq!(b.try_recv(&mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"two!");
        assert_eq!(b.try_recv(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
    });
}

/// Connected sockets `send` and `recv`; a connected socket whose peer is gone gets the
/// ICMP error as `ConnectionRefused` from `recv`, received directly or by the ring's
/// armed `recvmsg`.
#[test]
fn connected_udp_sockets_and_connection_refused() {
    let Some(rt) = ring_runtime(1) else { return };
    on_the_loop(&rt, async {
        let (a, b) = (udp_socket().await, udp_socket().await);
        a.connect(b.local_addr().unwrap()).await.unwrap();
        b.connect(a.local_addr().unwrap()).await.unwrap();
        let mut buf = [0u8; 16];
        for round in 0..3u8 {
            a.send(&[round; 3]).await.unwrap();
            assert_eq!(b.recv(&mut buf).await.unwrap(), 3);
            assert_eq!(buf[..3], [round; 3]);
            b.send(&[round; 5]).await.unwrap();
            assert_eq!(a.recv(&mut buf).await.unwrap(), 5);
        }
        assert!(a.is_on_ring() && b.is_on_ring());

        for armed in [false, true] {
            let gone = udp_socket().await;
            let gone_addr = gone.local_addr().unwrap();
            drop(gone);
            let c = udp_socket().await;
            c.connect(gone_addr).await.unwrap();
            if armed {
                arm_receive(&c).await;
            }
            c.send(b"anyone?").await.unwrap();
            let err = c.recv(&mut buf).await.unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "armed: {armed}");
            assert!(c.is_on_ring());
        }
    });
}

/// Dropping a socket with a receive armed cancels it at once on the loop's thread: its
/// port is free when the drop returns, and a new socket bound to it works.
#[test]
fn a_dropped_udp_socket_with_a_receive_armed_frees_its_port() {
    let Some(rt) = ring_runtime(1) else { return };
    on_the_loop(&rt, async {
        let a = udp_socket().await;
        for _ in 0..50 {
            let b = udp_socket().await;
            let b_addr = b.local_addr().unwrap();
            arm_receive(&b).await;
            assert!(b.is_on_ring());
            drop(b);
            let again = UdpSocket::bind(b_addr)
                .await
                .expect("the port is free once the socket is dropped");
            a.send_to(b"again", b_addr).await.unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(again.recv(&mut buf).await.unwrap(), 5);
        }
    });
}

/// Many datagrams sent while the receiver waits (a receive armed) all arrive, whole
/// and in order, when they fit in the socket's buffer.
#[test]
fn many_queued_udp_datagrams_are_all_received() {
    let Some(rt) = ring_runtime(1) else { return };
    on_the_loop(&rt, async {
        let (a, b) = (udp_socket().await, udp_socket().await);
        let b_addr = b.local_addr().unwrap();
        for burst in 0..3u32 {
            if burst > 0 {
                arm_receive(&b).await;
            }
            for i in 0..64u32 {
                let mut d = vec![(i % 256) as u8; 512];
                d[..4].copy_from_slice(&(burst * 64 + i).to_be_bytes());
                a.send_to(&d, b_addr).await.unwrap();
            }
            let mut buf = [0u8; 1024];
            for i in 0..64u32 {
                let n = b.recv(&mut buf).await.unwrap();
                assert_eq!(n, 512);
                assert_eq!(u32::from_be_bytes(buf[..4].try_into().unwrap()), burst * 64 + i);
                assert!(buf[4..n].iter().all(|&x| x == (i % 256) as u8));
            }
        }
        assert!(b.is_on_ring());
    });
}

/// Shutting the runtime down while a task awaits `recv_from` on the ring: the receive
/// is cancelled, nothing hangs, and the socket's port is free afterwards.
#[test]
fn runtime_shutdown_with_a_udp_receive_armed() {
    let Some(rt) = ring_runtime(1) else { return };
    let addr = on_the_loop(&rt, async {
        let socket = udp_socket().await;
        let addr = socket.local_addr().unwrap();
        netloop::spawn(async move {
            let mut buf = [0u8; 64];
            while socket.recv_from(&mut buf).await.is_ok() {}
        });
        netloop::time::sleep(Duration::from_millis(20)).await;
        addr
    });
    let started = std::time::Instant::now();
    drop(rt);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "shutdown waited {:?}",
        started.elapsed()
    );
    std::net::UdpSocket::bind(addr).expect("the port is free after the runtime's shutdown");
}

/// A read on the ring that does not wait spends the task's cooperative budget, as
/// tokio's does: a task reading byte by byte from a full receive queue yields to the
/// loop's other tasks long before it has read everything. Both ways a read finds
/// bytes: in the ring's buffers (the receive was armed before they came), and read from
/// the socket at once (no receive armed yet).
#[test]
fn reads_that_find_data_spend_the_budget() {
    let Some(rt) = ring_runtime(1) else { return };
    for armed in [true, false] {
        let (yielded, on_ring) = within(&rt, read_byte_by_byte(armed));
        assert!(on_ring, "the accepted stream reads on the ring");
        assert!(yielded, "the reader yielded to the loop's other task (armed: {armed})");
    }
}

/// `poll_read_ready` on the ring spends budget once ready, as on readiness: a task
/// that polls it in a loop while bytes wait yields to the loop's other tasks.
#[test]
fn read_readiness_spends_the_budget() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let Some(rt) = ring_runtime(1) else { return };
    let (yielded, on_ring) = within(&rt, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            use std::io::Write;
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.write_all(&[0u8; 2]).unwrap();
            c
        });
        let server = netloop::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            s.readable().await.unwrap();
            let mut b = [0u8; 1];
            s.try_read(&mut b).unwrap();
            let ticked = Arc::new(AtomicBool::new(false));
            let t = ticked.clone();
            let ticker = netloop::spawn(async move { t.store(true, SeqCst) });
            let mut before_end = false;
            for _ in 0..1_000 {
                std::future::poll_fn(|cx| s.poll_read_ready(cx)).await.unwrap();
                before_end |= ticked.load(SeqCst);
            }
            ticker.await.unwrap();
            (before_end, s.is_on_ring())
        });
        let out = server.await.unwrap();
        drop(client.join().unwrap());
        out
    });
    assert!(on_ring, "the accepted stream is on the ring");
    assert!(yielded, "the task yielded to the loop's other task");
}

/// An accept on the ring that finds a connection waiting spends budget, as on
/// readiness: a task accepting a backlog of connections yields to the loop's other
/// tasks before it has taken them all.
#[test]
fn accepts_that_find_connections_spend_the_budget() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let Some(rt) = ring_runtime(1) else { return };
    let (yielded, on_ring) = within(&rt, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let client = std::thread::spawn(move || {
            let first = std::net::TcpStream::connect(addr).unwrap();
            go_rx.recv().unwrap();
            let mut rest: Vec<_> = (0..299).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
            rest.push(first);
            rest
        });
        let server = netloop::spawn(async move {
            // The first accept arms the ring's accept; the rest queue behind it.
            drop(listener.accept().await.unwrap());
            let on_ring = listener.is_on_ring();
            go_tx.send(()).unwrap();
            netloop::time::sleep(Duration::from_millis(200)).await;
            let ticked = Arc::new(AtomicBool::new(false));
            let t = ticked.clone();
            let ticker = netloop::spawn(async move { t.store(true, SeqCst) });
            let mut before_end = false;
            for _ in 0..299 {
                drop(listener.accept().await.unwrap());
                before_end |= ticked.load(SeqCst);
            }
            ticker.await.unwrap();
            (before_end, on_ring)
        });
        let out = server.await.unwrap();
        drop(client.join().unwrap());
        out
    });
    assert!(on_ring, "the listener accepts on the ring");
    assert!(yielded, "the task yielded to the loop's other task");
}

/// Reads 4,000 bytes one at a time from a client that sent them at once (after a
/// pause if `armed`, so that the first read arms the ring's receive and the rest lands
/// in its buffers); true if a task spawned before the reads ran before they ended.
async fn read_byte_by_byte(armed: bool) -> (bool, bool) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let client = std::thread::spawn(move || {
        use std::io::Write;
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        if armed {
            std::thread::sleep(Duration::from_millis(50));
        }
        c.write_all(&[0u8; 4_001]).unwrap();
        c
    });
    let server = netloop::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        let on_ring = s.is_on_ring();
        // The rest has arrived by then.
        netloop::time::sleep(Duration::from_millis(100)).await;
        let ticked = Arc::new(AtomicBool::new(false));
        let t = ticked.clone();
        let ticker = netloop::spawn(async move { t.store(true, SeqCst) });
        let mut before_end = false;
        for _ in 0..4_000 {
            s.read_exact(&mut b).await.unwrap();
            before_end |= ticked.load(SeqCst);
        }
        ticker.await.unwrap();
        (before_end, on_ring)
    });
    let out = server.await.unwrap();
    drop(client.join().unwrap());
    out
}

// ---- audit: the ring against epoll/tokio -------------------------------------------
//
// Each scenario runs as a task on the loop of a one-worker runtime, once on epoll and
// once on io_uring, and returns what it observed and whether its stream (or listener)
// was on the ring; the test asserts the ring's observation is epoll's (tokio's).

/// A one-worker runtime, on io_uring if `ring` else on epoll; `None` if io_uring is
/// refused by this kernel.
fn audit_runtime(ring: bool) -> Option<Runtime> {
    if ring {
        return ring_runtime(1);
    }
    Some(
        Builder::new_multi_thread()
            .worker_threads(1)
            .io_driver(IoDriver::Epoll)
            .enable_all()
            .build()
            .unwrap(),
    )
}

/// Runs `scenario` on an epoll runtime and on an io_uring one (each a task of the
/// runtime's loop) and returns (epoll's observation, the ring's); checks that the
/// scenario's socket was on the ring only on the io_uring runtime.
fn on_epoll_and_ring<T, Fut>(scenario: fn() -> Fut) -> Option<(T, T)>
where
    Fut: std::future::Future<Output = (T, bool)> + Send + 'static,
    T: Send + std::fmt::Debug + 'static,
{
    let mut out = Vec::new();
    for ring in [false, true] {
        let rt = audit_runtime(ring)?;
        let (seen, on_ring) = within(&rt, async move { netloop::spawn(scenario()).await.unwrap() });
        assert_eq!(
            on_ring, ring,
            "the socket is on the ring exactly on the io_uring runtime"
        );
        eprintln!("{}: {seen:?}", if ring { "io_uring" } else { "epoll" });
        out.push(seen);
    }
    let ring = out.pop().unwrap();
    let epoll = out.pop().unwrap();
    Some((epoll, ring))
}

/// A listener, a std client connected to it, and the accepted stream, whose receive is
/// armed on the ring (a read that found nothing): what the client sends next is taken
/// in by the ring's multishot receive.
async fn accepted_with_receive_armed() -> (TcpListener, std::net::TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (s, _) = listener.accept().await.unwrap();
    let mut b = [0u8; 1];
    assert_eq!(s.try_read(&mut b).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
    (listener, client, s)
}

/// One `recv(2)` on `fd` that does not wait: what a `try_io`/`async_io` closure runs.
fn raw_recv(fd: std::os::fd::RawFd, buf: &mut [u8]) -> std::io::Result<usize> {
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// `peek` after the stream left the ring (`ready()`): tokio returns the bytes that are
/// there; on the ring, bytes its receive had already taken are skipped (`peek` goes to
/// the socket by readiness), so `peek` waits for bytes that never come.
#[test]
fn peek_after_leaving_the_ring_sees_the_bytes_already_received() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        use std::io::Write;
        let (_l, mut client, s) = accepted_with_receive_armed().await;
        let on_ring = s.is_on_ring();
        client.write_all(b"hello").unwrap();
        s.readable().await.unwrap();
        s.ready(netloop::io::Interest::READABLE).await.unwrap();
        let mut b = [0u8; 16];
        let peeked = match netloop::time::timeout(Duration::from_secs(2), s.peek(&mut b)).await {
            Ok(Ok(n)) => String::from_utf8_lossy(&b[..n]).into_owned(),
            Ok(Err(e)) => format!("error: {e}"),
            Err(_) => "peek still waiting after 2 s".to_owned(),
        };
        (peeked, on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, "hello");
    assert_eq!(ring, epoll);
}

/// A custom read through `async_io` (tokio's way to run `recv(2)` yourself), on a
/// stream whose earlier reads went through the ring: tokio's closure reads the bytes
/// in order; on the ring, the bytes its receive had already taken are skipped and the
/// closure reads what the peer sends after them.
///
/// A limit of the ring, not to be fixed in the runtime: bytes the multishot receive
/// took from the socket cannot be given back to the kernel, and the closure reads the
/// socket itself, past the stream. The stream's own reads and peeks take them first
/// (`reads_after_leaving_the_ring_keep_...`, `peek_after_leaving_the_ring_...`);
/// docs/io-uring.md ("Differences you can observe") says so for streams as for UDP.
#[test]
#[ignore = "a limit of the ring: bytes its receive took cannot go back to the kernel for a raw read (docs/io-uring.md)"]
fn async_io_reads_after_leaving_the_ring_keep_the_byte_order() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let (_l, mut client, s) = accepted_with_receive_armed().await;
        let on_ring = s.is_on_ring();
        client.write_all(b"first").unwrap();
        s.readable().await.unwrap();
        // The peer goes on later (whatever the closure reads first must be "first").
        let later = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            client.write_all(b"second").unwrap();
            client
        });
        let fd = s.as_raw_fd();
        let mut b = [0u8; 16];
        let got = netloop::time::timeout(
            Duration::from_secs(5),
            s.async_io(netloop::io::Interest::READABLE, || raw_recv(fd, &mut b)),
        )
        .await;
        let got = match got {
            Ok(Ok(n)) => String::from_utf8_lossy(&b[..n]).into_owned(),
            other => format!("{other:?}"),
        };
        drop(later.join().unwrap());
        (got, on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, "first");
    assert_eq!(ring, epoll);
}

/// Dropping a stream with received bytes nobody read: tokio's close finds them in the
/// kernel's receive queue and resets the connection (the peer reads `ConnectionReset`);
/// on the ring the multishot receive has already moved them into its buffers, so the
/// close is a clean FIN and the peer reads end of stream.
#[test]
fn dropping_a_stream_with_unread_bytes_resets_the_connection() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        use std::io::{Read, Write};
        let (_l, mut client, s) = accepted_with_receive_armed().await;
        let on_ring = s.is_on_ring();
        client.write_all(b"never read").unwrap();
        s.readable().await.unwrap();
        drop(s);
        let seen = netloop::task::spawn_blocking(move || {
            client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut b = [0u8; 16];
            match client.read(&mut b) {
                Ok(0) => "end of stream".to_owned(),
                Ok(n) => format!("{n} bytes"),
                Err(e) => format!("{:?}", e.kind()),
            }
        })
        .await
        .unwrap();
        (seen, on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, "ConnectionReset");
    assert_eq!(ring, epoll);
}

/// `ready()` once the peer has shut its write direction: tokio's `Ready` says
/// `is_read_closed()` (EPOLLRDHUP); a stream leaving the ring starts from readiness
/// assumed from the ring's state, which never includes READ_CLOSED.
#[test]
fn ready_reports_read_closed_after_the_peer_shuts_down() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        let (_l, client, s) = accepted_with_receive_armed().await;
        let on_ring = s.is_on_ring();
        client.shutdown(std::net::Shutdown::Write).unwrap();
        s.readable().await.unwrap();
        let ready = s.ready(netloop::io::Interest::READABLE).await.unwrap();
        drop(client);
        ((ready.is_readable(), ready.is_read_closed()), on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, (true, true), "readable and read-closed");
    assert_eq!(ring, epoll);
}

/// `take_error()` after the peer reset the connection: tokio's socket still holds the
/// error (`SO_ERROR`) until something reads it; on the ring the multishot receive has
/// already consumed it.
#[test]
fn take_error_reports_the_peers_reset() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        use std::os::fd::AsRawFd;
        let (_l, client, s) = accepted_with_receive_armed().await;
        let on_ring = s.is_on_ring();
        // Close with SO_LINGER 0: a reset.
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        let r = unsafe {
            libc::setsockopt(
                client.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
        drop(client);
        s.readable().await.unwrap();
        let err = s.take_error().unwrap().map(|e| e.kind());
        (format!("{err:?}"), on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, "Some(ConnectionReset)");
    assert_eq!(ring, epoll);
}

/// `try_read_vectored` scatters what is there over every buffer (one `readv`); on the
/// ring it fills only the first non-empty buffer.
#[test]
fn try_read_vectored_fills_every_buffer() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        use std::io::Write;
        let (_l, mut client, s) = accepted_with_receive_armed().await;
        let on_ring = s.is_on_ring();
        client.write_all(b"hello world").unwrap();
        s.readable().await.unwrap();
        let (mut a, mut b) = ([0u8; 5], [0u8; 16]);
        let n = s
            .try_read_vectored(&mut [std::io::IoSliceMut::new(&mut a), std::io::IoSliceMut::new(&mut b)])
            .unwrap();
        (n, on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, 11);
    assert_eq!(ring, epoll);
}

/// How many descriptors of this process are connections accepted on `addr` (other
/// tests' sockets run beside: counted by their local and peer addresses).
fn accepted_descriptors(addr: std::net::SocketAddr) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&fd| {
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            let Ok(sock) = fd.try_clone_to_owned() else {
                return false;
            };
            let sock = std::net::TcpStream::from(sock);
            sock.local_addr().ok() == Some(addr) && sock.peer_addr().is_ok()
        })
        .count()
}

/// Connections the application has not accepted yet wait in the kernel's backlog
/// (bounded by it, and holding no descriptor of the process): a server that limits its
/// connections by not calling `accept` keeps its descriptors. The ring's multishot
/// accept takes connections as they come, each a descriptor of the process, but at most
/// 16 ahead of the application's accepts (and those the kernel took in the same turn):
/// the rest wait in the backlog. Here 50 clients connect one after the other, each once
/// the loop has run a turn since the one before, while the application accepts none:
/// the kernel takes connections while the loop's thread waits for a core, so pacing
/// them by wall time would let a loaded machine bring many in one turn.
#[test]
fn connections_not_yet_accepted_hold_few_descriptors() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // One accept: on the ring, it arms the multishot accept.
        let first = std::net::TcpStream::connect(addr).unwrap();
        let (s, _) = listener.accept().await.unwrap();
        let on_ring = listener.is_on_ring();
        let before = accepted_descriptors(addr);
        let handle = netloop::runtime::Handle::current();
        let clients = std::thread::spawn(move || {
            (0..50)
                .map(|_| {
                    let client = std::net::TcpStream::connect(addr).unwrap();
                    let (turned, turn) = std::sync::mpsc::channel();
                    handle.spawn(async move { turned.send(()).unwrap() });
                    turn.recv_timeout(Duration::from_secs(10)).expect("the loop ran a turn");
                    client
                })
                .collect::<Vec<_>>()
        });
        let clients = netloop::task::spawn_blocking(move || clients.join().unwrap())
            .await
            .unwrap();
        // Let the loop take in whatever it takes in.
        netloop::time::sleep(Duration::from_millis(300)).await;
        let held = accepted_descriptors(addr) - before;
        drop((first, s, clients, listener));
        (held, on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, 0);
    assert!(
        ring <= 24,
        "the ring took {ring} connections ahead (at most 16, and a turn's arrivals)"
    );
}

/// Closes `client` with a reset (`SO_LINGER` 0).
fn reset(client: std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let r = unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0);
    drop(client);
}

/// What a reader sees when the peer sends bytes and then resets: the bytes, then
/// `ConnectionReset`, then end of stream (equal on both drivers).
#[test]
fn reads_after_the_peers_reset() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        use std::io::Write;
        let (_l, mut client, mut s) = accepted_with_receive_armed().await;
        let on_ring = s.is_on_ring();
        client.write_all(b"data").unwrap();
        s.readable().await.unwrap();
        reset(client);
        netloop::time::sleep(Duration::from_millis(100)).await;
        let mut seen = Vec::new();
        let mut b = [0u8; 16];
        for _ in 0..4 {
            seen.push(match s.read(&mut b).await {
                Ok(n) => format!("Ok({n})"),
                Err(e) => format!("{:?}", e.kind()),
            });
        }
        (seen, on_ring)
    }) else {
        return;
    };
    assert_eq!(ring, epoll);
}

/// What a writer sees after the peer reset the connection: each write's result.
#[test]
fn writes_after_the_peers_reset() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        let (_l, client, mut s) = accepted_with_receive_armed().await;
        let on_ring = s.is_on_ring();
        reset(client);
        netloop::time::sleep(Duration::from_millis(100)).await;
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(match s.write(b"x").await {
                Ok(n) => format!("Ok({n})"),
                Err(e) => format!("{:?}", e.kind()),
            });
            netloop::task::yield_now().await;
        }
        seen.push(format!("flush {:?}", s.flush().await.map_err(|e| e.kind())));
        seen.push(format!("shutdown {:?}", s.shutdown().await.map_err(|e| e.kind())));
        (seen, on_ring)
    }) else {
        return;
    };
    assert_eq!(ring, epoll);
}

/// The same when the ring has not seen the reset (no receive armed: nothing was read):
/// the first write is accepted into the send window (the documented deferral: its send
/// fails after it returned), and the next write reports that send's error. From there
/// on the ring's writes fail as the kernel's do, every one of them, and the flush and
/// shutdown after them succeed as tokio's: the ring's results are epoll's, one write
/// later.
#[test]
fn writes_after_a_reset_the_ring_has_not_seen_fail_after_one() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut s, _) = listener.accept().await.unwrap();
        let on_ring = s.is_on_ring();
        reset(client);
        netloop::time::sleep(Duration::from_millis(100)).await;
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(match s.write(b"x").await {
                Ok(n) => format!("Ok({n})"),
                Err(e) => format!("{:?}", e.kind()),
            });
            netloop::time::sleep(Duration::from_millis(20)).await;
        }
        seen.push(format!("flush {:?}", s.flush().await.map_err(|e| e.kind())));
        seen.push(format!("shutdown {:?}", s.shutdown().await.map_err(|e| e.kind())));
        (seen, on_ring)
    }) else {
        return;
    };
    assert_eq!(
        epoll[..4],
        ["ConnectionReset", "BrokenPipe", "BrokenPipe", "BrokenPipe"]
    );
    assert_eq!(ring[0], "Ok(1)", "the deferred error");
    assert_eq!(ring[1..4], epoll[..3]);
    assert_eq!(ring[4..], epoll[4..]);
}

/// Writes to `s` until a write waits 300 ms (the peer reads nothing): the kernel's
/// buffers and, on the ring, the send window are full. Returns the bytes accepted.
async fn write_until_stuck(s: &mut TcpStream) -> usize {
    let chunk = vec![0x42u8; 64 * 1024];
    let mut written = 0;
    while let Ok(n) = netloop::time::timeout(Duration::from_millis(300), s.write(&chunk)).await {
        written += n.unwrap();
    }
    written
}

/// A server writes a response its client is slow to read (12 s), and drops the stream:
/// with tokio every byte a write accepted is the kernel's, which delivers it after the
/// close (then end of stream). On the ring, the bytes still in the send window when the
/// grace (10 s) ends are dropped and the socket closes cleanly: the client reads a
/// truncated response followed by an ordinary end of stream, with nothing to tell it
/// bytes are missing. Takes about 13 s.
#[test]
fn a_dropped_streams_accepted_bytes_all_reach_a_slow_peer() {
    let mut held = Vec::new();
    for ring in [false, true] {
        let Some(rt) = audit_runtime(ring) else { return };
        let (written, reader, on_ring) = within(&rt, async move {
            netloop::spawn(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
                let (mut s, _) = listener.accept().await.unwrap();
                let written = write_until_stuck(&mut s).await;
                let on_ring = s.is_on_ring();
                drop(s);
                (written, std_reader(client, Duration::from_secs(12)), on_ring)
            })
            .await
            .unwrap()
        });
        assert_eq!(on_ring, ring);
        // The runtime stays up meanwhile: its loop is what sends the ring's bytes.
        held.push((ring, rt, written, reader));
    }
    let mut outcomes = Vec::new();
    for (ring, rt, written, reader) in held {
        let got = reader.join().unwrap();
        eprintln!(
            "{}: written {written}, the peer got {got:?}",
            if ring { "io_uring" } else { "epoll" }
        );
        outcomes.push((ring, got == Ok(written)));
        drop(rt);
    }
    assert_eq!(
        outcomes,
        [(false, true), (true, true)],
        "(ring, every accepted byte then end of stream)"
    );
}

/// Writing to a stream whose runtime has shut down: tokio (and netloop's epoll) fail
/// the write. On the ring, a stream with nothing in flight when its loop ended accepts
/// the bytes into its window, finds the loop gone when it starts the send, drops them,
/// and reports success to the write and to the flush after it.
#[test]
fn writes_after_the_runtime_is_gone_fail() {
    let mut seen = Vec::new();
    for ring in [false, true] {
        let Some(rt) = audit_runtime(ring) else { return };
        let (mut s, client, on_ring) = within(&rt, async {
            netloop::spawn(async {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
                let (mut s, _) = listener.accept().await.unwrap();
                // A write whose send completes: nothing is left in flight.
                s.write_all(b"a").await.unwrap();
                s.flush().await.unwrap();
                let on_ring = s.is_on_ring();
                (s, client, on_ring)
            })
            .await
            .unwrap()
        });
        assert_eq!(on_ring, ring);
        drop(rt);
        let r = futures::executor::block_on(async {
            s.write_all(b"lost").await?;
            s.flush().await
        });
        drop(client);
        seen.push(format!("{:?}", r.map_err(|e| e.kind())));
    }
    eprintln!("epoll, io_uring: {seen:?}");
    assert!(seen[0].starts_with("Err"), "epoll fails the write: {}", seen[0]);
    assert_eq!(seen[1], seen[0]);
}

/// `set_zero_linger()` then drop, on a stream whose sends wait for a peer that reads
/// nothing (aborting a stuck connection): tokio's close resets the connection at once.
/// On the ring, the ring socket's own descriptor stays open through the release grace
/// (10 s) while it tries to send what it accepted, so no reset is sent meanwhile.
#[test]
fn a_zero_linger_drop_resets_at_once() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut s, _) = listener.accept().await.unwrap();
        write_until_stuck(&mut s).await;
        let on_ring = s.is_on_ring();
        s.set_zero_linger().unwrap();
        drop(s);
        // The client sees the reset (`SO_ERROR`) without reading; 3 s is far more
        // than a close takes, far less than the ring's grace.
        let started = std::time::Instant::now();
        let seen = loop {
            if let Some(e) = client.take_error().unwrap() {
                break format!("{:?}", e.kind());
            }
            if started.elapsed() > Duration::from_secs(3) {
                break "no reset after 3 s".to_owned();
            }
            netloop::time::sleep(Duration::from_millis(20)).await;
        };
        (seen, on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, "ConnectionReset");
    assert_eq!(ring, epoll);
}

/// `accept` while the process is out of descriptors, then once some are free: tokio
/// returns `EMFILE` at each accept while the table is full, then the connection.
/// Fills the process's descriptor table for a moment: run it alone.
#[test]
#[ignore = "fills the process's descriptor table: run alone (--ignored --test-threads=1)"]
fn accept_out_of_descriptors_then_again() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // A first connection accepted: on the ring, the multishot accept is armed.
        let _first = std::net::TcpStream::connect(addr).unwrap();
        drop(listener.accept().await.unwrap());
        let on_ring = listener.is_on_ring();
        // The next client's socket, made while descriptors remain.
        let client = unsafe { OwnedFd::from_raw_fd(libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0)) };
        // Every slot below the limit taken.
        let mut dups = Vec::new();
        loop {
            let fd = unsafe { libc::fcntl(listener.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
            if fd < 0 {
                break;
            }
            dups.push(unsafe { OwnedFd::from_raw_fd(fd) });
            assert!(dups.len() < 100_000, "no descriptor limit");
        }
        let std::net::SocketAddr::V4(v4) = addr else {
            unreachable!()
        };
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: v4.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(*v4.ip()).to_be(),
            },
            sin_zero: [0; 8],
        };
        let r = unsafe {
            libc::connect(
                client.as_raw_fd(),
                (&sin as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        let kind = |r: Result<std::io::Result<(TcpStream, std::net::SocketAddr)>, _>| match r {
            Ok(Ok(_)) => "Ok".to_owned(),
            Ok(Err(e)) => e.raw_os_error().map_or(format!("{e}"), |n| format!("os error {n}")),
            Err(_) => "still waiting".to_owned(),
        };
        let mut seen = Vec::new();
        for _ in 0..2 {
            seen.push(kind(
                netloop::time::timeout(Duration::from_secs(1), listener.accept()).await,
            ));
        }
        drop(dups);
        seen.push(kind(
            netloop::time::timeout(Duration::from_secs(2), listener.accept()).await,
        ));
        (seen, on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, ["os error 24", "os error 24", "Ok"]);
    assert_eq!(ring, epoll);
}

/// A stream read on the ring on loop A, moved to a task on loop B, which asks for
/// readiness (`ready()`): the stream leaves the ring from B's thread, where the cancel
/// of A's receive can only be queued for A. Until A runs it, A's receive still takes
/// bytes in while B's reads go to the socket directly; B's read finds no leftover (A
/// has not taken in the completions yet) and reads later bytes first. tokio: bytes in
/// order. Here A is kept busy while the peer sends numbered segments; the reader
/// checks their order (a race: when it does not occur the test passes).
#[test]
fn reads_after_leaving_the_ring_from_another_loop_keep_the_byte_order() {
    let Some(rt) = ring_runtime(2) else { return };
    let order = within(&rt, async {
        let here = || async { EventLoopHandle::current().unwrap() };
        let a = netloop::spawn(here()).await.unwrap();
        let mut b = None;
        for _ in 0..16 {
            let h = netloop::spawn(here()).await.unwrap();
            if h != a {
                b = Some(h);
                break;
            }
        }
        let b = b.expect("two loops");
        let (s, client) = a
            .spawn(async {
                let (_l, client, s) = accepted_with_receive_armed().await;
                assert!(s.is_on_ring());
                netloop::task::yield_now().await; // the receive is submitted
                (s, client)
            })
            .unwrap()
            .await;
        const SEGMENTS: u32 = 300;
        let go = std::sync::Arc::new(std::sync::Barrier::new(3));
        // Loop A busy (its thread asleep in between, so the ring's receive still runs).
        let blocker = {
            let go = go.clone();
            a.spawn(async move {
                go.wait();
                let until = std::time::Instant::now() + Duration::from_millis(400);
                while std::time::Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .unwrap()
        };
        let writer = {
            let go = go.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut client = client;
                client.set_nodelay(true).unwrap();
                go.wait();
                for i in 0..SEGMENTS {
                    client.write_all(&i.to_be_bytes()).unwrap();
                    std::thread::sleep(Duration::from_micros(500));
                }
                client
            })
        };
        let reader = b
            .spawn(async move {
                let mut s = s;
                go.wait();
                s.ready(netloop::io::Interest::READABLE).await.unwrap();
                assert!(!s.is_on_ring());
                let mut got = Vec::new();
                let mut buf = [0u8; 64];
                while got.len() < SEGMENTS as usize * 4 {
                    let n = s.read(&mut buf).await.unwrap();
                    assert!(n > 0, "end of stream after {} bytes", got.len());
                    got.extend_from_slice(&buf[..n]);
                }
                got.chunks(4)
                    .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
                    .collect::<Vec<_>>()
            })
            .unwrap();
        let order = reader.await;
        blocker.await;
        drop(writer.join().unwrap());
        order
    });
    let first_out_of_order = order.iter().enumerate().find(|&(i, &v)| v != i as u32);
    assert_eq!(first_out_of_order, None, "segments read out of order: {order:?}");
}

/// The same for a Unix stream: closing one with unread bytes makes the peer's read
/// fail with `ConnectionReset` (`unix_release_sock`); on the ring the peer reads end
/// of stream. A known difference (docs/io-uring.md): the ring's receive has taken the
/// bytes out of the socket, and a Unix socket has no linger to make its close reset
/// (`unix_release_sock` looks only at its own receive queue).
#[test]
#[ignore = "known difference on io_uring: a Unix socket's close cannot be made to reset (docs/io-uring.md)"]
fn dropping_a_unix_stream_with_unread_bytes_resets_the_peer() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        use std::io::{Read, Write};
        let (a, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let a = netloop::net::UnixStream::from_std(a).unwrap();
        let mut b = [0u8; 16];
        assert_eq!(a.try_read(&mut b).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
        let on_ring = a.is_on_ring();
        peer.write_all(b"never read").unwrap();
        a.readable().await.unwrap();
        drop(a);
        let seen = netloop::task::spawn_blocking(move || {
            peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            match peer.read(&mut b) {
                Ok(0) => "end of stream".to_owned(),
                Ok(n) => format!("{n} bytes"),
                Err(e) => format!("{:?}", e.kind()),
            }
        })
        .await
        .unwrap();
        (seen, on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, "ConnectionReset");
    assert_eq!(ring, epoll);
}

/// A new UDP socket's first receive waits for the driver even with a datagram queued,
/// on the ring as on readiness (tokio's readiness starts empty): `try_recv_from` says
/// `WouldBlock`, and the datagram comes with the next receive.
#[test]
fn a_new_udp_sockets_first_receive_waits_for_the_driver() {
    let Some((epoll, ring)) = on_epoll_and_ring(|| async {
        let rx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        tx.send_to(b"one", rx.local_addr().unwrap()).await.unwrap();
        let mut b = [0u8; 8];
        let first = match rx.try_recv_from(&mut b) {
            Ok((n, _)) => format!("Ok({n})"),
            Err(e) => format!("{:?}", e.kind()),
        };
        let (n, _) = rx.recv_from(&mut b).await.unwrap();
        let on_ring = rx.is_on_ring();
        ((first, n), on_ring)
    }) else {
        return;
    };
    assert_eq!(epoll, ("WouldBlock".to_owned(), 3));
    assert_eq!(ring, epoll);
}
