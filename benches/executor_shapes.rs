// The workloads of `examples/executors_report.rs`, written once against a runtime
// named `rt` and included into one module per runtime (`use netloop as rt;`,
// `use tokio as rt;`), so both runtimes run the same source.

use std::time::{Duration, Instant};

/// A multi-thread runtime with 2 workers.
pub fn two_workers() -> rt::runtime::Runtime {
    rt::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a multi-thread runtime")
}

/// `n` `spawn_blocking` calls from `block_on`, then every one awaited.
pub fn spawn_blocking(rt: &rt::runtime::Runtime, n: u64) -> Duration {
    let start = Instant::now();
    rt.block_on(async {
        let handles: Vec<_> = (0..n).map(|i| rt::task::spawn_blocking(move || i)).collect();
        for handle in handles {
            handle.await.expect("a blocking task panicked");
        }
    });
    start.elapsed()
}

/// A `LocalSet` of `n` tasks that yield once, spawned inside the set and awaited, then
/// the set dropped.
pub fn local_set(rt: &rt::runtime::Runtime, n: u64) -> Duration {
    let start = Instant::now();
    let local = rt::task::LocalSet::new();
    local.block_on(rt, async {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                rt::task::spawn_local(async move {
                    rt::task::yield_now().await;
                    i
                })
            })
            .collect();
        for handle in handles {
            handle.await.expect("a local task panicked");
        }
    });
    drop(local);
    start.elapsed()
}
