//! `net::{UnixListener, UnixStream}` and the halves.

use std::io::ErrorKind;

use netloop::io::{AsyncReadExt, AsyncWriteExt, Interest};
use netloop::net::{UnixListener, UnixStream};
use netloop_tests::{TempPath, current, multi, test_body};

#[test]
fn listener_accepts_and_streams_echo_across_loops() {
    test_body(|| {
        multi().block_on(async {
            let path = TempPath::new("echo");
            let listener = UnixListener::bind(&path.0).unwrap();
            assert_eq!(listener.local_addr().unwrap().as_pathname(), Some(path.0.as_path()));
            let server = netloop::spawn(async move {
                for _ in 0..3 {
                    let (mut s, _) = listener.accept().await.unwrap();
                    // Handled on whichever loop the task lands: the accepted stream
                    // registers there.
                    netloop::spawn(async move {
                        let mut buf = [0u8; 5];
                        s.read_exact(&mut buf).await.unwrap();
                        s.write_all(&buf).await.unwrap();
                    });
                }
            });
            for i in 0..3u8 {
                let mut c = UnixStream::connect(&path.0).await.unwrap();
                c.write_all(&[i; 5]).await.unwrap();
                let mut buf = [0u8; 5];
                c.read_exact(&mut buf).await.unwrap();
                assert_eq!(buf, [i; 5]);
            }
            server.await.unwrap();
        });
    });
}

#[test]
fn bind_errors_and_refused_connect() {
    test_body(|| {
        current().block_on(async {
            let path = TempPath::new("taken");
            let listener = UnixListener::bind(&path.0).unwrap();
            assert_eq!(UnixListener::bind(&path.0).unwrap_err().kind(), ErrorKind::AddrInUse);
            drop(listener);
            // The file is still there, with nobody listening: refused.
            assert_eq!(
                UnixStream::connect(&path.0).await.unwrap_err().kind(),
                ErrorKind::ConnectionRefused
            );
            let missing = TempPath::new("missing");
            assert_eq!(
                UnixStream::connect(&missing.0).await.unwrap_err().kind(),
                ErrorKind::NotFound
            );
        });
    });
}

#[test]
fn pair_shutdown_gives_eof_and_try_forms_and_cred() {
    test_body(|| {
        current().block_on(async {
            let (mut a, mut b) = UnixStream::pair().unwrap();
            let mut buf = [0u8; 4];
            assert_eq!(b.try_read(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
            // Readiness arrives with the loop's first event for the new registration.
            a.writable().await.unwrap();
            a.try_write(b"ab").unwrap();
            b.readable().await.unwrap();
            assert_eq!(b.try_read(&mut buf).unwrap(), 2);
            assert!(a.ready(Interest::WRITABLE).await.unwrap().is_writable());
            a.shutdown().await.unwrap();
            let mut rest = Vec::new();
            assert_eq!(b.read_to_end(&mut rest).await.unwrap(), 0, "end of file after shutdown");
            // SAFETY: getuid has no preconditions.
            let uid = unsafe { libc::getuid() };
            let cred = a.peer_cred().unwrap();
            assert_eq!((cred.uid(), cred.pid()), (uid, Some(std::process::id() as i32)));
        });
    });
}

#[test]
fn halves_and_reunite() {
    test_body(|| {
        current().block_on(async {
            let (a, mut b) = UnixStream::pair().unwrap();
            let (mut r, mut w) = a.into_split();
            w.write_all(b"hi").await.unwrap();
            let mut buf = [0u8; 2];
            b.read_exact(&mut buf).await.unwrap();
            b.write_all(b"yo").await.unwrap();
            r.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"yo");
            let a = r.reunite(w).expect("halves of one stream");

            let (c, _d) = UnixStream::pair().unwrap();
            let (r1, _w1) = a.into_split();
            let (_r2, w2) = c.into_split();
            assert!(r1.reunite(w2).is_err(), "halves of different streams");

            let (mut e, mut f) = UnixStream::pair().unwrap();
            let (mut er, mut ew) = e.split();
            ew.write_all(b"x").await.unwrap();
            f.write_all(b"y").await.unwrap();
            let mut one = [0u8; 1];
            er.read_exact(&mut one).await.unwrap();
            assert_eq!(&one, b"y");
        });
    });
}

#[test]
fn a_fresh_pair_is_writable_at_once_and_abstract_names_work() {
    test_body(|| {
        current().block_on(async {
            let (a, _b) = UnixStream::pair().unwrap();
            // No loop turn since `pair`: writable without waiting for an event.
            assert_eq!(a.try_write(b"hi").unwrap(), 2);
            let name = format!("\0netloop-abstract-{}", std::process::id());
            let listener = UnixListener::bind(&name).unwrap();
            let (accepted, connected) = netloop::join!(listener.accept(), UnixStream::connect(&name));
            let (accepted, _) = accepted.unwrap();
            connected.unwrap();
            let local = accepted.local_addr().unwrap();
            use std::os::linux::net::SocketAddrExt;
            let std_addr: std::os::unix::net::SocketAddr = local.into();
            assert_eq!(std_addr.as_abstract_name(), Some(&name.as_bytes()[1..]));
        });
    });
}

/// 1 MiB written in random-sized chunks through a Unix-socket echo server comes back
/// byte for byte.
#[test]
fn a_mebibyte_echoed_in_random_chunks_comes_back_intact() {
    test_body(|| {
        let path = TempPath::new("echo-mib");
        multi().block_on(async {
            let listener = UnixListener::bind(&path.0).unwrap();
            netloop::spawn(async move {
                let (mut conn, _) = listener.accept().await.unwrap();
                let (mut rd, mut wr) = conn.split();
                netloop::io::copy(&mut rd, &mut wr).await.unwrap();
            });
            let data: Vec<u8> = (0..1usize << 20).map(|i| (i * 7 % 253) as u8).collect();
            let conn = UnixStream::connect(&path.0).await.unwrap();
            let (mut rd, mut wr) = conn.into_split();
            let sent = data.clone();
            let writer = netloop::spawn(async move {
                let mut seed = 12345u64;
                let mut at = 0;
                while at < sent.len() {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let n = (1 + (seed >> 33) as usize % 9000).min(sent.len() - at);
                    wr.write_all(&sent[at..at + n]).await.unwrap();
                    at += n;
                }
                wr.shutdown().await.unwrap();
            });
            let mut back = Vec::with_capacity(data.len());
            rd.read_to_end(&mut back).await.unwrap();
            writer.await.unwrap();
            assert_eq!(back.len(), data.len());
            assert!(back == data, "the echoed bytes differ");
        });
    });
}

#[test]
fn unix_socket_binds_then_listens_connects_or_carries_datagrams() {
    test_body(|| {
        let listen_path = TempPath::new("socket-listen");
        let (a_path, b_path) = (TempPath::new("socket-dgram-a"), TempPath::new("socket-dgram-b"));
        current().block_on(async {
            let socket = netloop::net::UnixSocket::new_stream().unwrap();
            socket.bind(&listen_path.0).unwrap();
            let listener = socket.listen(16).unwrap();
            let client = netloop::net::UnixSocket::new_stream().unwrap();
            let (mut client, accepted) = netloop::join!(client.connect(&listen_path.0), listener.accept());
            let (mut server, _) = accepted.unwrap();
            client.as_mut().unwrap().write_all(b"ping").await.unwrap();
            let mut buf = [0; 4];
            server.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"ping");

            let a = netloop::net::UnixSocket::new_datagram().unwrap();
            a.bind(&a_path.0).unwrap();
            let a = a.datagram().unwrap();
            let b = netloop::net::UnixSocket::new_datagram().unwrap();
            b.bind(&b_path.0).unwrap();
            let b = b.datagram().unwrap();
            b.send_to(b"dgram", &a_path.0).await.unwrap();
            let mut buf = [0; 8];
            let (n, from) = a.recv_from(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"dgram");
            assert_eq!(from.as_pathname(), Some(b_path.0.as_path()));

            // Each kind refuses the other's conversions, with tokio's words.
            let err = netloop::net::UnixSocket::new_datagram().unwrap().listen(1).unwrap_err();
            assert_eq!(err.to_string(), "listen cannot be called on a datagram socket");
            let err = netloop::net::UnixSocket::new_stream().unwrap().datagram().unwrap_err();
            assert_eq!(err.to_string(), "datagram cannot be called on a stream socket");
            let err = netloop::net::UnixSocket::new_stream()
                .unwrap()
                .connect(TempPath::new("socket-nobody").0.clone())
                .await
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotFound);
        });
    });
}
