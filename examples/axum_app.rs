//! The application of the `axum_router` example: an axum `Router` with middleware,
//! served natively on netloop (no tokio runtime).
//!
//! The router is served by hyper-util's `auto` connection builder (HTTP/1.1 and HTTP/2)
//! with netloop's executor and timer, over netloop's `TcpStream`s seen through
//! `TokioIo`. Its middleware needs no tokio runtime: two `axum::middleware::from_fn`
//! functions (one numbers the responses, one rejects requests without the bearer token)
//! and tower-http's `SetResponseHeaderLayer`. (tower-http's `TimeoutLayer` would call
//! `tokio::time::sleep`: that one needs `tokio-compat`, see `tests/compat`.)

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use netloop::hyper_rt::{NetloopExecutor, NetloopTimer};
use netloop::net::{TcpListener, TcpStream, serve};
use netloop::task::JoinHandle;
use tower_http::set_header::SetResponseHeaderLayer;

/// The bearer token that `/admin` asks for.
pub const TOKEN: &str = "netloop-example-token";

/// The header in which [`number_responses`] numbers each response.
pub const REQUEST_NUMBER: &str = "x-request-number";

/// The example's routes and middleware:
///
/// - `GET /`: a greeting; `GET /hello/{name}`: a greeting by name;
///   `POST /echo`: the request's body back;
/// - `GET /admin`: only with `Authorization: Bearer <TOKEN>`, else 401 (the
///   [`require_token`] middleware, on this route only);
/// - every response, a 401 or a 404 as well, carries `x-request-number: N`
///   ([`number_responses`]) and `server: netloop` (tower-http's
///   `SetResponseHeaderLayer`).
pub fn app() -> Router {
    let admin = Router::new()
        .route("/admin", get(|| async { "Welcome, admin.\n" }))
        // `route_layer`: only requests that matched a route of this router meet the
        // check, so an unknown path stays a 404 rather than a 401.
        .route_layer(middleware::from_fn(require_token));
    Router::new()
        .route("/", get(|| async { "Hello from axum on netloop!\n" }))
        .route(
            "/hello/{name}",
            get(|Path(name): Path<String>| async move { format!("Hello, {name}!\n") }),
        )
        .route("/echo", post(|body: String| async move { body }))
        .merge(admin)
        .layer(middleware::from_fn_with_state(
            Arc::new(AtomicU64::new(0)),
            number_responses,
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::SERVER,
            HeaderValue::from_static("netloop"),
        ))
}

/// Middleware: rejects a request without `Authorization: Bearer <TOKEN>` with 401 and
/// `www-authenticate: Bearer`, and passes the others on.
pub async fn require_token(req: Request, next: Next) -> Response {
    let authorized = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        == Some(TOKEN);
    if authorized {
        next.run(req).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "A bearer token is required.\n",
        )
            .into_response()
    }
}

/// Middleware with state: numbers the responses from 1 in the `x-request-number` header.
pub async fn number_responses(State(count): State<Arc<AtomicU64>>, req: Request, next: Next) -> Response {
    let number = count.fetch_add(1, Ordering::Relaxed) + 1;
    let mut res = next.run(req).await;
    res.headers_mut().insert(REQUEST_NUMBER, HeaderValue::from(number));
    res
}

/// Serves `app` on every connection of `listener`, each connection on the event loop
/// the acceptor hands it to. Returns the acceptor task: abort it to stop accepting.
pub fn serve_axum(listener: TcpListener, app: Router) -> JoinHandle<()> {
    serve(listener, move |stream, peer| {
        serve_connection(stream, peer, app.clone())
    })
}

/// Serves one connection, HTTP/1.1 or HTTP/2 (prior knowledge), whichever the client
/// speaks.
async fn serve_connection(stream: TcpStream, peer: SocketAddr, app: Router) {
    let mut builder = auto::Builder::new(NetloopExecutor);
    builder.http1().timer(NetloopTimer);
    builder.http2().timer(NetloopTimer);
    let service = TowerToHyperService::new(app);
    if let Err(e) = builder.serve_connection(TokioIo::new(stream), service).await {
        eprintln!("{peer}: {e}");
    }
}
