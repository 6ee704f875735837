//! What the second `tokio-compat` design would pay per loop iteration.
//!
//! Design (b) of issue 22: each netloop loop hosts a tokio current-thread runtime and
//! turns its driver from its own iteration. tokio exposes neither its driver's epoll
//! descriptor nor its next timer deadline, nor a non-blocking turn; the closest public
//! operation is `block_on(yield_now())`, which runs tokio's ready tasks and polls its
//! driver with a zero timeout. Without the descriptor and the deadline, a loop would
//! have to make that turn at every iteration and cap every blocking select (here at 1
//! ms) so that tokio's timers and sockets are looked at. This prints the cost of one
//! turn (idle runtime, and with 1,000 pending tokio timers) and what turning every
//! millisecond costs an idle loop.
//!
//! ```text
//! CARGO_TARGET_DIR=target/compat cargo run --release --manifest-path tests/compat/Cargo.toml --example driver_turn
//! ```

use std::time::{Duration, Instant};

fn turn_cost(rt: &tokio::runtime::Runtime, turns: u32) -> Duration {
    let start = Instant::now();
    for _ in 0..turns {
        rt.block_on(tokio::task::yield_now());
    }
    start.elapsed() / turns
}

/// CPU time this thread has run, from the kernel's scheduler statistics.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux schedstat");
    let nanos: u64 = stat
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("run time in ns");
    Duration::from_nanos(nanos)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    turn_cost(&rt, 10_000); // warm-up
    let idle = turn_cost(&rt, 200_000);
    println!("one non-blocking turn, idle tokio runtime: {} ns", idle.as_nanos());

    // 1,000 timers far in the future, as 1,000 connections' timeout layers would hold.
    let _timers: Vec<_> = (0..1_000)
        .map(|_| rt.spawn(async { tokio::time::sleep(Duration::from_secs(3600)).await }))
        .collect();
    turn_cost(&rt, 1_000);
    let loaded = turn_cost(&rt, 200_000);
    println!("one non-blocking turn, 1,000 pending timers: {} ns", loaded.as_nanos());

    // An idle loop that must wake every millisecond to turn tokio's driver.
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    while wall0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
        rt.block_on(tokio::task::yield_now());
    }
    let share = cpu_time().saturating_sub(cpu0).as_secs_f64() / wall0.elapsed().as_secs_f64();
    println!("idle loop turning tokio every 1 ms: {:.2} % of a core", share * 100.0);
}
