//! hyper's clients against hyper servers on netloop: a connection of its own, and
//! hyper-util's pooled client through `NetloopConnector`.

use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use netloop::net::{TcpListener, TcpStream};

#[test]
fn hyper_client_gets_200_from_the_hyper_example() {
    let rt = netloop::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let body = rt.block_on(async {
        netloop::time::timeout(Duration::from_secs(10), async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = netloop_examples::serve_hyper(listener);

            let stream = TcpStream::connect(addr).await.unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .unwrap();
            netloop::spawn(async move {
                let _ = conn.await;
            });
            let mut bodies = vec![];
            // Two requests on one keep-alive connection. hyper's `SendRequest` takes a
            // request only once the connection is ready for it: after a response, the
            // connection task may not yet have gone back to idle, and a request sent
            // then fails with `Canceled` ("connection was not ready").
            for _ in 0..2 {
                sender
                    .ready()
                    .await
                    .expect("the connection is ready for another request");
                let req = hyper::Request::builder()
                    .uri(format!("http://{addr}/"))
                    .header(hyper::header::HOST, addr.to_string())
                    .body(Empty::<Bytes>::new())
                    .unwrap();
                let res = sender.send_request(req).await.unwrap();
                assert_eq!(res.status(), 200);
                bodies.push(res.into_body().collect().await.unwrap().to_bytes());
            }
            server.abort();
            bodies
        })
        .await
        .expect("the request completed within 10 s")
    });
    assert_eq!(body, vec![Bytes::from_static(b"Hello from netloop!"); 2]);
}

#[test]
fn a_pooled_client_reuses_one_netloop_connection() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    use hyper::service::service_fn;
    use hyper_util::client::legacy::Client;
    use netloop::hyper_rt::{NetloopConnector, NetloopExecutor, NetloopTimer};

    // One loop: a connection whose response was read returns to the pool (its task
    // runs) before a new connection could finish connecting, so reuse is certain; on
    // several loops the pool may race a second connect against the return.
    let rt = netloop::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    let statuses = rt.block_on(async move {
        netloop::time::timeout(Duration::from_secs(10), async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = netloop::spawn(async move {
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    counted.fetch_add(1, SeqCst);
                    netloop::spawn(async move {
                        let service = service_fn(|_req| async {
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(http_body_util::Full::new(
                                Bytes::from_static(b"pooled"),
                            )))
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
            let client: Client<NetloopConnector, Empty<Bytes>> = Client::builder(NetloopExecutor)
                .timer(NetloopTimer)
                .pool_timer(NetloopTimer)
                .build(NetloopConnector::new());
            let mut statuses = vec![];
            for _ in 0..3 {
                let res = client.get(format!("http://{addr}/").parse().unwrap()).await.unwrap();
                statuses.push(res.status());
                assert_eq!(res.into_body().collect().await.unwrap().to_bytes(), "pooled");
            }
            let refused = client.get("https://127.0.0.1/".parse().unwrap()).await.unwrap_err();
            assert!(refused.is_connect(), "{refused:?}");
            server.abort();
            statuses
        })
        .await
        .expect("the requests completed within 10 s")
    });
    assert_eq!(statuses, vec![hyper::StatusCode::OK; 3]);
    assert_eq!(
        accepted.load(SeqCst),
        1,
        "the pool kept one connection for all three requests"
    );
}
