//! `TcpStream`'s and its halves' methods beyond plain reads and writes, as tokio has
//! them: `try_read_buf`, `poll_peek`, `async_io`, `take_error`, `set_zero_linger`,
//! `TCP_QUICKACK`, `TryFrom<std::net::TcpStream>`, the descriptor traits, and the
//! halves' readiness and vectored `try_*` methods.

use std::future::poll_fn;
use std::io::{ErrorKind, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake};

use netloop::io::{AsyncReadExt, AsyncWriteExt, Interest, ReadBuf};
use netloop::net::{TcpListener, TcpStream};
use netloop::time::timeout;
use netloop_tests::WAIT;

/// A connected (client, server) pair on loopback.
async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    let (server, _) = listener.accept().await.unwrap();
    (client, server)
}

#[netloop::test]
async fn try_read_buf_appends_to_a_vec() {
    let (mut client, server) = pair().await;
    client.write_all(b"hello").await.unwrap();
    let mut buf = b"> ".to_vec();
    timeout(WAIT, server.readable()).await.unwrap().unwrap();
    let n = loop {
        match server.try_read_buf(&mut buf) {
            Ok(n) => break n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => server.readable().await.unwrap(),
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(n, 5);
    assert_eq!(buf, b"> hello");
    // Nothing more: WouldBlock, and the buffer is untouched.
    assert_eq!(server.try_read_buf(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
    assert_eq!(buf, b"> hello");
}

#[netloop::test]
async fn poll_peek_leaves_the_data_queued() {
    let (mut client, mut server) = pair().await;
    client.write_all(b"peek").await.unwrap();
    let mut space = [0u8; 16];
    let mut rb = ReadBuf::new(&mut space);
    let n = timeout(WAIT, poll_fn(|cx| server.poll_peek(cx, &mut rb)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&rb.filled()[..n], b"peek");
    let mut got = [0u8; 4];
    server.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"peek", "peeked bytes are still there to read");
}

#[netloop::test]
async fn async_io_runs_a_custom_operation_until_it_does_not_block() {
    let (mut client, server) = pair().await;
    let fd = server.as_raw_fd();
    let recv = || {
        let mut buf = [0u8; 8];
        // SAFETY: `buf` is valid for 8 bytes and `fd` is the open socket of `server`.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(buf[..n as usize].to_vec())
        }
    };
    let reader = server.async_io(Interest::READABLE, recv);
    let writer = async {
        netloop::task::yield_now().await;
        client.write_all(b"custom").await.unwrap();
    };
    let (got, ()) = timeout(WAIT, async { netloop::join!(reader, writer) }).await.unwrap();
    assert_eq!(got.unwrap(), b"custom");
}

#[netloop::test]
async fn take_error_is_none_on_a_healthy_stream_and_fd_traits_agree() {
    let (client, _server) = pair().await;
    assert!(client.take_error().unwrap().is_none());
    assert_eq!(client.as_fd().as_raw_fd(), client.as_raw_fd());
    let same: &TcpStream = client.as_ref();
    assert_eq!(same.local_addr().unwrap(), client.local_addr().unwrap());
}

#[netloop::test]
async fn set_zero_linger_resets_the_connection_on_close() {
    let (client, mut server) = pair().await;
    client.set_zero_linger().unwrap();
    assert_eq!(client.linger().unwrap(), Some(std::time::Duration::ZERO));
    drop(client);
    let mut buf = [0u8; 4];
    let err = timeout(WAIT, server.read(&mut buf))
        .await
        .unwrap()
        .expect_err("a reset, not an orderly EOF");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
}

/// `TCP_QUICKACK` reads back what was set, both ways, on a connected and on an
/// accepted stream (the accepted one is not registered with a loop yet: the option
/// goes to its socket all the same).
#[cfg(target_os = "linux")]
#[netloop::test]
async fn quickack_reads_back_what_was_set() {
    let (client, server) = pair().await;
    for stream in [&client, &server] {
        stream.set_quickack(true).unwrap();
        assert!(stream.quickack().unwrap());
        stream.set_quickack(false).unwrap();
        assert!(!stream.quickack().unwrap());
    }
}

#[netloop::test]
async fn try_from_a_std_stream() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let std_stream = std::net::TcpStream::connect(addr).unwrap();
    let mut stream = TcpStream::try_from(std_stream).unwrap();
    let (mut server, _) = listener.accept().await.unwrap();
    stream.write_all(b"std").await.unwrap();
    let mut got = [0u8; 3];
    timeout(WAIT, server.read_exact(&mut got)).await.unwrap().unwrap();
    assert_eq!(&got, b"std");
}

#[netloop::test]
async fn borrowed_halves_have_readiness_and_vectored_try_methods() {
    let (mut client, mut server) = pair().await;
    let (mut rd, wr) = server.split();
    assert!(wr.ready(Interest::WRITABLE).await.unwrap().is_writable());
    wr.writable().await.unwrap();
    let n = wr
        .try_write_vectored(&[IoSlice::new(b"ab"), IoSlice::new(b"cd")])
        .unwrap();
    assert_eq!(n, 4);
    let mut back = [0u8; 4];
    client.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"abcd");

    client.write_all(b"xyz!").await.unwrap();
    let mut space = [0u8; 8];
    let mut rb = ReadBuf::new(&mut space);
    let n = timeout(WAIT, poll_fn(|cx| rd.poll_peek(cx, &mut rb)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 4);
    rd.readable().await.unwrap();
    assert!(rd.ready(Interest::READABLE).await.unwrap().is_readable());
    let (mut a, mut b) = ([0u8; 2], [0u8; 2]);
    let n = rd
        .try_read_vectored(&mut [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)])
        .unwrap();
    assert_eq!((n, &a, &b), (4, b"xy", b"z!"));
}

#[netloop::test]
async fn owned_halves_have_readiness_and_try_read_buf() {
    let (mut client, server) = pair().await;
    let (rd, wr) = server.into_split();
    wr.writable().await.unwrap();
    assert_eq!(wr.try_write_vectored(&[IoSlice::new(b"owned")]).unwrap(), 5);
    let mut back = [0u8; 5];
    client.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"owned");
    client.write_all(b"buf").await.unwrap();
    let mut buf = Vec::new();
    loop {
        timeout(WAIT, rd.readable()).await.unwrap().unwrap();
        match rd.try_read_buf(&mut buf) {
            Ok(n) => {
                assert_eq!(n, 3);
                break;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(buf, b"buf");
    assert_eq!(rd.peer_addr().unwrap(), wr.peer_addr().unwrap());
}

// ---------------------------------------------------------------------------------
// After the runtime is dropped
// ---------------------------------------------------------------------------------

/// A waker that records that it was woken.
struct Flag(AtomicBool);
impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}
/// A runtime of either flavour, with one loop.
fn rt(multi: bool) -> netloop::runtime::Runtime {
    if multi {
        netloop::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    } else {
        netloop::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }
}
/// A listener registered with `rt`'s loop from outside it (`enter` + `from_std`).
fn listener(rt: &netloop::runtime::Runtime) -> TcpListener {
    let _e = rt.enter();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    TcpListener::from_std(l).unwrap()
}
/// tokio's `tcp_doesnt_block`: a resource whose runtime is gone errors instead of
/// waiting for readiness that can never come.
#[test]
fn io_on_a_dropped_runtime_fails_at_once() {
    for multi in [false, true] {
        let rt = rt(multi);
        let l = listener(&rt);
        drop(rt);
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = flag.clone().into();
        let mut cx = Context::from_waker(&waker);
        let mut fut = Box::pin(async move { l.accept().await.is_err() });
        assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(true)), "multi={multi}");
    }
}
/// An accepted stream belongs to the runtime that accepted it, used or not: once that
/// runtime is dropped, what was already queued is still read, the `WouldBlock` after it
/// clears the readiness, and a read under a second runtime reports the first one's
/// shutdown (it neither registers there nor waits for an event that cannot come).
#[test]
fn an_accepted_stream_outliving_its_runtime_reports_the_shutdown() {
    netloop_tests::test_body(|| {
        let first = rt(false);
        let (mut stream, _client) = first.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            std::io::Write::write_all(&mut client, b"hello").unwrap();
            let (stream, _) = listener.accept().await.unwrap();
            (stream, client)
        });
        drop(first);
        // The bytes reach the accepted socket without any runtime: wait for them.
        let mut buf = [0u8; 5];
        let deadline = std::time::Instant::now() + WAIT;
        let queued = |stream: &TcpStream| {
            let mut peek = [0u8; 5];
            // SAFETY: the descriptor is open (borrowed from `stream`) and `peek` is a live,
            // writable buffer of the length given; MSG_PEEK leaves the bytes queued.
            unsafe {
                libc::recv(
                    stream.as_raw_fd(),
                    peek.as_mut_ptr().cast(),
                    peek.len(),
                    libc::MSG_PEEK | libc::MSG_DONTWAIT,
                )
            }
        };
        while queued(&stream) < 5 {
            assert!(std::time::Instant::now() < deadline, "the client's bytes never arrived");
            std::thread::yield_now();
        }
        assert_eq!(stream.try_read(&mut buf).unwrap(), 5);
        assert_eq!(stream.try_read(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
        rt(false).block_on(async {
            let err = timeout(WAIT, stream.read(&mut buf))
                .await
                .expect("the read reports the shutdown instead of waiting")
                .unwrap_err();
            assert!(netloop::runtime::is_rt_shutdown_err(&err), "{err}");
        });
    });
}

/// tokio's `drop_wakes`: a task waiting on a resource is woken when the runtime goes,
/// and its next poll fails.
#[test]
fn dropping_the_runtime_wakes_a_pending_accept_with_an_error() {
    for multi in [false, true] {
        let rt = rt(multi);
        let l = listener(&rt);
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = flag.clone().into();
        let mut cx = Context::from_waker(&waker);
        let mut fut = Box::pin(async move { l.accept().await.is_err() });
        assert!(fut.as_mut().poll(&mut cx).is_pending(), "multi={multi}");
        drop(rt);
        assert!(flag.0.load(Ordering::SeqCst), "woken multi={multi}");
        assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(true)), "multi={multi}");
    }
}

// ---------------------------------------------------------------------------------
// Several tasks awaiting one resource
// ---------------------------------------------------------------------------------

/// Fifty tasks await `accept` on one shared listener; fifty connections reach fifty
/// of them (tokio's `accept_many`): every waiting task is woken, not just the last.
#[netloop::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_accepting_on_one_listener_all_get_connections() {
    const N: usize = 50;
    let listener = std::sync::Arc::new(TcpListener::bind("127.0.0.1:0").await.unwrap());
    let addr = listener.local_addr().unwrap();
    let (waiting_tx, mut waiting_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut acceptors = Vec::new();
    for _ in 0..N {
        let listener = listener.clone();
        let waiting_tx = waiting_tx.clone();
        acceptors.push(netloop::spawn(async move {
            let accept = listener.accept();
            netloop::pin!(accept);
            assert!(futures::poll!(accept.as_mut()).is_pending(), "nothing to accept yet");
            waiting_tx.send(()).unwrap();
            accept.await.unwrap()
        }));
    }
    for _ in 0..N {
        timeout(WAIT, waiting_rx.recv())
            .await
            .expect("every acceptor waits")
            .unwrap();
    }
    let clients: Vec<_> = (0..N).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
    for a in acceptors {
        timeout(WAIT, a)
            .await
            .expect("every acceptor got a connection")
            .unwrap();
    }
    drop(clients);
}

/// Two tasks waiting for one stream to become readable are both woken.
#[netloop::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_awaiting_readable_are_both_woken() {
    let (mut client, server) = pair().await;
    // An accepted stream starts out taken as readable: a read that finds nothing
    // clears that.
    assert_eq!(server.try_read(&mut [0; 1]).unwrap_err().kind(), ErrorKind::WouldBlock);
    let server = std::sync::Arc::new(server);
    let (waiting_tx, mut waiting_rx) = tokio::sync::mpsc::unbounded_channel();
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let server = server.clone();
            let waiting_tx = waiting_tx.clone();
            netloop::spawn(async move {
                let readable = server.readable();
                netloop::pin!(readable);
                assert!(futures::poll!(readable.as_mut()).is_pending());
                waiting_tx.send(()).unwrap();
                readable.await.unwrap();
            })
        })
        .collect();
    for _ in 0..2 {
        timeout(WAIT, waiting_rx.recv()).await.expect("both wait").unwrap();
    }
    client.write_all(b"!").await.unwrap();
    for w in waiters {
        timeout(WAIT, w).await.expect("both waiters woke").unwrap();
    }
}

// ---------------------------------------------------------------------------------
// lookup_host, and sockets made outside a runtime
// ---------------------------------------------------------------------------------

#[netloop::test]
async fn lookup_host_resolves_literals_and_localhost() {
    let addr: std::net::SocketAddr = "127.0.0.1:8000".parse().unwrap();
    assert_eq!(
        netloop::net::lookup_host(addr).await.unwrap().collect::<Vec<_>>(),
        [addr]
    );
    assert_eq!(
        netloop::net::lookup_host("127.0.0.1:8000")
            .await
            .unwrap()
            .collect::<Vec<_>>(),
        [addr]
    );
    let local = netloop::net::lookup_host("localhost:3000")
        .await
        .unwrap()
        .next()
        .unwrap();
    assert!(local.ip().is_loopback() && local.port() == 3000, "{local}");
    let bad = netloop::net::lookup_host("no port here").await;
    assert!(bad.is_err(), "a host without a port is an error, not a panic");
}

/// As tokio's: a socket cannot be registered with no runtime to register it with.
#[test]
#[should_panic(expected = "there is no reactor running")]
fn a_listener_from_std_outside_a_runtime_panics() {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let _ = TcpListener::try_from(std_listener);
}

/// An accepted stream starts out taken as readable and writable (tokio's
/// `new_accepted`): the first `try_read` tries the socket instead of waiting for the
/// loop to report it, and finding nothing clears that.
#[netloop::test]
async fn an_accepted_stream_is_tried_at_once() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    std::io::Write::write_all(&mut client, b"first").unwrap();
    let (server, _) = listener.accept().await.unwrap();
    // No await between: the loop has not polled the new socket yet. (On loopback the
    // bytes are in its receive queue once `write_all` returned.)
    let mut buf = [0u8; 8];
    assert_eq!(server.try_read(&mut buf).unwrap(), 5);
    assert_eq!(&buf[..5], b"first");
    assert_eq!(server.try_read(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
    // Not readable now until the peer writes again.
    let mut readable = Box::pin(server.readable());
    assert!(futures::poll!(readable.as_mut()).is_pending());
    std::io::Write::write_all(&mut client, b"x").unwrap();
    timeout(WAIT, readable).await.unwrap().unwrap();
}
