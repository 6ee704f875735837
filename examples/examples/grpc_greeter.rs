//! A gRPC service (tonic) natively on netloop, no tokio runtime:
//!
//! ```sh
//! cargo run -p netloop-examples --example grpc_greeter [ADDR]          # the server
//! cargo run -p netloop-examples --example grpc_greeter -- --call NAME [ADDR]  # a client
//! ```
//!
//! or call it with any gRPC client, given the `.proto` in `netloop_examples::greeter`
//! (`grpcurl -plaintext -proto greeter.proto -d '{"name":"you"}' 127.0.0.1:3002
//! helloworld.Greeter/SayHello`).
//!
//! The server is tonic's `server::Grpc` with prost's codec, behind hyper's HTTP/2 on
//! netloop's sockets; the client is tonic's `client::Grpc` over hyper-util's pooled
//! client with `netloop::hyper_rt::NetloopConnector`. Ctrl-C stops the server.

use netloop_examples::greeter::{GreeterClient, HelloRequest, serve_greeter};

#[netloop::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--call") {
        args.next();
        let name = args.next().unwrap_or_else(|| "netloop".to_string());
        let addr = args.next().unwrap_or_else(|| "127.0.0.1:3002".to_string());
        let mut client = GreeterClient::new(format!("http://{addr}").parse()?);
        let reply = client.say_hello(HelloRequest { name }).await?;
        println!("{}", reply.into_inner().message);
        return Ok(());
    }
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:3002".to_string());
    let listener = netloop::net::TcpListener::bind(&addr).await?;
    println!(
        "gRPC helloworld.Greeter on netloop listening on http://{}/",
        listener.local_addr()?
    );
    let server = serve_greeter(listener);
    netloop::signal::ctrl_c().await?;
    server.abort();
    println!("stopped");
    Ok(())
}
