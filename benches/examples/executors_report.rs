//! The two executors besides the loops, on netloop and tokio from the same source
//! (`benches/executor_shapes.rs`), 2 workers each, runtimes alternated, median of 9
//! rounds: 10,000 `spawn_blocking` calls awaited, and 100,000 `LocalSet` tasks that
//! yield once, spawned inside the set and awaited.
//!
//! ```text
//! cargo run --release -p netloop-benches --example executors_report
//! ```

use std::time::Duration;

mod on_netloop {
    use netloop as rt;
    include!("../executor_shapes.rs");
}

mod on_tokio {
    use tokio as rt;
    include!("../executor_shapes.rs");
}

const ROUNDS: usize = 9;
const BLOCKING: u64 = 10_000;
const LOCAL: u64 = 100_000;

/// The median of `v`, in microseconds.
fn median_us(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn main() {
    let (nl, tk) = (on_netloop::two_workers(), on_tokio::two_workers());
    let mut times: [Vec<Duration>; 4] = Default::default();
    for _ in 0..ROUNDS {
        times[0].push(on_netloop::spawn_blocking(&nl, BLOCKING));
        times[1].push(on_tokio::spawn_blocking(&tk, BLOCKING));
        times[2].push(on_netloop::local_set(&nl, LOCAL));
        times[3].push(on_tokio::local_set(&tk, LOCAL));
    }
    let [nb, tb, nl_set, tk_set] = times.map(median_us);
    println!("| shape | netloop | tokio | netloop/tokio |\n|---|---|---|---|");
    println!(
        "| {BLOCKING} `spawn_blocking` calls, awaited | {:.0} µs | {:.0} µs | {:.2} |",
        nb,
        tb,
        nb / tb
    );
    println!(
        "| {LOCAL} `LocalSet` tasks that yield once, awaited | {:.0} µs | {:.0} µs | {:.2} |",
        nl_set,
        tk_set,
        nl_set / tk_set
    );
}
