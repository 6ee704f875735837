//! The load client of the network benchmarks (`benches/net/run.sh` drives it).
//!
//! ```text
//! cargo run --release -p netloop-benches --example net_client -- --addr 127.0.0.1:PORT \
//!     --mode echo|http [--size 64] [--connections 64] [--seconds 10] [--rate 50000] \
//!     [--sleep [--tick-us 100]]
//! ```
//!
//! Echo mode sends `--size` bytes and expects them back; HTTP mode sends
//! `GET / HTTP/1.1` and expects the "Hello, world!" response. Without `--rate` every
//! connection runs a closed loop (next request as soon as the reply is in); with it,
//! the client sends that many requests per second in all, each when it is due. The
//! client spins (polls without sleeping: it has a core of its own); `--sleep` makes it
//! block in `epoll_wait` instead, the rate then paced by a timerfd every `--tick-us`
//! (see `netloop_benches::net::client`). It prints one line:
//!
//! ```text
//! requests=N total=N seconds=S rps=R p50_us=.. p99_us=.. p999_us=.. max_backlog=.. late=..
//! ```

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use netloop_benches::net::{CONNECTIONS, HTTP_REQUEST, HTTP_RESPONSE, Mode, client};

const USAGE: &str = "usage: net_client --addr 127.0.0.1:PORT --mode echo|http [--size 64] [--connections 64] \
                     [--seconds 10] [--rate R] [--sleep [--tick-us 100]]";

fn parse() -> Result<client::Config, String> {
    let mut addr: Option<SocketAddr> = None;
    let mut mode = None;
    let mut size = 64usize;
    let mut connections = CONNECTIONS;
    let mut seconds = 10.0f64;
    let mut rate = None;
    let mut tick_us = 100u64;
    let mut spin = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => addr = Some(value()?.parse().map_err(|e| format!("--addr: {e}"))?),
            "--mode" => mode = Some(Mode::parse(&value()?).ok_or("--mode is echo or http")?),
            "--size" => size = value()?.parse().map_err(|e| format!("--size: {e}"))?,
            "--connections" => connections = value()?.parse().map_err(|e| format!("--connections: {e}"))?,
            "--seconds" => seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--rate" => rate = Some(value()?.parse::<f64>().map_err(|e| format!("--rate: {e}"))?),
            "--tick-us" => tick_us = value()?.parse().map_err(|e| format!("--tick-us: {e}"))?,
            "--sleep" => spin = false,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let addr = addr.ok_or("--addr is required")?;
    if !addr.ip().is_loopback() {
        return Err(format!("{addr} is not a loopback address"));
    }
    if !(seconds > 0.0 && seconds <= 600.0) {
        return Err("--seconds must be in (0, 600]".into());
    }
    if rate.is_some_and(|r| r <= 0.0) || size == 0 || connections == 0 || tick_us == 0 {
        return Err("--rate, --size, --connections and --tick-us must be positive".into());
    }
    let (request, reply) = match mode.ok_or("--mode is required")? {
        Mode::Echo => {
            let payload: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
            (payload.clone(), payload)
        }
        Mode::Http => (HTTP_REQUEST.to_vec(), HTTP_RESPONSE.to_vec()),
    };
    Ok(client::Config {
        addr,
        connections,
        duration: Duration::from_secs_f64(seconds),
        request,
        reply,
        rate,
        tick: Duration::from_micros(tick_us),
        spin,
    })
}

fn main() -> ExitCode {
    let config = match parse() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match client::run(&config) {
        Ok(report) => {
            println!(
                "requests={} total={} seconds={:.3} rps={:.1} p50_us={} p99_us={} p999_us={} max_backlog={} late={}",
                report.completed,
                report.total,
                report.elapsed.as_secs_f64(),
                report.rate(),
                report.latency_us(0.5),
                report.latency_us(0.99),
                report.latency_us(0.999),
                report.max_backlog,
                report.late,
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("net_client: {e}");
            ExitCode::FAILURE
        }
    }
}
