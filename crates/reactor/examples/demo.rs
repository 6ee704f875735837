//! A tour of one event loop: run it with `cargo run -p netloop-reactor --example demo`.
//!
//! It drives a loop on its own thread, feeds it from the main thread (closures, a
//! timer, a periodic task, futures), shuts it down gracefully and prints its metrics.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use netloop_reactor::EventLoop;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut event_loop = EventLoop::builder()
        .shutdown_quiet_period(Duration::from_millis(100))
        .build()?;
    let handle = event_loop.handle();
    let thread = std::thread::Builder::new()
        .name("netloop-demo-0".into())
        .spawn(move || event_loop.run())?;
    let started = Instant::now();

    // 100k closures from this (foreign) thread: most need no wake, the loop is busy.
    let ran = Arc::new(AtomicU32::new(0));
    for _ in 0..100_000 {
        let ran = ran.clone();
        handle.execute(move || {
            ran.fetch_add(1, Ordering::Relaxed);
        })?;
    }

    // A one-shot timer and a fixed-rate task.
    handle.schedule(Duration::from_millis(50), move || {
        println!(
            "[{:>4} ms] one-shot timer fired on {:?}",
            started.elapsed().as_millis(),
            std::thread::current().name()
        );
    })?;
    let ticks = Arc::new(AtomicU32::new(0));
    let t = ticks.clone();
    let periodic = handle.schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(20), move || {
        t.fetch_add(1, Ordering::Relaxed);
    })?;

    // A future, spawned from here, running on the loop.
    let (tx, rx) = std::sync::mpsc::channel();
    handle
        .spawn(async move {
            let on_loop = netloop_reactor::EventLoopHandle::current().is_some();
            tx.send(on_loop).unwrap();
        })?
        .detach();
    println!(
        "future ran on the loop's thread: {}",
        rx.recv_timeout(Duration::from_secs(5))?
    );

    std::thread::sleep(Duration::from_millis(120));
    periodic.cancel();
    println!(
        "fixed-rate task ticked {} times in ~120 ms",
        ticks.load(Ordering::Relaxed)
    );

    let _termination = handle.shutdown_gracefully();
    handle.await_termination(Duration::from_secs(10))?;
    thread.join().expect("loop thread")?;
    let m = handle.metrics();
    println!("closures run: {}", ran.load(Ordering::Relaxed));
    println!(
        "metrics: {} tasks in {} iterations; wakeups sent {} / suppressed {}; busy {:?} (utilization {:.2})",
        m.tasks_run, m.iterations, m.wakeups_sent, m.wakeups_suppressed, m.busy, m.utilization
    );
    Ok(())
}
