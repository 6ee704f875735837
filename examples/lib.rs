//! Shared code of the examples, each used by its example program and by its test:
//!
//! - the hyper service of `hyper_server` (here);
//! - [`axum_app`]: the axum `Router` with middleware of `axum_router`;
//! - [`websocket`]: the echo server of `websocket_echo` (tokio-tungstenite);
//! - [`greeter`]: the gRPC service and client of `grpc_greeter` (tonic).
//!
//! All of them run natively on netloop, with no tokio runtime.

pub mod axum_app;
pub mod greeter;
pub mod websocket;

use std::convert::Infallible;
use std::net::SocketAddr;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use netloop::hyper_rt::NetloopTimer;
use netloop::net::{TcpListener, serve};

/// Answers every request with "Hello from netloop!".
pub async fn hello(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(b"Hello from netloop!"))))
}

/// Serves `hello` over HTTP/1.1 on every connection of `listener`, each connection on
/// the event loop the acceptor hands it to. Returns the acceptor task.
pub fn serve_hyper(listener: TcpListener) -> netloop::task::JoinHandle<()> {
    serve(listener, |stream, peer: SocketAddr| async move {
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(NetloopTimer)
            .serve_connection(TokioIo::new(stream), hyper::service::service_fn(hello));
        if let Err(e) = conn.await {
            eprintln!("{peer}: {e}");
        }
    })
}

/// The runtime the examples' tests serve and call on: two loops, so a client task and
/// the connection it talks to may sit on different threads, as in production.
pub fn two_loop_runtime() -> netloop::runtime::Runtime {
    netloop::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a netloop runtime")
}
