//! A hyper client request against the hyper example server returns 200.

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
