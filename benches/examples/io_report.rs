//! netloop's own io (`netloop::io`, crates/io) against tokio's (issue 33), from the same
//! source (`benches/io_shapes.rs`), in three configurations in one process:
//!
//! - (a) netloop's runtime, `netloop::io` and netloop's sockets,
//! - (b) netloop's runtime, `tokio::io` and netloop's sockets (through their
//!   `tokio-io` impls; `duplex` is tokio's): (a)/(b) is the I/O utilities alone,
//! - (c) tokio's runtime, `tokio::io` and tokio's sockets: (a)/(c) is what a program
//!   moving from tokio gets. The goal is (a)/(c) <= 1.0 on every shape.
//!
//! ```text
//! cargo run --release -p netloop-benches --example io_report [-- ROUNDS]
//! IO_REPORT_SCALE=0.1 cargo run --release -p netloop-benches --example io_report -- 1
//! ```
//!
//! Each configuration is a multi-thread runtime with 2 workers, living for the whole
//! run. One untimed warm-up round, then ROUNDS (default 5); in every round each shape
//! runs once per configuration, in an order rotating from round to round, so that a
//! slow patch of a shared machine hits all three alike. The table shows the median,
//! the ratios, and each configuration's spread ((max - min) / median).
//! `IO_REPORT_SCALE` (default 1) multiplies every count; `IO_REPORT_ONLY`, a comma-separated
//! list of the keys of the `io_report` lines, runs only those shapes. Every shape also prints one
//! line starting `io_report` of `key=value` fields. Figures are printed, never
//! asserted.
//!
//! Shapes (counts at scale 1; lines are 40 bytes, newline included):
//!
//! - `BufReader::lines()` over an in-memory `&[u8]` of 1,000,000 lines: the line
//!   splitting alone, no socket and no waiting;
//! - `BufReader::lines()` over a loopback TCP stream, 1,000,000 lines written by a peer
//!   task in `write_all`s of 1,024 lines: the reader's time to get them all with
//!   `next_line`;
//! - the same with `read_line` into one reused `String`;
//! - `io::copy` between two sockets: a writer task pushes 128 MiB into socket pair A in
//!   64 KiB `write_all`s, a copier task copies A's far end into pair B, this task
//!   drains B's far end; end to end;
//! - `duplex(64 KiB)`: a writer task writes 1 GiB in 16 KiB chunks, this task reads
//!   them with a 16 KiB buffer (the chunks stay in cache: 256 MiB took about 5 ms, too
//!   short to time on a shared machine);
//! - `duplex(64 KiB)` ping-pong: 100,000 round trips of 64 bytes with an echo task.
//!
//! Helper tasks are plain `spawn`s from the shape's task: on netloop they run on its
//! loop (so do the sockets they connect), on tokio they start in the same worker's
//! queue and the other worker may steal them.

use netloop_benches::report::{median_spread, rotated_rounds};
use std::time::Duration;

/// (a) netloop's runtime, netloop's io, netloop's sockets.
mod own {
    use netloop as rt;
    use netloop::io;
    use netloop::net;
    include!("../io_shapes.rs");
}

/// (b) netloop's runtime, tokio's io, netloop's sockets.
mod netloop_tokio {
    use netloop as rt;
    use netloop::net;
    use tokio::io;
    include!("../io_shapes.rs");
}

/// (c) tokio's runtime, tokio's io, tokio's sockets.
mod tokio_tokio {
    use tokio as rt;
    use tokio::io;
    use tokio::net;
    include!("../io_shapes.rs");
}

/// A shape and its counts.
#[derive(Clone, Copy, Debug)]
enum Shape {
    SliceLines { lines: u64 },
    SocketLines { lines: u64 },
    SocketReadLine { lines: u64 },
    Copy { bytes: u64 },
    DuplexStream { bytes: u64 },
    DuplexPingPong { round_trips: u64, size: usize },
}

/// One configuration: what it runs, and its runtime inside `timed`.
struct Config {
    reader: &'static str,
    timed: Box<dyn Fn(Shape) -> Duration>,
}

macro_rules! config {
    ($module:ident) => {{
        let rt = $module::two_workers();
        Config {
            reader: $module::reader_type(),
            timed: Box::new(move |shape| $module::timed(&rt, shape)),
        }
    }};
}

/// The shapes at `scale`: key, label, shape.
fn shapes(scale: f64) -> Vec<(&'static str, String, Shape)> {
    let count = |n: f64| ((n * scale) as u64).max(1024);
    let lines = count(1_000_000.0);
    let mib = |n: f64| count(n * 1024.0 * 1024.0);
    let (copy, duplex) = (mib(128.0), mib(1024.0));
    let round_trips = count(100_000.0);
    vec![
        (
            "slice_lines",
            format!("`lines()` over a `&[u8]`, {lines} lines"),
            Shape::SliceLines { lines },
        ),
        (
            "socket_lines",
            format!("`lines()` over TCP, {lines} lines"),
            Shape::SocketLines { lines },
        ),
        (
            "socket_read_line",
            format!("`read_line` over TCP, {lines} lines"),
            Shape::SocketReadLine { lines },
        ),
        (
            "copy",
            format!("`copy` socket to socket, {} MiB", copy >> 20),
            Shape::Copy { bytes: copy },
        ),
        (
            "duplex_stream",
            format!("`duplex(64 KiB)` stream, {} MiB in 16 KiB", duplex >> 20),
            Shape::DuplexStream { bytes: duplex },
        ),
        (
            "duplex_ping_pong",
            format!("`duplex(64 KiB)` ping-pong, {round_trips}x 64 B"),
            Shape::DuplexPingPong { round_trips, size: 64 },
        ),
    ]
}

/// The median of `v`, and its spread: (max - min) / median.
fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    let scale: f64 = std::env::var("IO_REPORT_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let started = std::time::Instant::now();
    let configs = [config!(own), config!(netloop_tokio), config!(tokio_tokio)];
    println!("Configurations (2 workers each; scale {scale}, {rounds} rounds after a warm-up):\n");
    for (name, config) in ["(a) netloop runtime", "(b) netloop runtime", "(c) tokio runtime"]
        .iter()
        .zip(&configs)
    {
        println!("- {name}, `{}`", config.reader);
    }

    // `IO_REPORT_ONLY=copy,socket_lines` runs only the shapes of those keys.
    let only = std::env::var("IO_REPORT_ONLY").unwrap_or_default();
    let shapes: Vec<_> = shapes(scale)
        .into_iter()
        .filter(|(key, _, _)| only.is_empty() || only.split(',').any(|k| k == *key))
        .collect();
    let shape_values: Vec<_> = shapes.iter().map(|(_, _, shape)| *shape).collect();
    let times = rotated_rounds(
        rounds,
        &shape_values,
        [&*configs[0].timed, &*configs[1].timed, &*configs[2].timed],
    );
    println!("\nMedian time in ms; spread = (max - min) / median over the rounds.\n");
    println!(
        "| shape | (a) netloop + own io | (b) netloop + tokio::io | (c) tokio + tokio::io | (a)/(c) | (a)/(b) | spread a / b / c |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut lines = Vec::new();
    let mut above = Vec::new();
    for ((key, label, _), times) in shapes.iter().zip(times) {
        let [(a, sa), (b, sb), (c, sc)] = times.map(median_spread);
        println!(
            "| {label} | {a:.1} | {b:.1} | {c:.1} | {:.2} | {:.2} | {:.0}% / {:.0}% / {:.0}% |",
            a / c,
            a / b,
            sa * 100.0,
            sb * 100.0,
            sc * 100.0
        );
        if a > c {
            above.push(*key);
        }
        lines.push(format!(
            "io_report shape={key} scale={scale} rounds={rounds} a_ms={a:.3} b_ms={b:.3} c_ms={c:.3} a_over_c={:.3} a_over_b={:.3} \
             spread_a={sa:.3} spread_b={sb:.3} spread_c={sc:.3}",
            a / c,
            a / b
        ));
    }
    if !above.is_empty() {
        println!("\nAbove 1.0x tokio's time ((a)/(c)): {}.", above.join(", "));
    }
    println!();
    for line in lines {
        println!("{line}");
    }
    eprintln!("io_report: {:.0} s", started.elapsed().as_secs_f64());
}
