//! The tokio-shaped HTTP server of `benches/net/spread.sh`: `accept` in a loop,
//! `spawn` per connection, the same source on netloop and on tokio's multi-thread
//! runtime (the accept loop below is one macro expanded once per runtime).
//!
//! ```text
//! cargo run --release -p netloop-benches --example accept_spawn -- \
//!     --runtime netloop|tokio [--workers 2] [--work-iters N] [--accept-in main|task] [--max-seconds S]
//! cargo run --release -p netloop-benches --example accept_spawn -- --calibrate 20
//! ```
//!
//! Every request is answered with the hello response of the network benchmarks
//! ([`netloop_benches::net::HttpConn`]). With `--work-iters N` each request first
//! hashes a 64-byte block N times: `--calibrate US` prints the N that costs about US
//! microseconds of CPU on this machine. `--accept-in main` runs the accept loop in
//! `block_on` (the body of `#[tokio::main]`), `task` in a spawned task. It prints
//! `listening ADDR` once bound and serves until killed or `--max-seconds` pass.

use std::hash::{DefaultHasher, Hasher};
use std::hint::black_box;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use netloop_benches::net::{HTTP_CHUNK, HttpConn, Next};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const USAGE: &str = "usage: accept_spawn --runtime netloop|tokio [--workers N] [--work-iters N] \
                     [--accept-in main|task] [--max-seconds S] | --calibrate MICROSECONDS";

/// About `iters` x 40 ns of CPU that the optimiser cannot remove.
fn burn(iters: u32, seed: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    let block = [black_box(seed.first().copied().unwrap_or(1)); 64];
    for i in 0..iters {
        h.write(&block);
        h.write_u32(i);
    }
    h.finish()
}

/// The hello handler, with `work_iters` of [`burn`] per request answered.
async fn http_work<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, work_iters: u32) {
    let mut conn = HttpConn::new();
    let mut chunk = [0u8; HTTP_CHUNK];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let next = conn.feed(&chunk[..n]);
        if next == Next::Abort {
            return;
        }
        if work_iters > 0 {
            let requests = conn.out.len() / netloop_benches::net::HTTP_RESPONSE.len();
            for _ in 0..requests {
                black_box(burn(work_iters, &chunk[..n]));
            }
        }
        if !conn.out.is_empty() {
            if stream.write_all(&conn.out).await.is_err() {
                return;
            }
            conn.out.clear();
        }
        if next == Next::Close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// The accept loop exactly as a tokio user writes it, for the runtime `$rt`.
macro_rules! accept_loop {
    ($rt:ident) => {
        pub async fn accept_loop(listener: $rt::net::TcpListener, work_iters: u32) {
            loop {
                let (socket, _) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        eprintln!("accept: {e}");
                        continue;
                    }
                };
                $rt::spawn(async move {
                    let _ = socket.set_nodelay(true);
                    super::http_work(socket, work_iters).await
                });
            }
        }
    };
}

mod on_netloop {
    accept_loop!(netloop);
}

mod on_tokio {
    accept_loop!(tokio);
}

struct Args {
    runtime: String,
    workers: usize,
    work_iters: u32,
    accept_in_task: bool,
    max_seconds: u64,
}

fn parse() -> Result<Option<Args>, String> {
    let mut args = Args {
        runtime: String::new(),
        workers: 2,
        work_iters: 0,
        accept_in_task: false,
        max_seconds: 600,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        match flag.as_str() {
            "--runtime" => args.runtime = value.clone(),
            "--workers" => args.workers = number()? as usize,
            "--work-iters" => args.work_iters = number()? as u32,
            "--max-seconds" => args.max_seconds = number()?,
            "--accept-in" => match value.as_str() {
                "main" => args.accept_in_task = false,
                "task" => args.accept_in_task = true,
                _ => return Err(format!("--accept-in main|task, not {value}")),
            },
            "--calibrate" => {
                println!("{}", calibrate(Duration::from_micros(number()?)));
                return Ok(None);
            }
            _ => return Err(USAGE.to_string()),
        }
    }
    if args.workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    Ok(Some(args))
}

/// The iterations of [`burn`] that take about `target`: the fastest of 50 timings of
/// 100,000 iterations (the one least disturbed by the rest of the machine).
fn calibrate(target: Duration) -> u32 {
    const PROBE: u32 = 100_000;
    let fastest = (0..50)
        .map(|_| {
            let t = Instant::now();
            black_box(burn(PROBE, b"x"));
            t.elapsed()
        })
        .min()
        .expect("timed at least once");
    let per_iter = fastest.as_secs_f64() / f64::from(PROBE);
    (target.as_secs_f64() / per_iter).round().max(1.0) as u32
}

fn listening(addr: SocketAddr) {
    println!("listening {addr}");
}

fn run_netloop(args: &Args) -> std::io::Result<()> {
    let rt = netloop::runtime::Builder::new_multi_thread()
        .worker_threads(args.workers)
        .enable_all()
        .build()?;
    let work = args.work_iters;
    let in_task = args.accept_in_task;
    rt.block_on(async move {
        let listener = netloop::net::TcpListener::bind("127.0.0.1:0").await?;
        listening(listener.local_addr()?);
        if in_task {
            netloop::spawn(on_netloop::accept_loop(listener, work)).await.ok();
        } else {
            on_netloop::accept_loop(listener, work).await;
        }
        Ok(())
    })
}

fn run_tokio(args: &Args) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.workers)
        .enable_all()
        .build()?;
    let work = args.work_iters;
    let in_task = args.accept_in_task;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        listening(listener.local_addr()?);
        if in_task {
            tokio::spawn(on_tokio::accept_loop(listener, work)).await.ok();
        } else {
            on_tokio::accept_loop(listener, work).await;
        }
        Ok(())
    })
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(Some(args)) => args,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let max = Duration::from_secs(args.max_seconds);
    std::thread::spawn(move || {
        std::thread::sleep(max);
        eprintln!("accept_spawn: --max-seconds reached, exiting");
        std::process::exit(0);
    });
    let result = match args.runtime.as_str() {
        "netloop" => run_netloop(&args),
        "tokio" => run_tokio(&args),
        other => {
            eprintln!("unknown runtime {other:?}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("accept_spawn: {e}");
            ExitCode::FAILURE
        }
    }
}
