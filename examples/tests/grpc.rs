//! The `grpc_greeter` example's service on netloop, called with tonic's client over
//! hyper-util's pooled HTTP/2 client and netloop's sockets: unary calls, an error
//! status, an unknown method, and calls from several tasks on one connection.

use std::time::Duration;

use hyper::http::uri::PathAndQuery;
use netloop::net::TcpListener;
use netloop_examples::greeter::{GreeterClient, HelloReply, HelloRequest, serve_greeter};
use tonic::Code;

fn runtime() -> netloop::runtime::Runtime {
    netloop_examples::two_loop_runtime()
}

/// Starts the example's server on a fresh loopback port and runs `check` against its
/// origin (`http://127.0.0.1:PORT`), within 30 s.
fn with_server<F: Future<Output = ()>>(check: impl FnOnce(hyper::Uri) -> F) {
    runtime().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("local address"))
            .parse()
            .expect("a URI");
        let server = serve_greeter(listener);
        netloop::time::timeout(Duration::from_secs(30), check(origin))
            .await
            .expect("the calls completed within 30 s");
        server.abort();
    });
}

fn hello(name: &str) -> HelloRequest {
    HelloRequest { name: name.to_string() }
}

#[test]
fn say_hello_answers_a_unary_call() {
    with_server(|origin| async move {
        let mut client = GreeterClient::new(origin);
        for name in ["netloop", "tonic"] {
            let reply = client.say_hello(hello(name)).await.expect("an OK status");
            assert_eq!(
                reply.into_inner(),
                HelloReply {
                    message: format!("Hello, {name}! (gRPC on netloop)")
                }
            );
        }
    });
}

#[test]
fn an_empty_name_is_invalid_argument_and_an_unknown_method_unimplemented() {
    with_server(|origin| async move {
        let mut client = GreeterClient::new(origin.clone());
        let status = client.say_hello(hello("")).await.expect_err("an error status");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(status.message(), "name must not be empty");

        // The same client still works after an error status.
        let reply = client.say_hello(hello("again")).await.expect("an OK status");
        assert_eq!(reply.into_inner().message, "Hello, again! (gRPC on netloop)");

        // A method the service does not have, through tonic's client directly.
        let channel = hyper_util::client::legacy::Client::builder(netloop::hyper_rt::NetloopExecutor)
            .http2_only(true)
            .build(netloop::hyper_rt::NetloopConnector::new());
        let mut grpc = tonic::client::Grpc::with_origin(channel, origin);
        grpc.ready().await.expect("a ready channel");
        let status = grpc
            .unary::<HelloRequest, HelloReply, _>(
                tonic::Request::new(hello("nobody")),
                PathAndQuery::from_static("/helloworld.Greeter/SayGoodbye"),
                tonic_prost::ProstCodec::default(),
            )
            .await
            .expect_err("UNIMPLEMENTED");
        assert_eq!(status.code(), Code::Unimplemented);
        assert_eq!(status.message(), "no method /helloworld.Greeter/SayGoodbye");
    });
}

#[test]
fn calls_from_several_tasks_share_one_http2_connection() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    runtime().block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("local address"));
        // The example's connection handler behind an acceptor that counts connections.
        let server = netloop::net::serve(listener, move |stream, peer| {
            counted.fetch_add(1, SeqCst);
            netloop_examples::greeter::serve_connection(stream, peer)
        });
        netloop::time::timeout(Duration::from_secs(30), async move {
            let client = GreeterClient::new(origin.parse().expect("a URI"));
            // A first call opens the connection; the next ones are streams on it, from
            // tasks on both loops.
            client.clone().say_hello(hello("first")).await.expect("an OK status");
            let calls: Vec<_> = (0..8)
                .map(|i| {
                    let mut client = client.clone();
                    netloop::spawn(async move {
                        let reply = client.say_hello(hello(&format!("task {i}"))).await;
                        reply.expect("an OK status").into_inner().message
                    })
                })
                .collect();
            for (i, call) in calls.into_iter().enumerate() {
                let message = call.await.expect("the task did not panic");
                assert_eq!(message, format!("Hello, task {i}! (gRPC on netloop)"));
            }
        })
        .await
        .expect("the calls completed within 30 s");
        server.abort();
    });
    assert_eq!(accepted.load(SeqCst), 1, "all nine calls went over one connection");
}
