//! The crate under tokio's name: tokio's paths, attributes and macros resolve to netloop,
//! and netloop's own API is reachable under `tokio::netloop`.

use std::time::Duration;

tokio::task_local! {
    static REQUEST_ID: u32;
}

#[tokio::test]
async fn the_test_attribute_builds_a_current_thread_runtime() {
    let flavor = tokio::runtime::Handle::current().runtime_flavor();
    assert_eq!(flavor, tokio::runtime::RuntimeFlavor::CurrentThread);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_underneath_is_netloop() {
    assert_eq!(tokio::netloop::runtime::Handle::current().event_loops().len(), 2);
    let on_loop = tokio::spawn(async { tokio::netloop::runtime::worker_index() })
        .await
        .unwrap();
    assert!(on_loop.is_some(), "a spawned task runs on one of netloop's loops");
}

#[tokio::test(start_paused = true)]
async fn start_paused_pauses_the_clock() {
    let started = std::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(started.elapsed() < Duration::from_secs(10), "the clock was not paused");
}

#[tokio::test]
async fn the_declarative_macros_resolve() {
    let (a, b) = tokio::join!(async { 1 }, async { 2 });
    assert_eq!((a, b), (1, 2));
    let sum: Result<(u8, u8), ()> = tokio::try_join!(async { Ok(3) }, async { Ok(4) });
    assert_eq!(sum, Ok((3, 4)));
    let sleep = tokio::time::sleep(Duration::from_secs(60));
    tokio::pin!(sleep);
    let chosen = tokio::select! {
        _ = &mut sleep => "sleep",
        v = async { 5 } => if v == 5 { "value" } else { "other" },
    };
    assert_eq!(chosen, "value");
    let id = REQUEST_ID.scope(7, async { REQUEST_ID.get() }).await;
    assert_eq!(id, 7);
}

#[tokio::test]
async fn sync_and_io_are_netloops_own() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut a, mut b) = tokio::io::duplex(64);
    a.write_all(b"ping").await.unwrap();
    let mut buf = [0; 4];
    b.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
    let (tx, rx) = tokio::sync::oneshot::channel();
    tx.send(1).unwrap();
    assert_eq!(rx.await, Ok(1));
    // The same types as the `netloop` crate's, not look-alikes.
    let _: tokio::netloop::io::DuplexStream = a;
    let _: tokio::netloop::sync::Semaphore = tokio::sync::Semaphore::new(1);
}

#[test]
fn main_attribute_runs_a_multi_thread_runtime() {
    #[tokio::main(worker_threads = 2)]
    async fn main() -> usize {
        tokio::netloop::runtime::Handle::current().event_loops().len()
    }
    assert_eq!(main(), 2);
}

/// `tokio::stream`, an empty module in tokio 1.x (its stream utilities are in
/// tokio-stream), is a path code may name.
#[test]
fn the_empty_stream_module_exists() {
    #[allow(unused_imports)]
    use tokio::stream;
}
