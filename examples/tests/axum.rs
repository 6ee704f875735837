//! The `axum_router` example's application on netloop, driven by hyper-util's pooled
//! client over netloop's sockets: routes, both middleware paths (a 401 without the
//! token, the handler with it), the headers the layers add, and HTTP/2 on the same port.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{AUTHORIZATION, SERVER, WWW_AUTHENTICATE};
use hyper::{HeaderMap, Method, Request, StatusCode, Version};
use hyper_util::client::legacy::Client;
use netloop::hyper_rt::{NetloopConnector, NetloopExecutor, NetloopTimer};
use netloop::net::TcpListener;
use netloop_examples::axum_app::{REQUEST_NUMBER, TOKEN, app, serve_axum};

type HttpClient = Client<NetloopConnector, Full<Bytes>>;

fn runtime() -> netloop::runtime::Runtime {
    netloop_examples::two_loop_runtime()
}

fn client(http2_only: bool) -> HttpClient {
    Client::builder(NetloopExecutor)
        .timer(NetloopTimer)
        .pool_timer(NetloopTimer)
        .http2_only(http2_only)
        .build(NetloopConnector::new())
}

/// The answer to one request: its status, headers, version and body.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    version: Version,
    body: String,
}

impl Answer {
    fn header(&self, name: impl hyper::header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().expect("an ASCII header"))
    }
}

async fn send(client: &HttpClient, req: Request<Full<Bytes>>) -> Answer {
    let res = client.request(req).await.expect("a response");
    let (parts, body) = res.into_parts();
    let body = body.collect().await.expect("the whole body").to_bytes();
    Answer {
        status: parts.status,
        headers: parts.headers,
        version: parts.version,
        body: String::from_utf8(body.to_vec()).expect("a UTF-8 body"),
    }
}

fn get(uri: String, authorization: Option<&str>) -> Request<Full<Bytes>> {
    let mut req = Request::get(uri);
    if let Some(value) = authorization {
        req = req.header(AUTHORIZATION, value);
    }
    req.body(Full::default()).expect("a request")
}

/// Starts the example's server on a fresh loopback port of the current runtime and runs
/// `check` against its base URL (`http://127.0.0.1:PORT`), within 30 s.
fn with_server<F: Future<Output = ()>>(check: impl FnOnce(String) -> F) {
    runtime().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("local address"));
        let server = serve_axum(listener, app());
        netloop::time::timeout(Duration::from_secs(30), check(base))
            .await
            .expect("the requests completed within 30 s");
        server.abort();
    });
}

#[test]
fn the_router_answers_and_its_layers_mark_every_response() {
    with_server(|base| async move {
        let client = client(false);
        let answers = [
            send(&client, get(format!("{base}/"), None)).await,
            send(&client, get(format!("{base}/hello/netloop"), None)).await,
            send(
                &client,
                Request::builder()
                    .method(Method::POST)
                    .uri(format!("{base}/echo"))
                    .body(Full::new(Bytes::from_static(b"a body sent over netloop")))
                    .expect("a request"),
            )
            .await,
            send(&client, get(format!("{base}/no/such/route"), None)).await,
        ];
        let seen: Vec<(StatusCode, &str)> = answers.iter().map(|a| (a.status, a.body.as_str())).collect();
        assert_eq!(
            seen,
            [
                (StatusCode::OK, "Hello from axum on netloop!\n"),
                (StatusCode::OK, "Hello, netloop!\n"),
                (StatusCode::OK, "a body sent over netloop"),
                (StatusCode::NOT_FOUND, ""),
            ]
        );
        for (n, answer) in answers.iter().enumerate() {
            assert_eq!(answer.version, Version::HTTP_11);
            // tower-http's SetResponseHeaderLayer, on a 404 as well.
            assert_eq!(answer.header(SERVER), Some("netloop"));
            // The from_fn_with_state middleware: one number per request, in order.
            assert_eq!(answer.header(REQUEST_NUMBER), Some((n + 1).to_string().as_str()));
        }
    });
}

#[test]
fn the_token_middleware_rejects_without_the_token_and_passes_with_it() {
    with_server(|base| async move {
        let client = client(false);
        let admin = format!("{base}/admin");

        // No header, a wrong token, the token without its `Bearer` scheme.
        for authorization in [None, Some("Bearer wrong-token"), Some(TOKEN)] {
            let rejected = send(&client, get(admin.clone(), authorization)).await;
            assert_eq!(rejected.status, StatusCode::UNAUTHORIZED, "with {authorization:?}");
            assert_eq!(rejected.header(WWW_AUTHENTICATE), Some("Bearer"));
            assert_eq!(rejected.body, "A bearer token is required.\n");
            // The outer layers still mark a rejected request's response.
            assert_eq!(rejected.header(SERVER), Some("netloop"));
            assert!(rejected.header(REQUEST_NUMBER).is_some());
        }

        let bearer = format!("Bearer {TOKEN}");
        let admitted = send(&client, get(admin.clone(), Some(&bearer))).await;
        assert_eq!(admitted.status, StatusCode::OK);
        assert_eq!(admitted.body, "Welcome, admin.\n");
        assert_eq!(admitted.header(SERVER), Some("netloop"));
        assert_eq!(admitted.header(REQUEST_NUMBER), Some("4"));

        // `route_layer`: a path no route matches is a 404, not a 401.
        let unknown = send(&client, get(format!("{admin}/elsewhere"), None)).await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    });
}

#[test]
fn the_router_speaks_http2_on_the_same_port() {
    with_server(|base| async move {
        let client = client(true);
        let bearer = format!("Bearer {TOKEN}");
        // Both requests go over one HTTP/2 connection, as two streams at once.
        let (public, admin) = futures::join!(
            send(&client, get(format!("{base}/hello/h2"), None)),
            send(&client, get(format!("{base}/admin"), Some(&bearer))),
        );
        for answer in [&public, &admin] {
            assert_eq!(answer.version, Version::HTTP_2);
            assert_eq!(answer.status, StatusCode::OK);
            assert_eq!(answer.header(SERVER), Some("netloop"));
        }
        assert_eq!(public.body, "Hello, h2!\n");
        assert_eq!(admin.body, "Welcome, admin.\n");
    });
}
