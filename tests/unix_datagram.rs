//! `net::UnixDatagram`.

use std::io::ErrorKind;

use netloop::net::UnixDatagram;
use netloop_tests::{TempPath, current, multi, test_body};

#[test]
fn pair_send_recv_and_try_forms() {
    test_body(|| {
        current().block_on(async {
            let (a, b) = UnixDatagram::pair().unwrap();
            let mut buf = [0u8; 16];
            assert_eq!(b.try_recv(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
            a.send(b"one").await.unwrap();
            a.try_send(b"two").unwrap();
            let n = b.recv(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"one", "message boundaries are kept");
            let mut v = Vec::with_capacity(8);
            let n = b.recv_buf(&mut v).await.unwrap();
            assert_eq!((n, &v[..]), (3, &b"two"[..]));
            assert!(a.local_addr().unwrap().is_unnamed());
        });
    });
}

#[test]
fn bound_sockets_send_to_and_recv_from_by_path_and_a_path_in_use_is_an_error() {
    test_body(|| {
        multi().block_on(async {
            let (pa, pb) = (TempPath::new("dgram-a"), TempPath::new("dgram-b"));
            let a = UnixDatagram::bind(&pa.0).unwrap();
            let b = UnixDatagram::bind(&pb.0).unwrap();
            assert_eq!(UnixDatagram::bind(&pa.0).unwrap_err().kind(), ErrorKind::AddrInUse);
            a.send_to(b"hello", &pb.0).await.unwrap();
            let mut buf = [0u8; 8];
            let (n, from) = b.recv_from(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"hello");
            assert_eq!(from.as_pathname(), Some(pa.0.as_path()));
            // Connected: send and recv without addresses.
            let c = UnixDatagram::unbound().unwrap();
            c.connect(&pb.0).unwrap();
            c.send(b"x").await.unwrap();
            assert_eq!(b.recv(&mut buf).await.unwrap(), 1);
        });
    });
}

#[test]
fn two_tasks_waiting_to_receive_each_get_a_datagram() {
    test_body(|| {
        multi().block_on(async {
            let (a, b) = UnixDatagram::pair().unwrap();
            let b = std::sync::Arc::new(b);
            let receivers: Vec<_> = (0..2)
                .map(|_| {
                    let b = b.clone();
                    netloop::spawn(async move {
                        let mut buf = [0u8; 4];
                        b.recv(&mut buf).await.unwrap()
                    })
                })
                .collect();
            netloop::task::yield_now().await;
            a.send(b"1").await.unwrap();
            a.send(b"22").await.unwrap();
            let mut sizes = Vec::new();
            for r in receivers {
                sizes.push(r.await.unwrap());
            }
            sizes.sort();
            assert_eq!(sizes, [1, 2]);
        });
    });
}
