//! The gRPC service of the `grpc_greeter` example, and a client for it: tonic natively
//! on netloop (no tokio runtime, no `tokio-compat`).
//!
//! tonic's `transport` (its own server and `Channel`) is left out: it runs on tokio's
//! sockets and timers. What is used is tonic's core, which is runtime-free: the codec
//! (`tonic_prost::ProstCodec`), `tonic::server::Grpc` to answer a call and
//! `tonic::client::Grpc` to make one. The server is hyper's HTTP/2 connection on
//! netloop's sockets with netloop's executor; the client is hyper-util's pooled client,
//! HTTP/2 only, with `netloop::hyper_rt::NetloopConnector`.
//!
//! The messages and the service are written by hand, as `tonic-build` would generate
//! them from this `.proto` (so no `protoc` and no build script are needed):
//!
//! ```proto
//! syntax = "proto3";
//! package helloworld;
//! service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }
//! message HelloRequest { string name = 1; }
//! message HelloReply { string message = 1; }
//! ```

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::net::SocketAddr;

use hyper::body::Incoming;
use hyper::http::uri::PathAndQuery;
use hyper::{Request, Response, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioIo;
use netloop::hyper_rt::{NetloopConnector, NetloopExecutor, NetloopTimer};
use netloop::net::{TcpListener, TcpStream, serve};
use netloop::task::JoinHandle;
use tonic::Status;
use tonic::server::{Grpc, UnaryService};
use tonic_prost::ProstCodec;

/// `helloworld.HelloRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloRequest {
    #[prost(string, tag = "1")]
    pub name: String,
}

/// `helloworld.HelloReply`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloReply {
    #[prost(string, tag = "1")]
    pub message: String,
}

/// The path of `helloworld.Greeter/SayHello`.
pub const SAY_HELLO: &str = "/helloworld.Greeter/SayHello";

/// `SayHello`: greets the request's name; an empty name is `INVALID_ARGUMENT`.
#[derive(Debug, Clone, Copy)]
pub struct SayHello;

impl UnaryService<HelloRequest> for SayHello {
    type Response = HelloReply;
    type Future = Ready<Result<tonic::Response<HelloReply>, Status>>;

    fn call(&mut self, request: tonic::Request<HelloRequest>) -> Self::Future {
        let name = request.into_inner().name;
        ready(if name.is_empty() {
            Err(Status::invalid_argument("name must not be empty"))
        } else {
            Ok(tonic::Response::new(HelloReply {
                message: format!("Hello, {name}! (gRPC on netloop)"),
            }))
        })
    }
}

/// The `Greeter` service as a hyper service: routes a call by its path; an unknown
/// method is `UNIMPLEMENTED`.
pub async fn greeter(req: Request<Incoming>) -> Result<Response<tonic::body::Body>, Infallible> {
    Ok(match req.uri().path() {
        SAY_HELLO => Grpc::new(ProstCodec::default()).unary(SayHello, req).await,
        path => Status::unimplemented(format!("no method {path}")).into_http(),
    })
}

/// Serves [`greeter`] over HTTP/2 on every connection of `listener`, each connection on
/// the event loop the acceptor hands it to. Returns the acceptor task: abort it to stop
/// accepting.
pub fn serve_greeter(listener: TcpListener) -> JoinHandle<()> {
    serve(listener, serve_connection)
}

/// Serves [`greeter`] over HTTP/2 on one connection, until the client closes it.
pub async fn serve_connection(stream: TcpStream, peer: SocketAddr) {
    let mut builder = hyper::server::conn::http2::Builder::new(NetloopExecutor);
    builder.timer(NetloopTimer);
    let conn = builder.serve_connection(TokioIo::new(stream), hyper::service::service_fn(greeter));
    if let Err(e) = conn.await {
        eprintln!("{peer}: {e}");
    }
}

/// hyper-util's pooled client, HTTP/2 only, over netloop's sockets: what tonic's
/// `Channel` is on tokio.
pub type Channel = Client<NetloopConnector, tonic::body::Body>;

/// A `Greeter` client, as `tonic-build` would generate it, over a [`Channel`].
#[derive(Debug, Clone)]
pub struct GreeterClient {
    inner: tonic::client::Grpc<Channel>,
}

impl GreeterClient {
    /// A client for the server at `origin` (`http://host:port`). It connects on its
    /// first call and keeps the connection for the next ones.
    pub fn new(origin: Uri) -> GreeterClient {
        let channel: Channel = Client::builder(NetloopExecutor)
            .timer(NetloopTimer)
            .pool_timer(NetloopTimer)
            .http2_only(true)
            .build(NetloopConnector::new());
        GreeterClient {
            inner: tonic::client::Grpc::with_origin(channel, origin),
        }
    }

    /// Calls `SayHello`.
    pub async fn say_hello(
        &mut self,
        request: impl tonic::IntoRequest<HelloRequest>,
    ) -> Result<tonic::Response<HelloReply>, Status> {
        self.inner
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("the channel is not ready: {e}")))?;
        self.inner
            .unary(
                request.into_request(),
                PathAndQuery::from_static(SAY_HELLO),
                ProstCodec::default(),
            )
            .await
    }
}
