//! Tokio peers of shape (a): no-op tasks spawned on the runtime's own thread.

use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Runtime};
use tokio::task::LocalSet;

/// A current-thread runtime with every driver this build of tokio has (the timer).
pub fn current_thread() -> Runtime {
    Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// `n` detached no-op tasks spawned from inside `block_on`, then one more that is
/// awaited: the current-thread run queue is FIFO, so all have run by then.
pub fn spawn(rt: &Runtime, n: usize) -> Duration {
    rt.block_on(async move {
        let start = Instant::now();
        for _ in 0..n {
            drop(tokio::spawn(async {}));
        }
        tokio::spawn(async {}).await.expect("no-op task");
        start.elapsed()
    })
}

/// Like [`spawn`], with `LocalSet::spawn_local` (`!Send` tasks on a local set).
pub fn spawn_local(rt: &Runtime, n: usize) -> Duration {
    let local = LocalSet::new();
    local.block_on(rt, async move {
        let start = Instant::now();
        for _ in 0..n {
            drop(tokio::task::spawn_local(async {}));
        }
        tokio::task::spawn_local(async {}).await.expect("no-op task");
        start.elapsed()
    })
}
