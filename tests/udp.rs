//! `netloop::net::UdpSocket` on loopback, as tokio users use it.

use std::collections::HashSet;
use std::sync::Arc;

use netloop::net::UdpSocket;
use netloop::time::timeout;
use netloop_tests::WAIT;

#[netloop::test]
async fn send_to_and_recv_from_round_trip() {
    let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    assert_eq!(a.send_to(b"hello", b.local_addr().unwrap()).await.unwrap(), 5);
    let mut buf = [0u8; 16];
    let (n, from) = timeout(WAIT, b.recv_from(&mut buf)).await.unwrap().unwrap();
    assert_eq!((&buf[..n], from), (&b"hello"[..], a.local_addr().unwrap()));
}

#[netloop::test]
async fn connected_send_and_recv_and_peek() {
    let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    a.connect(b.local_addr().unwrap()).await.unwrap();
    b.connect(a.local_addr().unwrap()).await.unwrap();
    assert_eq!(a.peer_addr().unwrap(), b.local_addr().unwrap());
    a.send(b"one").await.unwrap();
    let mut buf = [0u8; 8];
    let (n, from) = timeout(WAIT, b.peek_from(&mut buf)).await.unwrap().unwrap();
    assert_eq!((&buf[..n], from), (&b"one"[..], a.local_addr().unwrap()));
    assert_eq!(b.peek_sender().await.unwrap(), a.local_addr().unwrap());
    let n = b.recv(&mut buf).await.unwrap();
    assert_eq!(&buf[..n], b"one", "peeking left the datagram queued");
    assert_eq!(b.try_recv(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
}

/// A datagram larger than the buffer is cut to fit, as `recv(2)` does; the rest is gone.
#[netloop::test]
async fn a_datagram_larger_than_the_buffer_is_truncated() {
    let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    a.send_to(&[7u8; 100], b.local_addr().unwrap()).await.unwrap();
    a.send_to(b"next", b.local_addr().unwrap()).await.unwrap();
    let mut small = [0u8; 10];
    let (n, _) = timeout(WAIT, b.recv_from(&mut small)).await.unwrap().unwrap();
    assert_eq!((n, small), (10, [7u8; 10]));
    let (n, _) = timeout(WAIT, b.recv_from(&mut small)).await.unwrap().unwrap();
    assert_eq!(
        &small[..n],
        b"next",
        "the cut datagram's rest did not leak into the next"
    );
}

/// 2,000 datagrams echoed by a server task on another loop, none lost on loopback
/// (the client keeps at most 32 in flight, well inside the socket buffers).
#[netloop::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_of_2000_datagrams_loses_none() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let server_addr = server.local_addr().unwrap();
    netloop::spawn(async move {
        let mut buf = [0u8; 64];
        loop {
            let (n, from) = server.recv_from(&mut buf).await.unwrap();
            server.send_to(&buf[..n], from).await.unwrap();
        }
    });
    let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    client.connect(server_addr).await.unwrap();
    let mut seen = HashSet::new();
    let mut buf = [0u8; 64];
    for window in (0u32..2000).collect::<Vec<_>>().chunks(32) {
        for i in window {
            client.send(&i.to_le_bytes()).await.unwrap();
        }
        for _ in window {
            let n = timeout(WAIT, client.recv(&mut buf))
                .await
                .expect("no datagram lost")
                .unwrap();
            assert_eq!(n, 4);
            assert!(
                seen.insert(u32::from_le_bytes(buf[..4].try_into().unwrap())),
                "no duplicate"
            );
        }
    }
    assert_eq!(seen.len(), 2000);
}

/// A shared socket: one task sends while two others await `recv_from`; every datagram
/// reaches one of the receivers.
#[netloop::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_receivers_share_one_socket() {
    let rx = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let to = rx.local_addr().unwrap();
    let (got_tx, mut got_rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..2 {
        let rx = rx.clone();
        let got_tx = got_tx.clone();
        netloop::spawn(async move {
            let mut buf = [0u8; 4];
            while let Ok((n, _)) = rx.recv_from(&mut buf).await {
                got_tx.send(buf[..n].to_vec()).unwrap();
            }
        });
    }
    let tx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    for i in 0u8..20 {
        tx.send_to(&[i], to).await.unwrap();
        netloop::task::yield_now().await;
    }
    let mut all = Vec::new();
    for _ in 0..20 {
        all.push(timeout(WAIT, got_rx.recv()).await.unwrap().unwrap()[0]);
    }
    all.sort_unstable();
    assert_eq!(all, (0u8..20).collect::<Vec<_>>());
}

#[netloop::test]
async fn from_std_options_and_errors() {
    let std_socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = std_socket.local_addr().unwrap();
    let socket = UdpSocket::try_from(std_socket).unwrap();
    assert_eq!(socket.local_addr().unwrap(), addr);
    socket.set_broadcast(true).unwrap();
    assert!(socket.broadcast().unwrap());
    socket.set_ttl(42).unwrap();
    assert_eq!(socket.ttl().unwrap(), 42);
    assert!(socket.take_error().unwrap().is_none());
    let taken = UdpSocket::bind(addr).await.expect_err("the port is in use");
    assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse);
    let back = socket.into_std().unwrap();
    assert_eq!(back.local_addr().unwrap(), addr);
}

#[test]
fn peek_and_buf_forms_and_ip_options() {
    netloop_tests::test_body(|| {
        netloop_tests::current().block_on(async {
            let a = netloop::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let b = netloop::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(
                b.try_peek_from(&mut buf).unwrap_err().kind(),
                std::io::ErrorKind::WouldBlock
            );
            a.send_to(b"one", b.local_addr().unwrap()).await.unwrap();
            a.send_to(b"two", b.local_addr().unwrap()).await.unwrap();
            assert_eq!(b.peek_sender().await.unwrap(), a.local_addr().unwrap());
            let (n, from) = b.try_peek_from(&mut buf).unwrap();
            assert_eq!(
                (&buf[..n], from),
                (&b"one"[..], a.local_addr().unwrap()),
                "peeked, not taken"
            );
            let mut v = Vec::with_capacity(16);
            let (n, _) = b.recv_buf_from(&mut v).await.unwrap();
            assert_eq!((n, &v[..]), (3, &b"one"[..]));
            b.readable().await.unwrap();
            let mut w = Vec::with_capacity(16);
            let (n, _) = b.try_recv_buf_from(&mut w).unwrap();
            assert_eq!(&w[..n], b"two");
            a.set_tos_v4(0x10).unwrap();
            assert_eq!(a.tos_v4().unwrap(), 0x10);
        });
    });
}

/// 10,000 datagrams echoed by a server task on another loop, at most 64 in flight:
/// every one comes back, exactly once.
#[netloop::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echo_of_ten_thousand_datagrams_loses_none() {
    const COUNT: u32 = 10_000;
    const WINDOW: u32 = 64;
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let server_addr = server.local_addr().unwrap();
    netloop::spawn(async move {
        let mut buf = [0u8; 64];
        loop {
            let (n, from) = server.recv_from(&mut buf).await.unwrap();
            server.send_to(&buf[..n], from).await.unwrap();
        }
    });
    let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    client.connect(server_addr).await.unwrap();
    let mut seen = vec![false; COUNT as usize];
    let (mut sent, mut received) = (0u32, 0u32);
    let mut buf = [0u8; 64];
    timeout(std::time::Duration::from_secs(20), async {
        while received < COUNT {
            while sent < COUNT && sent - received < WINDOW {
                client.send(&sent.to_be_bytes()).await.unwrap();
                sent += 1;
            }
            let n = client.recv(&mut buf).await.unwrap();
            assert_eq!(n, 4);
            let seq = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
            assert!(!seen[seq], "datagram {seq} came back twice");
            seen[seq] = true;
            received += 1;
        }
    })
    .await
    .expect("the echo finished in time (a lost datagram stalls it)");
    assert!(seen.iter().all(|s| *s));
}

/// An unconnected socket with `IP_RECVERR` (as quinn-udp sets it) that sent to a closed
/// port gets the ICMP error as `EPOLLERR` and nothing else. As on tokio (1.52 on), the
/// async receives (`recv_from`, waiting for `READABLE | ERROR`) return it, while the
/// `poll_*` receives and `poll_recv_ready` (`READABLE`) keep waiting for a datagram:
/// quinn's endpoint driver polls that way, and died of the `ECONNREFUSED` it was
/// handed. `ready(Interest::ERROR)` sees the error.
#[test]
fn an_icmp_error_alone_ends_async_receives_only() {
    icmp_error_alone(netloop::event_loop::IoDriver::Epoll);
}

/// The same on io_uring, where an armed `recvmsg` takes the error from the kernel: the
/// ring keeps it for the receives that wait for errors, the next send or `take_error`.
#[test]
fn on_the_ring_an_icmp_error_alone_ends_async_receives_only() {
    icmp_error_alone(netloop::event_loop::IoDriver::IoUring);
}

fn icmp_error_alone(driver: netloop::event_loop::IoDriver) {
    use std::os::fd::AsRawFd;

    use netloop::event_loop::IoDriver;
    use netloop::io::{Interest, ReadBuf};

    let rt = netloop::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .io_driver(driver)
        .enable_all()
        .build()
        .unwrap();
    // On a loop, as quinn's endpoint driver runs: the socket's loop is the thread that
    // uses it.
    let on_a_loop = rt.spawn(async move {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let on: libc::c_int = 1;
        // SAFETY: a valid descriptor, and an option value of the size given.
        let r = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_RECVERR,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "IP_RECVERR: {}", std::io::Error::last_os_error());
        let socket = Arc::new(socket);
        let polling = socket.clone();
        // quinn's way: poll for a datagram.
        let polled = netloop::spawn(async move {
            let mut buf = [0u8; 64];
            std::future::poll_fn(|cx| {
                let mut rb = ReadBuf::new(&mut buf);
                polling.poll_recv_from(cx, &mut rb).map_ok(|_| rb.filled().len())
            })
            .await
        });
        // A port nobody listens on: the send succeeds, its ICMP reply comes back.
        let closed = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let closed_addr = closed.local_addr().unwrap();
        drop(closed);
        socket.send_to(b"ping", closed_addr).await.unwrap();
        // `ready` would take a socket off the ring: the error wait is epoll's.
        if driver == IoDriver::Epoll {
            let ready = timeout(WAIT, socket.ready(Interest::ERROR))
                .await
                .expect("the ICMP error reaches an error wait")
                .unwrap();
            assert!(ready.is_error(), "{ready:?}");
        }
        let mut buf = [0u8; 64];
        let err = timeout(WAIT, socket.recv_from(&mut buf))
            .await
            .expect("the ICMP error ends recv_from")
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{driver:?}");
        netloop::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(
            !polled.is_finished(),
            "{driver:?}: poll_recv_from returned on the ICMP error alone"
        );
        // A datagram still reaches the polling receive.
        let peer = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        peer.send_to(b"data", socket.local_addr().unwrap()).await.unwrap();
        let got = timeout(WAIT, polled)
            .await
            .expect("the datagram wakes the receive")
            .unwrap();
        assert_eq!(got.unwrap(), 4, "{driver:?}");
    });
    rt.block_on(on_a_loop).unwrap();
}
