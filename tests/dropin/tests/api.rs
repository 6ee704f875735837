//! Pieces of tokio's API that tokio programs lean on, checked to compile and behave the
//! same on either runtime: attribute forms, `JoinError`, TCP address forms, buffered
//! reads over a split stream, `JoinSet` collection, and the auto traits of the types
//! programs move between tasks. Every async body runs under `rt::time::timeout`.

use std::future::ready;
use std::time::Duration;

use netloop_dropin::rt;
use rt::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use rt::net::{TcpListener, TcpStream};
use rt::time::timeout;

const LIMIT: Duration = Duration::from_secs(5);

#[netloop_dropin::rt::test]
async fn the_attribute_by_its_full_path() {
    timeout(LIMIT, rt::task::yield_now()).await.unwrap();
}

#[rt::test(crate = "netloop_dropin::rt")]
async fn the_crate_argument_naming_the_reexport() {
    timeout(LIMIT, netloop_dropin::rt::task::yield_now()).await.unwrap();
}

#[rt::test(flavor = "current_thread", start_paused = true)]
async fn explicit_current_thread_and_paused_clock() {
    let real = std::time::Instant::now();
    timeout(LIMIT, rt::time::sleep(Duration::from_secs(1))).await.unwrap();
    assert!(real.elapsed() < Duration::from_secs(1));
}

/// `#[main]` on a function other than `main` makes it synchronous.
#[rt::main(flavor = "current_thread")]
async fn compute_on_a_fresh_runtime() -> u8 {
    timeout(LIMIT, async { 5 }).await.unwrap()
}

#[test]
fn main_attribute_on_a_helper_function() {
    assert_eq!(compute_on_a_fresh_runtime(), 5);
}

#[rt::test]
async fn select_with_a_binding_subpattern() {
    timeout(LIMIT, async {
        let v = rt::select! {
            v @ 1..=5 = ready(3) => v,
            else => 0,
        };
        assert_eq!(v, 3);
        let v = rt::select! {
            v @ 1..=5 = ready(9) => v,
            else => 0,
        };
        assert_eq!(v, 0);
    })
    .await
    .unwrap();
}

#[rt::test]
async fn abort_handles_and_join_errors() {
    timeout(LIMIT, async {
        let handle = rt::spawn(std::future::pending::<()>());
        let abort = handle.abort_handle();
        abort.abort();
        let err = handle.await.unwrap_err();
        assert!(err.is_cancelled() && !err.is_panic());

        let handle = rt::spawn(async { panic!("boom") });
        let err = handle.await.unwrap_err();
        assert!(err.is_panic());
        assert_eq!(*err.into_panic().downcast_ref::<&str>().unwrap(), "boom");

        // `JoinError` into `io::Error` and into `Box<dyn Error>`.
        async fn io_result() -> std::io::Result<u8> {
            Ok(rt::spawn(async { 1u8 }).await?)
        }
        async fn boxed_result() -> Result<u8, Box<dyn std::error::Error>> {
            Ok(rt::spawn(async { 2u8 }).await?)
        }
        assert_eq!(io_result().await.unwrap() + boxed_result().await.unwrap(), 3);
    })
    .await
    .unwrap();
}

#[rt::test]
async fn lines_from_an_owned_read_half() {
    timeout(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        rt::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            socket.write_all(b"first\nsecond\nthird").await.unwrap();
        });
        let stream = TcpStream::connect(addr).await.unwrap();
        let (read_half, _write_half) = stream.into_split();
        let mut lines = BufReader::new(read_half).lines();
        let mut got = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            got.push(line);
        }
        assert_eq!(got, ["first", "second", "third"]);
    })
    .await
    .unwrap();
}

#[rt::test]
async fn addresses_in_every_tokio_form() {
    timeout(LIMIT, async {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let port = addr.port();
        let _by_str = TcpStream::connect(format!("127.0.0.1:{port}")).await.unwrap();
        let _by_tuple = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let _by_addr = TcpStream::connect(addr).await.unwrap();
        let _by_ref = TcpStream::connect(&addr).await.unwrap();
        let _by_slice = TcpStream::connect(&[addr][..]).await.unwrap();
        let _by_string = TcpStream::connect(addr.to_string()).await.unwrap();
        for _ in 0..6 {
            listener.accept().await.unwrap();
        }
    })
    .await
    .unwrap();
}

#[rt::test]
async fn joinset_from_an_iterator_with_blocking_members() {
    timeout(LIMIT, async {
        let mut set: rt::task::JoinSet<u32> = (0..3u32).map(|i| async move { i }).collect();
        set.spawn_blocking(|| 10);
        let mut all = set.join_all().await;
        all.sort();
        assert_eq!(all, [0, 1, 2, 10]);
    })
    .await
    .unwrap();
}

fn send_sync<T: Send + Sync>() {}
fn send<T: Send>() {}
fn unpin<T: Unpin>() {}
fn send_future<F: std::future::Future + Send>(_: &F) {}
fn error_type<T: std::fmt::Debug + std::fmt::Display + std::error::Error + PartialEq + Eq + Send + Sync>() {}
fn instant_type<T: Copy + Ord + std::hash::Hash + std::fmt::Debug + Send + Sync>() {}

#[test]
fn auto_traits_of_the_types_programs_move_between_tasks() {
    send_sync::<rt::task::JoinHandle<u8>>();
    unpin::<rt::task::JoinHandle<u8>>();
    send_sync::<rt::task::AbortHandle>();
    // `JoinError` is `Sync` on both runtimes: see tests/parity.rs.
    send_sync::<rt::task::JoinError>();
    send_sync::<rt::task::JoinSet<u8>>();
    send_sync::<rt::task::Id>();
    send_sync::<rt::net::TcpStream>();
    send_sync::<rt::net::TcpListener>();
    send_sync::<rt::net::tcp::OwnedReadHalf>();
    send_sync::<rt::net::tcp::OwnedWriteHalf>();
    send_sync::<rt::time::Sleep>();
    send_sync::<rt::time::Interval>();
    unpin::<rt::time::Interval>();
    send::<rt::time::Timeout<rt::time::Sleep>>();
    send_sync::<rt::runtime::Runtime>();
    send_sync::<rt::runtime::Handle>();
    error_type::<rt::time::error::Elapsed>();
    instant_type::<rt::time::Instant>();
}

/// Never run: checks that the futures of these calls are `Send`, so `rt::spawn` takes
/// the tasks that await them.
#[allow(dead_code)]
fn futures_are_send(listener: &TcpListener, stream: &mut TcpStream, set: &mut rt::task::JoinSet<u8>) {
    send_future(&listener.accept());
    send_future(&TcpStream::connect("127.0.0.1:1"));
    send_future(&TcpListener::bind("127.0.0.1:0"));
    send_future(&set.join_next());
    send_future(&stream.readable());
    send_future(&stream.peek(&mut [0u8; 1]));
    send_future(&rt::time::sleep(Duration::ZERO));
    send_future(&rt::task::yield_now());
    let mut interval = rt::time::interval(Duration::from_secs(1));
    send_future(&interval.tick());
}
