//! What a short-lived multi-thread runtime costs from `build` to the end of its drop:
//! netloop with its loops started at `build` (the default, tokio's way), netloop with
//! each loop started by its first task (`eager_start(false)`, Netty's way), and tokio.
//! A test suite of `#[tokio::test(flavor = "multi_thread")]` pays this once per test.
//!
//! ```text
//! cargo run --release -p netloop-benches --example lifecycle_report [-- ROUNDS]
//! ```
//!
//! Each shape runs ITERS (100) whole lifecycles back to back, once per configuration in
//! every round, in a rotating order, after an untimed warm-up round. Figures are
//! printed, never asserted.

use std::time::{Duration, Instant};

use netloop_benches::report::{median_spread, rotated_rounds};

/// Worker threads of every runtime.
const WORKERS: usize = 2;
/// Lifecycles per timed sample.
const ITERS: usize = 100;

#[derive(Clone, Copy)]
enum Shape {
    /// `build`, then drop.
    Empty,
    /// `build`, `block_on` of one spawned task, drop.
    OneTask,
    /// `build`, `block_on` of one task per worker that each sleep 1 ms, drop.
    TaskPerWorker,
}

impl Shape {
    fn label(self) -> &'static str {
        match self {
            Shape::Empty => "build, drop",
            Shape::OneTask => "build, block_on(spawn), drop",
            Shape::TaskPerWorker => "build, one 1 ms sleep per worker, drop",
        }
    }
}

/// ITERS lifecycles of `shape` on runtime crate `$rt`, each runtime built by `$build`.
macro_rules! lifecycles {
    ($rt:ident, $shape:expr, $build:expr) => {{
        let started = Instant::now();
        for _ in 0..ITERS {
            let rt = $build;
            match $shape {
                Shape::Empty => {}
                Shape::OneTask => rt.block_on(async { $rt::spawn(async {}).await.unwrap() }),
                Shape::TaskPerWorker => rt.block_on(async {
                    let tasks: Vec<_> = (0..WORKERS)
                        .map(|_| $rt::spawn($rt::time::sleep(Duration::from_millis(1))))
                        .collect();
                    for t in tasks {
                        t.await.unwrap();
                    }
                }),
            }
            drop(rt);
        }
        started.elapsed()
    }};
}

fn netloop(shape: Shape, eager: bool) -> Duration {
    lifecycles!(
        netloop,
        shape,
        netloop::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .eager_start(eager)
            .enable_all()
            .build()
            .unwrap()
    )
}

fn tokio(shape: Shape) -> Duration {
    lifecycles!(
        tokio,
        shape,
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .enable_all()
            .build()
            .unwrap()
    )
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    let shapes = [Shape::Empty, Shape::OneTask, Shape::TaskPerWorker];
    let eager = |s| netloop(s, true);
    let lazy = |s| netloop(s, false);
    let times = rotated_rounds(rounds, &shapes, [&eager, &lazy, &tokio]);
    println!(
        "{WORKERS} workers; µs per lifecycle, median of {rounds} rounds of {ITERS}; spread = (max - min) / median.\n"
    );
    println!(
        "| shape | netloop (loops start at build) | netloop (`eager_start(false)`) | tokio | at build / tokio | lazy / tokio | spread |"
    );
    println!("|---|---|---|---|---|---|---|");
    let per = 1e3 / ITERS as f64;
    for (shape, times) in shapes.iter().zip(times) {
        let [(a, sa), (b, sb), (c, sc)] = times.map(median_spread);
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.0}% / {:.0}% / {:.0}% |",
            shape.label(),
            a * per,
            b * per,
            c * per,
            a / c,
            b / c,
            sa * 100.0,
            sb * 100.0,
            sc * 100.0
        );
    }
}
