//! The cost of tokio's tracing instrumentation (`--cfg tokio_unstable`, the `tracing`
//! feature) with tokio-console's layer installed, in three shapes: spawning and joining
//! tasks, filing and cancelling a timer, and locking a `tokio::sync::Mutex`. Built once against netloop
//! (this workspace's [patch]) and once against tokio by `benches/tracing-cost.sh`,
//! which prints the ratios; docs/observability.md has the figures.
//!
//! `tracing_cost [--console]`: without `--console` no subscriber is installed (the
//! instrumentation's callsites are disabled), with it console-subscriber's layer is.
//! Prints one line per shape: `shape nanoseconds-per-operation` (best of 5 runs).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing_subscriber::prelude::*;

const SPAWNS: usize = 20_000;
const SLEEPS: usize = 100_000;
const LOCKS: usize = 200_000;

fn main() {
    if std::env::args().any(|a| a == "--console") {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let console = console_subscriber::ConsoleLayer::builder()
            .server_addr(([127, 0, 0, 1], port))
            .spawn();
        tracing_subscriber::registry().with(console).init();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    for (shape, ops) in [("spawn", SPAWNS), ("sleep", SLEEPS), ("mutex", LOCKS)] {
        let best = (0..5)
            .map(|_| rt.block_on(rt.spawn(run(shape))).expect("the shape's task"))
            .min()
            .expect("five runs");
        println!("{shape} {:.0}", best.as_nanos() as f64 / ops as f64);
    }
}

/// One run of `shape`, on the runtime's loop, timed.
async fn run(shape: &str) -> Duration {
    let start = Instant::now();
    match shape {
        "spawn" => {
            let handles: Vec<_> = (0..SPAWNS).map(|i| tokio::spawn(async move { i })).collect();
            for h in handles {
                std::hint::black_box(h.await.expect("a task"));
            }
        }
        "sleep" => {
            // A timer made, filed by its first poll and cancelled by its drop: what an
            // idle timeout costs when the request comes first.
            for _ in 0..SLEEPS {
                let mut sleep = std::pin::pin!(tokio::time::sleep(Duration::from_secs(1)));
                std::future::poll_fn(|cx| {
                    assert!(sleep.as_mut().poll(cx).is_pending());
                    std::task::Poll::Ready(())
                })
                .await;
            }
        }
        _ => {
            let lock = Arc::new(tokio::sync::Mutex::new(0u64));
            for _ in 0..LOCKS {
                *lock.lock().await += 1;
            }
            std::hint::black_box(*lock.lock().await);
        }
    }
    start.elapsed()
}
