//! tokio 1.54's public surface, as callers name it, on netloop: each test is
//! one item `tests/api-diff/api_diff.py` found missing or different, written as code
//! built for tokio uses it. `tokio::stream` is tested in crates/tokio/tests/tokio_paths.rs.

use std::io::ErrorKind;
use std::path::Path;
use std::task::Poll;

use netloop::io::ReadBuf;
use netloop::net::unix::{SocketAddr, UCred, gid_t, pid_t, uid_t};
use netloop::net::{UdpSocket, UnixListener, UnixStream};
use netloop::time::timeout;
use netloop_tests::WAIT;

/// `tokio::net::unix::{uid_t, gid_t, pid_t}`, the types `UCred`'s getters return.
#[netloop::test]
async fn ucred_ids_have_tokios_type_names() {
    let (a, _b) = UnixStream::pair().unwrap();
    let cred: UCred = a.peer_cred().unwrap();
    let uid: uid_t = cred.uid();
    let gid: gid_t = cred.gid();
    let pid: Option<pid_t> = cred.pid();
    assert_eq!(uid, unsafe { libc::getuid() });
    assert_eq!(gid, unsafe { libc::getgid() });
    assert_eq!(pid, Some(std::process::id() as pid_t));
}

async fn connected_pair() -> (UdpSocket, UdpSocket) {
    let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    a.connect(b.local_addr().unwrap()).await.unwrap();
    b.connect(a.local_addr().unwrap()).await.unwrap();
    (a, b)
}

/// `UdpSocket::{peek, poll_peek, try_peek}`: the connected peer's next datagram, left
/// in the queue.
#[netloop::test]
async fn udp_peek_leaves_the_datagram_queued() {
    let (a, b) = connected_pair().await;
    let mut buf = [0u8; 8];
    assert_eq!(b.try_peek(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
    a.send(b"one").await.unwrap();

    let n = timeout(WAIT, b.peek(&mut buf)).await.unwrap().unwrap();
    assert_eq!(&buf[..n], b"one");
    let n = b.try_peek(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"one");
    let mut storage = [0u8; 8];
    let mut read_buf = ReadBuf::new(&mut storage);
    let polled = std::future::poll_fn(|cx| b.poll_peek(cx, &mut read_buf)).await;
    polled.unwrap();
    assert_eq!(read_buf.filled(), b"one");

    let n = b.recv(&mut buf).await.unwrap();
    assert_eq!(&buf[..n], b"one", "peeking left the datagram queued");
    let mut empty = ReadBuf::new(&mut storage);
    let pending = std::future::poll_fn(|cx| Poll::Ready(b.poll_peek(cx, &mut empty))).await;
    assert!(pending.is_pending(), "nothing left to peek");
}

/// `UdpSocket::{bind_device, device}` (`SO_BINDTODEVICE`, Linux). Binding needs
/// `CAP_NET_RAW`; without it the call fails as tokio's does.
#[netloop::test]
async fn udp_bind_device_sets_and_reads_the_interface() {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    assert_eq!(socket.device().unwrap(), None);
    match socket.bind_device(Some(b"lo")) {
        Ok(()) => {
            assert_eq!(socket.device().unwrap().as_deref(), Some(&b"lo"[..]));
            socket.bind_device(None).unwrap();
            assert_eq!(socket.device().unwrap(), None);
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::PermissionDenied),
    }
}

/// `UnixListener::bind_addr` and `UnixStream::connect_addr` take tokio's
/// `net::unix::SocketAddr`, the type `local_addr` returns.
#[netloop::test]
async fn unix_bind_addr_and_connect_addr_take_tokios_socket_addr() {
    let dir = std::env::temp_dir().join(format!("netloop-public-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bind_addr.sock");
    let _ = std::fs::remove_file(&path);
    let std_addr = std::os::unix::net::SocketAddr::from_pathname(&path).unwrap();
    let addr: SocketAddr = std_addr.into();

    let listener = UnixListener::bind_addr(&addr).unwrap();
    let local: SocketAddr = listener.local_addr().unwrap();
    assert_eq!(local.as_pathname(), Some(path.as_path()));
    let client = UnixStream::connect_addr(&local).await.unwrap();
    let (server, _) = timeout(WAIT, listener.accept()).await.unwrap().unwrap();
    assert_eq!(client.peer_addr().unwrap().as_pathname(), Some(path.as_path()));
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `fs::File::create_new` is generic over its path, as tokio's (a turbofish names it).
#[netloop::test]
async fn file_create_new_takes_a_type_parameter() {
    let dir = std::env::temp_dir().join(format!("netloop-public-api-create-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("new.txt");
    let _ = std::fs::remove_file(&path);
    netloop::fs::File::create_new::<&Path>(path.as_path()).await.unwrap();
    let again = netloop::fs::File::create_new::<&Path>(path.as_path()).await;
    assert_eq!(again.unwrap_err().kind(), ErrorKind::AlreadyExists);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `LocalSet::id`: unique among sets and runtimes, as tokio's (one counter for both).
#[test]
fn local_set_ids_are_unique_among_sets_and_runtimes() {
    let rt = netloop::runtime::Builder::new_current_thread().build().unwrap();
    let (a, b) = (netloop::task::LocalSet::new(), netloop::task::LocalSet::new());
    assert_ne!(a.id(), b.id());
    assert_ne!(a.id(), rt.handle().id());
    assert_ne!(b.id(), rt.handle().id());
    assert_eq!(a.id(), a.id(), "an id does not change");
}
