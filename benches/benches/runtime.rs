//! The shapes of tokio's `benches/rt_multi_threaded.rs` on three multi-thread runtimes
//! with 2 workers each: netloop (`netloop::runtime`), tokio, and smol (an `Executor`
//! run by 2 threads). One criterion group per shape, one function per runtime.
//! The shapes are described in `benches/runtime.rs` ([`Shape`]).
//! Run with `cargo bench -p netloop-benches --bench runtime`.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use netloop_benches::runtime::{NetloopRuntime, RuntimePeer, Shape};

#[path = "../smol_peer/runtime.rs"]
mod smol_runtime;
#[path = "../tokio_peer/runtime.rs"]
mod tokio_runtime;

/// Runs `shape` on `peer` as one criterion function named after the runtime.
fn bench_peer(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    shape: Shape,
    mut peer: impl RuntimePeer,
) {
    let name = peer.name();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| (0..iters).map(|_| peer.run(shape)).sum())
    });
}

fn runtime(c: &mut Criterion) {
    for shape in Shape::ALL {
        let mut group = c.benchmark_group(format!("rt_multi/{}", shape.name()));
        group.sampling_mode(SamplingMode::Flat);
        // One runtime at a time: the others' threads do not exist meanwhile.
        bench_peer(&mut group, shape, NetloopRuntime::new().expect("netloop runtime"));
        bench_peer(&mut group, shape, tokio_runtime::TokioRuntime::new());
        bench_peer(&mut group, shape, smol_runtime::SmolRuntime::new());
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = runtime
}
criterion_main!(benches);
