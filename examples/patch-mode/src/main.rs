//! The application's HTTP server, for `benches/patch-mode/run.sh`:
//!
//! ```sh
//! netloop-patch-mode-app [PORT] [WORKERS]
//! ```
//!
//! Serves the router of the library on 127.0.0.1:PORT (default 8092) with WORKERS worker
//! threads (default 1) until killed.

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(8092);
    let workers: usize = args.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?
        .block_on(async {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            println!("serving on {}", listener.local_addr()?);
            netloop_patch_mode_app::serve_http(listener).await
        })
}
