//! Crates that reach for tokio's runtime from inside (tower-http's timeout layer,
//! tokio-util's `DelayQueue`, reqwest, axum's `serve` on a tokio listener), running in
//! netloop tasks with the `tokio-compat` feature. Every wait is bounded.

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use futures::StreamExt;
use netloop::io::{AsyncReadExt, AsyncWriteExt};
use netloop::runtime::{Builder, Runtime};
use tokio_util::time::DelayQueue;
use tower_http::timeout::TimeoutLayer;

/// No test may take longer than this.
const LIMIT: Duration = Duration::from_secs(10);

fn runtime() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a netloop runtime")
}

/// Runs `body` in a netloop task (on a loop thread, not in `block_on`), within LIMIT.
fn in_task<F>(body: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let rt = runtime();
    rt.block_on(async move {
        let task = netloop::spawn(body);
        netloop::time::timeout(LIMIT, task)
            .await
            .expect("the test finished within its limit")
            .expect("the test task did not panic")
    })
}

#[test]
fn tokio_sleep_works_in_a_netloop_task() {
    let took = in_task(async {
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(30)).await;
        start.elapsed()
    });
    assert!(took >= Duration::from_millis(30), "slept {took:?}");
}

#[test]
fn delay_queue_yields_its_items_in_deadline_order() {
    let order = in_task(async {
        let mut queue = DelayQueue::new();
        queue.insert("third", Duration::from_millis(60));
        queue.insert("first", Duration::from_millis(10));
        queue.insert("second", Duration::from_millis(30));
        let mut order = Vec::new();
        while let Some(expired) = queue.next().await {
            order.push(expired.into_inner());
        }
        order
    });
    assert_eq!(order, ["first", "second", "third"]);
}

#[test]
fn axum_with_tower_http_timeout_answers_200_and_408() {
    let (fast, slow) = in_task(async {
        let app = Router::new()
            .route("/fast", get(|| async { "fast" }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    "too late"
                }),
            )
            .layer(TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                Duration::from_millis(100),
            ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        netloop::spawn(async move { axum::serve(listener, app).await });
        let client = reqwest::Client::new();
        let fast = client
            .get(format!("http://{addr}/fast"))
            .send()
            .await
            .expect("GET /fast");
        let fast = (fast.status(), fast.text().await.expect("body"));
        let slow = client
            .get(format!("http://{addr}/slow"))
            .send()
            .await
            .expect("GET /slow");
        (fast, slow.status())
    });
    assert_eq!(fast, (StatusCode::OK, "fast".to_string()));
    assert_eq!(slow, StatusCode::REQUEST_TIMEOUT);
}

#[test]
fn reqwest_fetches_from_a_netloop_server() {
    let body = in_task(async {
        let listener = netloop::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        netloop::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.expect("read the request");
                assert!(n > 0, "the client closed before its request ended");
                request.extend_from_slice(&buf[..n]);
            }
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello")
                .await
                .expect("write the response");
        });
        reqwest::get(format!("http://{addr}/"))
            .await
            .expect("GET")
            .text()
            .await
            .expect("body")
    });
    assert_eq!(body, "hello");
}
