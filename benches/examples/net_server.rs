//! One server of the network benchmarks (`benches/net/run.sh` runs them all).
//!
//! ```text
//! cargo run --release -p netloop-benches --example net_server -- \
//!     --runtime netloop|tokio-mt|tokio-ct-reuseport|smol|mio|futures-floor|monoio --mode echo|http \
//!     [--addr 127.0.0.1:0] [--threads 1] [--max-seconds 600]
//! ```
//!
//! It prints `listening ADDR` once the listener is bound, then serves until it is
//! killed, or until `--max-seconds` have passed (a safety net so that no server outlives
//! its benchmark). Every runtime gets `--threads` threads (workers, loops or
//! current-thread runtimes); the benchmark runs them all with one, under
//! `taskset -c 1`. The handlers are those of netloop's `echo` and `http_hello`
//! examples, shared by every runtime (`netloop_benches::net`).
//!
//! `monoio` (io_uring, issue 43's peer) is there only when built with the `monoio`
//! feature (`--features monoio`, Linux). netloop on io_uring is `--runtime netloop`
//! started with `NETLOOP_IO_DRIVER=io_uring` in the environment (run.sh's
//! `netloop-uring`): netloop's runtime reads that variable itself.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use netloop_benches::net::{Mode, futures_floor, mio_server, netloop_server};

#[cfg(all(feature = "monoio", target_os = "linux"))]
#[path = "../monoio_peer/net.rs"]
mod monoio_net;
#[path = "../smol_peer/net.rs"]
mod smol_net;
#[path = "../tokio_peer/net.rs"]
mod tokio_net;

const USAGE: &str = "usage: net_server --runtime netloop|tokio-mt|tokio-ct-reuseport|smol|mio|futures-floor|monoio --mode echo|http \
                     [--addr 127.0.0.1:0] [--threads 1] [--max-seconds 600]";

struct Args {
    runtime: String,
    mode: Mode,
    addr: SocketAddr,
    threads: usize,
    max_seconds: u64,
}

fn parse() -> Result<Args, String> {
    let mut runtime = None;
    let mut mode = None;
    let mut addr: SocketAddr = "127.0.0.1:0".parse().expect("valid address");
    let mut threads = 1;
    let mut max_seconds = 600;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--runtime" => runtime = Some(value()?),
            "--mode" => mode = Some(Mode::parse(&value()?).ok_or("--mode is echo or http")?),
            "--addr" => addr = value()?.parse().map_err(|e| format!("--addr: {e}"))?,
            "--threads" => threads = value()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--max-seconds" => max_seconds = value()?.parse().map_err(|e| format!("--max-seconds: {e}"))?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if !addr.ip().is_loopback() {
        return Err(format!("{addr} is not a loopback address"));
    }
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    Ok(Args {
        runtime: runtime.ok_or("--runtime is required")?,
        mode: mode.ok_or("--mode is required")?,
        addr,
        threads,
        max_seconds,
    })
}

fn on_listen(addr: SocketAddr) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening {addr}");
    let _ = out.flush();
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let max = Duration::from_secs(args.max_seconds);
    std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || {
            std::thread::sleep(max);
            eprintln!("net_server: --max-seconds reached, exiting");
            std::process::exit(0);
        })
        .expect("watchdog thread");
    let (addr, mode, threads) = (args.addr, args.mode, args.threads);
    let result = match args.runtime.as_str() {
        "netloop" => netloop_server(addr, mode, threads, on_listen),
        "tokio-mt" => tokio_net::multi_thread(addr, mode, threads, on_listen),
        "tokio-ct-reuseport" => tokio_net::current_thread_reuseport(addr, mode, threads, on_listen),
        "smol" => smol_net::server(addr, mode, threads, on_listen),
        #[cfg(all(feature = "monoio", target_os = "linux"))]
        "monoio" => monoio_net::server(addr, mode, threads, on_listen),
        #[cfg(not(all(feature = "monoio", target_os = "linux")))]
        "monoio" => Err(std::io::Error::other(
            "built without monoio: cargo build --release -p netloop-benches --example net_server --features monoio (Linux)",
        )),
        "mio" if threads == 1 => mio_server::run(addr, mode, on_listen),
        "mio" => Err(std::io::Error::other("the mio floor is single-threaded: --threads 1")),
        "futures-floor" if threads == 1 => futures_floor::run(addr, mode, on_listen),
        "futures-floor" => Err(std::io::Error::other(
            "the futures floor is single-threaded: --threads 1",
        )),
        other => {
            eprintln!("unknown runtime {other:?}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("net_server: {e}");
            ExitCode::FAILURE
        }
    }
}
