//! Shape (a): 1,000,000 no-op tasks submitted and run on the loop's own thread.
//!
//! netloop: closures via `execute` from a future running on the loop (the local
//! run-queue path), and no-op futures via `spawn` for a like-for-like peer of tokio.
//! tokio: `spawn` inside a current-thread `block_on`, and `LocalSet::spawn_local`.
//! Run with `cargo bench -p netloop-benches --bench reactor_local`.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use netloop_benches::{TASKS, local_execute, local_spawn, shutdown_local};
use netloop_reactor::EventLoop;

#[path = "../tokio_peer/local.rs"]
mod tokio_local;

fn reactor_local(c: &mut Criterion) {
    let mut group = c.benchmark_group("reactor_local");
    group
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Elements(TASKS as u64));

    let mut event_loop = EventLoop::new().expect("event loop");
    group.bench_function("netloop_execute", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| local_execute(&mut event_loop, TASKS)).sum())
    });
    group.bench_function("netloop_spawn", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| local_spawn(&mut event_loop, TASKS)).sum())
    });
    shutdown_local(event_loop);

    let rt = tokio_local::current_thread();
    group.bench_function("tokio_current_thread_spawn", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| tokio_local::spawn(&rt, TASKS)).sum())
    });
    group.bench_function("tokio_localset_spawn_local", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| tokio_local::spawn_local(&rt, TASKS)).sum())
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = reactor_local
}
criterion_main!(benches);
