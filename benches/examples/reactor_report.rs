//! Runs the three reactor shapes for netloop and tokio without criterion and prints a
//! markdown table: per shape the median throughput of each, the ratio of their median
//! times (netloop / tokio: below 1 means netloop is faster), and for the remote shape
//! the eventfd wakes netloop's producer wrote per task.
//!
//! ```text
//! cargo run --release -p netloop-benches --example reactor_report [-- RUNS]
//! ```
//!
//! RUNS (default 7) timed batches of 1,000,000 per measurement, after one untimed
//! warm-up batch. The figures are reported, never asserted.

use std::time::Duration;

use netloop_benches::{
    RemoteLoop, TASKS, local_execute, local_spawn, shutdown_local, timers_schedule_all_then_cancel,
    timers_schedule_cancel_each,
};
use netloop_reactor::EventLoop;

#[path = "../tokio_peer/local.rs"]
mod tokio_local;
#[path = "../tokio_peer/remote.rs"]
mod tokio_remote;
/// tokio's side of the timer shapes: the same source every timer benchmark uses.
mod tokio_timers {
    #![allow(dead_code)]
    use tokio as rt;
    include!("../timer_shapes.rs");
}

/// Timed batches of one measurement.
#[derive(Clone)]
struct Samples {
    label: &'static str,
    times: Vec<Duration>,
}

impl Samples {
    /// One warm-up batch, then `runs` timed ones.
    fn measure(label: &'static str, runs: usize, mut batch: impl FnMut() -> Duration) -> Samples {
        batch();
        let mut times: Vec<Duration> = (0..runs).map(|_| batch()).collect();
        times.sort();
        Samples { label, times }
    }

    fn median(&self) -> Duration {
        self.times[self.times.len() / 2]
    }

    fn rate(&self) -> String {
        let per_sec = TASKS as f64 / self.median().as_secs_f64();
        format!("{:.1} M/s ({:.0} ms)", per_sec / 1e6, ms(self.median()))
    }

    fn spread(&self) -> String {
        format!(
            "{:.0} / {:.0} / {:.0}",
            ms(self.times[0]),
            ms(self.median()),
            ms(self.times[self.times.len() - 1])
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Row {
    shape: &'static str,
    netloop: Samples,
    tokio: Samples,
    wakes_per_task: Option<f64>,
}

/// Totals of netloop's wakeup counters over the timed remote batches.
#[derive(Default)]
struct WakeTotals {
    tasks: u64,
    sent: u64,
    suppressed: u64,
    iterations: u64,
    batches: u64,
}

impl WakeTotals {
    fn per_task(&self) -> f64 {
        self.sent as f64 / self.tasks.max(1) as f64
    }
}

fn remote_netloop(runs: usize, totals: &mut WakeTotals) -> Samples {
    let remote = RemoteLoop::start().expect("event loop");
    remote.run_batch(TASKS);
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let run = remote.run_batch(TASKS);
            totals.tasks += TASKS as u64 + 1;
            totals.sent += run.wakeups_sent;
            totals.suppressed += run.wakeups_suppressed;
            totals.iterations += run.iterations;
            totals.batches += 1;
            run.elapsed
        })
        .collect();
    remote.shutdown();
    times.sort();
    Samples {
        label: "execute from another thread",
        times,
    }
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("RUNS must be a positive integer"))
        .unwrap_or(7)
        .max(1);
    let mut rows = Vec::new();

    // (a) local.
    let mut el = EventLoop::new().expect("event loop");
    let netloop_execute = Samples::measure("execute (closures)", runs, || local_execute(&mut el, TASKS));
    let netloop_spawn = Samples::measure("spawn (futures)", runs, || local_spawn(&mut el, TASKS));
    shutdown_local(el);
    let rt = tokio_local::current_thread();
    let tokio_spawn = Samples::measure("current_thread spawn", runs, || tokio_local::spawn(&rt, TASKS));
    let tokio_spawn_local = Samples::measure("LocalSet::spawn_local", runs, || tokio_local::spawn_local(&rt, TASKS));
    drop(rt);
    rows.push(Row {
        shape: "(a) local: 1M no-op tasks on the loop's thread",
        netloop: netloop_execute.clone(),
        tokio: tokio_spawn.clone(),
        wakes_per_task: None,
    });
    rows.push(Row {
        shape: "(a) local",
        netloop: netloop_execute,
        tokio: tokio_spawn_local,
        wakes_per_task: None,
    });
    rows.push(Row {
        shape: "(a) local, futures on both sides",
        netloop: netloop_spawn,
        tokio: tokio_spawn,
        wakes_per_task: None,
    });

    // (b) remote.
    let mut totals = WakeTotals::default();
    let netloop_remote = remote_netloop(runs, &mut totals);
    let peer = tokio_remote::RemotePeer::current_thread();
    let tokio_ct = Samples::measure("current_thread Handle::spawn", runs, || peer.run_batch(TASKS));
    drop(peer);
    let peer = tokio_remote::RemotePeer::multi_thread_one_worker();
    let tokio_mt = Samples::measure("multi_thread(1 worker) Handle::spawn", runs, || peer.run_batch(TASKS));
    drop(peer);
    rows.push(Row {
        shape: "(b) remote: 1M no-op tasks from another thread",
        netloop: netloop_remote.clone(),
        tokio: tokio_ct,
        wakes_per_task: Some(totals.per_task()),
    });
    rows.push(Row {
        shape: "(b) remote",
        netloop: netloop_remote,
        tokio: tokio_mt,
        wakes_per_task: Some(totals.per_task()),
    });

    // (c) timers.
    let mut el = EventLoop::new().expect("event loop");
    let netloop_each = Samples::measure("schedule(1 h) + cancel, each", runs, || {
        timers_schedule_cancel_each(&mut el, TASKS)
    });
    let netloop_bulk = Samples::measure("schedule all, then cancel all", runs, || {
        timers_schedule_all_then_cancel(&mut el, TASKS)
    });
    shutdown_local(el);
    let rt = tokio_timers::current_thread();
    let tokio_each = Samples::measure("sleep(1 h) + poll + drop, each", runs, || {
        tokio_timers::sleep_poll_drop_each(&rt, TASKS)
    });
    let tokio_bulk = Samples::measure("sleep + poll all, then drop all", runs, || {
        tokio_timers::sleep_poll_all_then_drop(&rt, TASKS)
    });
    drop(rt);
    rows.push(Row {
        shape: "(c) timers: 1M one-shot 1 h timers, cancelled",
        netloop: netloop_each,
        tokio: tokio_each,
        wakes_per_task: None,
    });
    rows.push(Row {
        shape: "(c) timers",
        netloop: netloop_bulk,
        tokio: tokio_bulk,
        wakes_per_task: None,
    });

    println!(
        "Median of {runs} batches of {TASKS} after one warm-up batch; ratio = netloop time / tokio time (below 1: netloop faster).\n"
    );
    println!("| shape | netloop | tokio | netloop/tokio time | eventfd wakes per task (netloop) |");
    println!("|---|---|---|---|---|");
    for row in &rows {
        let ratio = row.netloop.median().as_secs_f64() / row.tokio.median().as_secs_f64();
        let wakes = row.wakes_per_task.map_or_else(
            || "—".to_string(),
            |w| format!("{w:.6} ({:.0} per batch)", w * TASKS as f64),
        );
        println!(
            "| {} | {}: {} | {}: {} | {ratio:.2} | {wakes} |",
            row.shape,
            row.netloop.label,
            row.netloop.rate(),
            row.tokio.label,
            row.tokio.rate(),
        );
    }
    println!("\nSpread, min / median / max ms per batch:\n");
    println!("| shape | netloop | tokio |");
    println!("|---|---|---|");
    for row in &rows {
        println!("| {} | {} | {} |", row.shape, row.netloop.spread(), row.tokio.spread());
    }
    let b = totals.batches.max(1);
    println!(
        "\nnetloop remote, per batch of {TASKS}: {} eventfd wakes sent, {} suppressed, {} loop iterations ({:.6} wakes per task).",
        totals.sent / b,
        totals.suppressed / b,
        totals.iterations / b,
        totals.per_task()
    );
}
