//! Shape (c): 1,000,000 timers an hour away, scheduled and cancelled on the loop's own
//! thread; both one at a time and all-then-cancel-all.
//!
//! tokio peer: `tokio::time::sleep(1 h)` registered by one poll, then dropped.
//! Run with `cargo bench -p netloop-benches --bench reactor_timers`.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use netloop_benches::{TASKS, shutdown_local, timers_schedule_all_then_cancel, timers_schedule_cancel_each};
use netloop_reactor::EventLoop;

/// tokio's side of the timer shapes: the same source every timer benchmark uses.
mod tokio_timers {
    #![allow(dead_code)]
    use tokio as rt;
    include!("../timer_shapes.rs");
}

fn reactor_timers(c: &mut Criterion) {
    let mut group = c.benchmark_group("reactor_timers");
    group
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Elements(TASKS as u64));

    let mut event_loop = EventLoop::new().expect("event loop");
    group.bench_function("netloop_schedule_cancel_each", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| timers_schedule_cancel_each(&mut event_loop, TASKS))
                .sum()
        })
    });
    group.bench_function("netloop_schedule_all_then_cancel", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| timers_schedule_all_then_cancel(&mut event_loop, TASKS))
                .sum()
        })
    });
    shutdown_local(event_loop);

    let rt = tokio_timers::current_thread();
    group.bench_function("tokio_sleep_poll_drop_each", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| tokio_timers::sleep_poll_drop_each(&rt, TASKS)).sum())
    });
    group.bench_function("tokio_sleep_poll_all_then_drop", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| tokio_timers::sleep_poll_all_then_drop(&rt, TASKS))
                .sum()
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = reactor_timers
}
criterion_main!(benches);
