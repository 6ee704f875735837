//! Runs every runtime shape (tokio's `rt_multi_threaded` benches, see
//! `benches/runtime.rs`) on netloop, tokio and smol, each a multi-thread runtime with 2
//! workers, without criterion, and prints markdown tables: the median time per
//! iteration of each, the ratios netloop / tokio and netloop / smol (below 1: netloop
//! faster), and the spread.
//!
//! ```text
//! cargo run --release -p netloop-benches --example runtime_report [-- RUNS]
//! ```
//!
//! ```text
//! # One runtime on one shape, ITERS (default 500) iterations back to back, for a
//! # profiler (`perf record -g -- target/.../runtime_report --only netloop ping_pong`):
//! cargo run --release -p netloop-benches --example runtime_report -- --only RUNTIME SHAPE [ITERS]
//! ```
//!
//! RUNS (default 50) timed iterations per shape and runtime, taken in 5 rounds so that
//! a slow patch of a shared machine hits all three runtimes alike: in each round every
//! runtime, in a rotating order, runs one untimed warm-up iteration and then RUNS / 5
//! timed ones back to back. The three runtimes live for the whole run (an idle one
//! blocks its threads and uses no CPU). The figures are reported, never asserted; the
//! issue's target is netloop at most 0.5x tokio's time on each shape.

use std::time::{Duration, Instant};

use netloop_benches::runtime::{NetloopRuntime, RuntimePeer, Shape, WORKERS};

#[path = "../smol_peer/runtime.rs"]
mod smol_runtime;
#[path = "../tokio_peer/runtime.rs"]
mod tokio_runtime;

/// Rounds each measurement is split into.
const ROUNDS: usize = 5;
/// The issue's target for netloop's time as a fraction of tokio's.
const TARGET: f64 = 0.5;

/// Sorted timed iterations of one runtime on one shape.
struct Samples {
    times: Vec<Duration>,
}

impl Samples {
    fn median(&self) -> Duration {
        self.times[self.times.len() / 2]
    }

    fn quantile(&self, q: f64) -> Duration {
        let i = ((self.times.len() - 1) as f64 * q).round() as usize;
        self.times[i]
    }
}

/// `d` in µs below 10 ms, else in ms.
fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 10_000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.1} ms", us / 1e3)
    }
}

/// The peer named `name` (`netloop`, `tokio` or `smol`).
fn peer(name: &str) -> Box<dyn RuntimePeer> {
    match name {
        "netloop" => Box::new(NetloopRuntime::new().expect("netloop runtime")),
        "tokio" => Box::new(tokio_runtime::TokioRuntime::new()),
        "smol" => Box::new(smol_runtime::SmolRuntime::new()),
        other => panic!("unknown runtime {other:?}: netloop, tokio or smol"),
    }
}

/// `--only RUNTIME SHAPE [ITERS]`: one peer, one shape, for a profiler.
fn only(args: &[String]) {
    let [runtime, shape, rest @ ..] = args else {
        panic!("usage: runtime_report --only RUNTIME SHAPE [ITERS]");
    };
    let shape = Shape::ALL
        .into_iter()
        .find(|s| s.name() == shape)
        .unwrap_or_else(|| panic!("unknown shape {shape:?}"));
    let iters: usize = rest
        .first()
        .map_or(500, |a| a.parse().expect("ITERS must be an integer"));
    let mut peer = peer(runtime);
    peer.run(shape);
    let before = peer.counters();
    let mut times: Vec<Duration> = (0..iters.max(1)).map(|_| peer.run(shape)).collect();
    let after = peer.counters();
    times.sort();
    let samples = Samples { times };
    println!(
        "{runtime} {}: median {} over {} iterations",
        shape.name(),
        fmt(samples.median()),
        samples.times.len()
    );
    for ((name, b), (_, a)) in before.iter().zip(&after) {
        println!(
            "  {name}: {:.1} per iteration",
            (a - b) as f64 / samples.times.len() as f64
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--only") {
        return only(&args[1..]);
    }
    let runs: usize = args
        .first()
        .map(|a| a.parse().expect("RUNS must be a positive integer"))
        .unwrap_or(50)
        .max(ROUNDS);
    let per_round = runs.div_ceil(ROUNDS);
    let began = Instant::now();

    let mut peers: Vec<Box<dyn RuntimePeer>> = ["netloop", "tokio", "smol"].into_iter().map(peer).collect();
    let names: Vec<&'static str> = peers.iter().map(|p| p.name()).collect();

    // results[shape][peer]
    let mut results: Vec<Vec<Samples>> = Vec::new();
    for shape in Shape::ALL {
        let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(per_round * ROUNDS); peers.len()];
        for round in 0..ROUNDS {
            for k in 0..peers.len() {
                let p = (round + k) % peers.len();
                let peer = &mut peers[p];
                peer.run(shape);
                for _ in 0..per_round {
                    times[p].push(peer.run(shape));
                }
            }
        }
        results.push(
            times
                .into_iter()
                .map(|mut t| {
                    t.sort();
                    Samples { times: t }
                })
                .collect(),
        );
        eprintln!("{}: done", shape.name());
    }
    drop(peers);

    let n = per_round * ROUNDS;
    println!(
        "Multi-thread runtimes with {WORKERS} workers each; median of {n} iterations per shape and runtime \
         ({ROUNDS} rounds of one warm-up and {per_round} timed iterations, runtimes interleaved); \
         ratio = netloop time / peer time (below 1: netloop faster). Target: netloop/tokio <= {TARGET}. \
         Took {:.0} s.\n",
        began.elapsed().as_secs_f64()
    );
    println!(
        "| shape | one iteration | {} | {} | {} | netloop/tokio | netloop/smol | netloop/tokio <= {TARGET}? |",
        names[0], names[1], names[2]
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (shape, row) in Shape::ALL.iter().zip(&results) {
        let [netloop, tokio, smol] = [&row[0], &row[1], &row[2]];
        let vs_tokio = netloop.median().as_secs_f64() / tokio.median().as_secs_f64();
        let vs_smol = netloop.median().as_secs_f64() / smol.median().as_secs_f64();
        println!(
            "| {} | {} | {} | {} | {} | {vs_tokio:.2} | {vs_smol:.2} | {} |",
            shape.name(),
            shape.summary(),
            fmt(netloop.median()),
            fmt(tokio.median()),
            fmt(smol.median()),
            if vs_tokio <= TARGET { "yes" } else { "no" },
        );
    }
    println!("\nSpread, p10 / median / p90 per iteration:\n");
    println!("| shape | {} | {} | {} |", names[0], names[1], names[2]);
    println!("|---|---|---|---|");
    for (shape, row) in Shape::ALL.iter().zip(&results) {
        let cells: Vec<String> = row
            .iter()
            .map(|s| {
                format!(
                    "{} / {} / {}",
                    fmt(s.quantile(0.1)),
                    fmt(s.median()),
                    fmt(s.quantile(0.9))
                )
            })
            .collect();
        println!("| {} | {} |", shape.name(), cells.join(" | "));
    }
}
