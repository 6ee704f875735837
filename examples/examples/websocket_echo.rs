//! A websocket echo server, natively on netloop (no tokio runtime):
//! `cargo run -p netloop-examples --example websocket_echo [ADDR]`, then connect any
//! websocket client to `ws://127.0.0.1:3001/` (for instance `websocat`): each text or
//! binary message comes back as it was sent.
//!
//! The server (`netloop_examples::websocket`) is tokio-tungstenite's `accept_async` over
//! netloop's `TcpStream`s: tokio-tungstenite needs only tokio's I/O traits, which
//! netloop's sockets implement. Ctrl-C stops it.

use netloop_examples::websocket::serve_websocket_echo;

#[netloop::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3001".to_string());
    let listener = netloop::net::TcpListener::bind(&addr).await?;
    println!(
        "websocket echo on netloop listening on ws://{}/",
        listener.local_addr()?
    );
    let server = serve_websocket_echo(listener);
    netloop::signal::ctrl_c().await?;
    server.abort();
    println!("stopped");
    Ok(())
}
