//! Runtime benchmarks: the shapes of tokio's `benches/rt_multi_threaded.rs`, on a
//! multi-thread runtime with [`WORKERS`] workers.
//!
//! The `runtime` criterion target and the `runtime_report` example both drive the
//! [`RuntimePeer`] implementations: [`NetloopRuntime`] here, the tokio and smol peers in
//! `tokio_peer/runtime.rs` and `smol_peer/runtime.rs` (both only dev-dependencies of this
//! package). The three are written line for line alike; only the spawn call, the
//! `yield_now` and the way a runtime is built differ. Channels are runtime-agnostic and
//! the same for all three: `std::sync::mpsc::sync_channel` to signal the bench thread
//! (as tokio's bench does) and `futures::channel::oneshot` between tasks in `ping_pong`
//! (tokio's bench uses `tokio::sync::oneshot`; tokio is only a dev-dependency here, and
//! the futures one belongs to no runtime).
//!
//! Each method runs one iteration of a shape and returns how long it took, measured on
//! the bench thread from before the first spawn until the bench thread has seen the
//! last task finish. Nothing here asserts a speed.

use std::io;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use netloop::runtime::{Builder, Runtime};
use netloop::task::{JoinHandle, yield_now};

/// Worker threads (event loops for netloop, executor threads for smol) of every peer.
/// The machine the figures in `docs/BENCHMARKS.md` come from has 2 cores.
pub const WORKERS: usize = 2;
/// Tasks spawned per iteration of the `spawn_many_*` shapes.
pub const NUM_SPAWN: usize = 10_000;
/// Rounds of `ping_pong`: each is two tasks exchanging two oneshot messages.
pub const NUM_PINGS: usize = 1_000;
/// Tasks of `yield_many`.
pub const YIELD_TASKS: usize = 200;
/// `yield_now` calls per task in `yield_many`.
pub const NUM_YIELD: usize = 1_000;
/// Length of the chain of `chained_spawn`.
pub const CHAIN_LEN: usize = 1_000;
/// Capacity of the done channel (tokio's bench uses 1000).
pub const DONE_CAPACITY: usize = 1_000;

/// One shape of tokio's `rt_multi_threaded` benches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// tokio's `spawn_many_local`, as tokio writes it: inside `block_on`, 10,000 tasks
    /// spawned through the runtime's context, each decrementing a counter; the last
    /// signals a sync channel that `block_on`'s future waits on. On all three runtimes a
    /// multi-thread `block_on` runs its future on the calling thread, which is not a
    /// worker, so these spawns come from outside the workers.
    SpawnManyLocal,
    /// The same 10,000 tasks spawned from inside a task running on a worker: the spawns
    /// take each runtime's worker-local path (netloop: the loop's own run queue, so all
    /// 10,000 stay on that loop; tokio: the worker's local queue, from which the other
    /// worker steals; smol: the executor's queue).
    SpawnManyLocalInTask,
    /// tokio's `spawn_many_remote_idle`: 10,000 no-op tasks spawned through the runtime
    /// from the bench thread (outside `block_on`), then every join handle awaited in
    /// `block_on`.
    SpawnManyRemoteIdle,
    /// tokio's `ping_pong`: a task spawns 1,000 tasks; each spawns a partner, sends it a
    /// oneshot message and awaits the partner's oneshot reply; the last to finish
    /// signals the bench thread.
    PingPong,
    /// tokio's `yield_many`: 200 tasks spawned from the bench thread, each calling
    /// `yield_now` 1,000 times, then signalling; the bench thread waits for all 200.
    YieldMany,
    /// tokio's `chained_spawn`: a chain of 1,000 tasks, each spawning the next; the
    /// last signals the bench thread.
    ChainedSpawn,
}

impl Shape {
    /// Every shape, in report order.
    pub const ALL: [Shape; 6] = [
        Shape::SpawnManyLocal,
        Shape::SpawnManyLocalInTask,
        Shape::SpawnManyRemoteIdle,
        Shape::PingPong,
        Shape::YieldMany,
        Shape::ChainedSpawn,
    ];

    /// The bench name (tokio's, plus `spawn_many_local_in_task`).
    pub fn name(self) -> &'static str {
        match self {
            Shape::SpawnManyLocal => "spawn_many_local",
            Shape::SpawnManyLocalInTask => "spawn_many_local_in_task",
            Shape::SpawnManyRemoteIdle => "spawn_many_remote_idle",
            Shape::PingPong => "ping_pong",
            Shape::YieldMany => "yield_many",
            Shape::ChainedSpawn => "chained_spawn",
        }
    }

    /// What one iteration does, in a few words.
    pub fn summary(self) -> &'static str {
        match self {
            Shape::SpawnManyLocal => "10,000 spawns inside block_on",
            Shape::SpawnManyLocalInTask => "10,000 spawns from a task on a worker",
            Shape::SpawnManyRemoteIdle => "10,000 spawns from the bench thread, all awaited",
            Shape::PingPong => "1,000 task pairs exchanging oneshots",
            Shape::YieldMany => "200 tasks x 1,000 yield_now",
            Shape::ChainedSpawn => "a chain of 1,000 spawns",
        }
    }
}

/// A multi-thread runtime with [`WORKERS`] workers that can run every [`Shape`].
pub trait RuntimePeer {
    /// The runtime's name in tables and bench ids.
    fn name(&self) -> &'static str;
    /// One iteration of [`Shape::SpawnManyLocal`].
    fn spawn_many_local(&mut self) -> Duration;
    /// One iteration of [`Shape::SpawnManyLocalInTask`].
    fn spawn_many_local_in_task(&mut self) -> Duration;
    /// One iteration of [`Shape::SpawnManyRemoteIdle`].
    fn spawn_many_remote_idle(&mut self) -> Duration;
    /// One iteration of [`Shape::PingPong`].
    fn ping_pong(&mut self) -> Duration;
    /// One iteration of [`Shape::YieldMany`].
    fn yield_many(&mut self) -> Duration;
    /// One iteration of [`Shape::ChainedSpawn`].
    fn chained_spawn(&mut self) -> Duration;

    /// Cumulative counters the runtime exposes (name, value), for diagnostics; the
    /// report prints their growth per iteration in `--only` mode. None by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// One iteration of `shape`.
    fn run(&mut self, shape: Shape) -> Duration {
        match shape {
            Shape::SpawnManyLocal => self.spawn_many_local(),
            Shape::SpawnManyLocalInTask => self.spawn_many_local_in_task(),
            Shape::SpawnManyRemoteIdle => self.spawn_many_remote_idle(),
            Shape::PingPong => self.ping_pong(),
            Shape::YieldMany => self.yield_many(),
            Shape::ChainedSpawn => self.chained_spawn(),
        }
    }
}

/// netloop's multi-thread runtime with [`WORKERS`] event loops.
pub struct NetloopRuntime {
    rt: Runtime,
    /// Tasks still to finish in the counting shapes.
    rem: Arc<AtomicUsize>,
    done_tx: SyncSender<()>,
    done_rx: Receiver<()>,
    handles: Vec<JoinHandle<()>>,
}

impl NetloopRuntime {
    /// `Builder::new_multi_thread().worker_threads(WORKERS).enable_all()`.
    pub fn new() -> io::Result<NetloopRuntime> {
        let rt = Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .enable_all()
            .build()?;
        let (done_tx, done_rx) = mpsc::sync_channel(DONE_CAPACITY);
        Ok(NetloopRuntime {
            rt,
            rem: Arc::new(AtomicUsize::new(0)),
            done_tx,
            done_rx,
            handles: Vec::with_capacity(NUM_SPAWN),
        })
    }
}

/// `chained_spawn`'s link: spawn the next task, or signal at the end of the chain.
fn netloop_chain(done_tx: SyncSender<()>, n: usize) {
    if n == 0 {
        done_tx.send(()).expect("bench thread waits");
    } else {
        netloop::spawn(async move {
            netloop_chain(done_tx, n - 1);
        });
    }
}

impl RuntimePeer for NetloopRuntime {
    fn name(&self) -> &'static str {
        "netloop"
    }

    /// Totals over the loops of the wakeup counters and loop iterations.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let metrics: Vec<_> = self.rt.handle().event_loops().iter().map(|l| l.metrics()).collect();
        vec![
            ("tasks run", metrics.iter().map(|m| m.tasks_run).sum()),
            ("loop iterations", metrics.iter().map(|m| m.iterations).sum()),
            ("eventfd wakes sent", metrics.iter().map(|m| m.wakeups_sent).sum()),
            ("wakes suppressed", metrics.iter().map(|m| m.wakeups_suppressed).sum()),
            ("wakes received", metrics.iter().map(|m| m.wakeups_received).sum()),
        ]
    }

    fn spawn_many_local(&mut self) -> Duration {
        let done_rx = &self.done_rx;
        let (rem, done_tx) = (&self.rem, &self.done_tx);
        let start = Instant::now();
        rem.store(NUM_SPAWN, Relaxed);
        self.rt.block_on(async {
            for _ in 0..NUM_SPAWN {
                let tx = done_tx.clone();
                let rem = rem.clone();
                netloop::spawn(async move {
                    if 1 == rem.fetch_sub(1, Relaxed) {
                        tx.send(()).expect("bench thread waits");
                    }
                });
            }
            done_rx.recv().expect("last task signals");
        });
        start.elapsed()
    }

    fn spawn_many_local_in_task(&mut self) -> Duration {
        let done_rx = &self.done_rx;
        let (rem, done_tx) = (self.rem.clone(), self.done_tx.clone());
        let start = Instant::now();
        rem.store(NUM_SPAWN, Relaxed);
        self.rt.block_on(async {
            netloop::spawn(async move {
                for _ in 0..NUM_SPAWN {
                    let tx = done_tx.clone();
                    let rem = rem.clone();
                    netloop::spawn(async move {
                        if 1 == rem.fetch_sub(1, Relaxed) {
                            tx.send(()).expect("bench thread waits");
                        }
                    });
                }
            });
            done_rx.recv().expect("last task signals");
        });
        start.elapsed()
    }

    fn spawn_many_remote_idle(&mut self) -> Duration {
        let handles = &mut self.handles;
        let start = Instant::now();
        for _ in 0..NUM_SPAWN {
            handles.push(self.rt.spawn(async {}));
        }
        self.rt.block_on(async {
            for handle in handles.drain(..) {
                handle.await.expect("no-op task");
            }
        });
        start.elapsed()
    }

    fn ping_pong(&mut self) -> Duration {
        let done_rx = &self.done_rx;
        let (rem, done_tx) = (self.rem.clone(), self.done_tx.clone());
        let start = Instant::now();
        rem.store(NUM_PINGS, Relaxed);
        self.rt.block_on(async {
            netloop::spawn(async move {
                for _ in 0..NUM_PINGS {
                    let rem = rem.clone();
                    let done_tx = done_tx.clone();
                    netloop::spawn(async move {
                        let (tx1, rx1) = oneshot::channel::<()>();
                        let (tx2, rx2) = oneshot::channel::<()>();
                        netloop::spawn(async move {
                            rx1.await.expect("ping");
                            tx2.send(()).expect("pong receiver alive");
                        });
                        tx1.send(()).expect("ping receiver alive");
                        rx2.await.expect("pong");
                        if 1 == rem.fetch_sub(1, Relaxed) {
                            done_tx.send(()).expect("bench thread waits");
                        }
                    });
                }
            });
            done_rx.recv().expect("last pair signals");
        });
        start.elapsed()
    }

    fn yield_many(&mut self) -> Duration {
        let done_rx = &self.done_rx;
        let start = Instant::now();
        for _ in 0..YIELD_TASKS {
            let tx = self.done_tx.clone();
            self.rt.spawn(async move {
                for _ in 0..NUM_YIELD {
                    yield_now().await;
                }
                tx.send(()).expect("bench thread waits");
            });
        }
        for _ in 0..YIELD_TASKS {
            done_rx.recv().expect("every task signals");
        }
        start.elapsed()
    }

    fn chained_spawn(&mut self) -> Duration {
        let done_rx = &self.done_rx;
        let done_tx = self.done_tx.clone();
        let start = Instant::now();
        self.rt.block_on(async {
            netloop::spawn(async move {
                netloop_chain(done_tx, CHAIN_LEN);
            });
            done_rx.recv().expect("end of the chain signals");
        });
        start.elapsed()
    }
}
