//! Shape (b): 1,000,000 no-op closures submitted from one other thread while the loop
//! runs on its own thread, timed until the last one ran.
//!
//! After the netloop run it prints the eventfd wakes written per task
//! (`wakeups_sent / tasks`). tokio peers: `Handle::spawn` onto a current-thread runtime
//! driven on its own thread, and onto a multi-thread runtime with one worker.
//! Run with `cargo bench -p netloop-benches --bench reactor_remote`.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use netloop_benches::{RemoteLoop, TASKS};

#[path = "../tokio_peer/remote.rs"]
mod tokio_remote;

fn reactor_remote(c: &mut Criterion) {
    let mut group = c.benchmark_group("reactor_remote");
    group
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Elements(TASKS as u64));

    let remote = RemoteLoop::start().expect("event loop");
    let (mut tasks, mut wakes, mut suppressed, mut iterations) = (0u64, 0u64, 0u64, 0u64);
    group.bench_function("netloop_execute", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let run = remote.run_batch(TASKS);
                total += run.elapsed;
                tasks += TASKS as u64 + 1;
                wakes += run.wakeups_sent;
                suppressed += run.wakeups_suppressed;
                iterations += run.iterations;
            }
            total
        })
    });
    remote.shutdown();
    eprintln!(
        "reactor_remote/netloop_execute: {tasks} tasks, {wakes} eventfd wakes sent \
         ({:.6} per task), {suppressed} suppressed, {iterations} loop iterations",
        wakes as f64 / tasks.max(1) as f64
    );

    let peer = tokio_remote::RemotePeer::current_thread();
    group.bench_function("tokio_current_thread_spawn", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| peer.run_batch(TASKS)).sum())
    });
    drop(peer);

    let peer = tokio_remote::RemotePeer::multi_thread_one_worker();
    group.bench_function("tokio_multi_thread_1_worker_spawn", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| peer.run_batch(TASKS)).sum())
    });
    drop(peer);
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = reactor_remote
}
criterion_main!(benches);
