//! A real hyper 1.x server on netloop: `cargo run -p netloop-examples --example hyper_server`,
//! then `curl http://127.0.0.1:3000/`.
//!
//! netloop provides hyper's `Executor` and `Timer` (`netloop::hyper_rt`); the socket is
//! a netloop `TcpStream` seen through `hyper_util::rt::TokioIo`.

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3000".to_string());
    let rt = netloop::runtime::Runtime::new()?;
    rt.block_on(async {
        let listener = netloop::net::TcpListener::bind(&addr).await?;
        println!("hyper on netloop listening on http://{}/", listener.local_addr()?);
        netloop_examples::serve_hyper(listener).await.ok();
        Ok(())
    })
}
