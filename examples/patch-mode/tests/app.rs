//! The application, end to end: reqwest against its axum server, tower-http's timeout,
//! tokio-util's `DelayQueue` and `LinesCodec`. Built with the manifest's `[patch]`, all of
//! it runs on netloop; the last tests check that it does.

use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use netloop_patch_mode_app::{REQUEST_TIMEOUT, Reminders, serve_http, serve_lines};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Framed, LinesCodec};

/// Every test is bounded: a hang fails it instead of the run.
const LIMIT: Duration = Duration::from_secs(20);

async fn http_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_http(listener));
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reqwest_gets_hello_from_axum() {
    tokio::time::timeout(LIMIT, async {
        let base = http_server().await;
        let client = reqwest::Client::new();
        for _ in 0..20 {
            let body = client.get(&base).send().await.unwrap().text().await.unwrap();
            assert_eq!(body, "hello");
        }
    })
    .await
    .expect("within the limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_layer_answers_408() {
    tokio::time::timeout(LIMIT, async {
        let base = http_server().await;
        let started = Instant::now();
        let response = reqwest::get(format!("{base}/slow")).await.unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::REQUEST_TIMEOUT);
        let took = started.elapsed();
        assert!(took >= REQUEST_TIMEOUT, "answered after {took:?}, before the timeout");
        assert!(took < REQUEST_TIMEOUT * 20, "the handler's sleep was not cut short");
    })
    .await
    .expect("within the limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reminders_come_back_in_deadline_order() {
    tokio::time::timeout(LIMIT, async {
        let base = http_server().await;
        let client = reqwest::Client::new();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for ms in [200u64, 20, 100] {
            let (client, url, tx) = (client.clone(), format!("{base}/remind?ms={ms}"), tx.clone());
            tokio::spawn(async move {
                let body = client.get(url).send().await.unwrap().text().await.unwrap();
                assert_eq!(body, "reminded");
                tx.send(ms).unwrap();
            });
        }
        drop(tx);
        let mut order = Vec::new();
        while let Some(ms) = rx.recv().await {
            order.push(ms);
        }
        assert_eq!(order, [20, 100, 200]);
    })
    .await
    .expect("within the limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_codec_round_trips() {
    tokio::time::timeout(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve_lines(listener));
        let mut conn = Framed::new(TcpStream::connect(addr).await.unwrap(), LinesCodec::new());
        for word in ["netloop", "is", "tokio"] {
            conn.send(word).await.unwrap();
            assert_eq!(conn.next().await.unwrap().unwrap(), word.to_uppercase());
        }
        // A line over the server's limit ends the connection.
        conn.send("x".repeat(2000)).await.unwrap();
        assert!(conn.next().await.is_none());
    })
    .await
    .expect("within the limit");
}

/// One clock: tokio-util's `DelayQueue` sleeps on the runtime's paused clock, which
/// auto-advances, so an hour-long reminder comes back at once.
#[tokio::test(start_paused = true)]
async fn delay_queue_runs_on_the_paused_clock() {
    let reminders = Reminders::start();
    let started = Instant::now();
    let virtual_start = tokio::time::Instant::now();
    reminders.remind(Duration::from_secs(3600)).await;
    assert!(tokio::time::Instant::now() - virtual_start >= Duration::from_secs(3600));
    assert!(started.elapsed() < Duration::from_secs(10), "the clock was not paused");
}

/// The runtime underneath is netloop's: its API is reachable under `tokio::netloop`, and
/// the tasks of a two-worker runtime run on its event loops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_is_netloop() {
    let loops = tokio::netloop::runtime::Handle::current().event_loops().len();
    assert_eq!(loops, 2);
    let index = tokio::spawn(async { tokio::netloop::runtime::worker_index() })
        .await
        .unwrap();
    assert!(index.is_some(), "a spawned task runs on one of netloop's loops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tick_waits_on_a_timer() {
    tokio::time::timeout(LIMIT, async {
        let base = http_server().await;
        let started = Instant::now();
        let body = reqwest::get(format!("{base}/tick"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, "tick");
        assert!(started.elapsed() >= Duration::from_millis(1));
    })
    .await
    .expect("within the limit");
}
