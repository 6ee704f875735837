//! An axum `Router` with middleware, natively on netloop (no tokio runtime):
//! `cargo run -p netloop-examples --example axum_router [ADDR]`, then
//!
//! ```sh
//! curl -i http://127.0.0.1:3000/
//! curl -i http://127.0.0.1:3000/hello/you
//! curl -i -d 'some text' http://127.0.0.1:3000/echo
//! curl -i http://127.0.0.1:3000/admin                                        # 401
//! curl -i -H 'Authorization: Bearer netloop-example-token' http://127.0.0.1:3000/admin
//! ```
//!
//! The router and its middleware are in `netloop_examples::axum_app`: two
//! `axum::middleware::from_fn` functions (one rejects `/admin` without the bearer token,
//! one numbers the responses) and tower-http's `SetResponseHeaderLayer`. hyper-util's
//! `auto` builder serves it with `netloop::hyper_rt::{NetloopExecutor, NetloopTimer}`
//! over netloop's `TcpStream`s in `TokioIo`. Ctrl-C stops it.

use netloop_examples::axum_app::{TOKEN, app, serve_axum};

#[netloop::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3000".to_string());
    let listener = netloop::net::TcpListener::bind(&addr).await?;
    let local = listener.local_addr()?;
    println!("axum on netloop listening on http://{local}/ (token for /admin: {TOKEN})");
    let server = serve_axum(listener, app());
    netloop::signal::ctrl_c().await?;
    server.abort();
    println!("stopped");
    Ok(())
}
