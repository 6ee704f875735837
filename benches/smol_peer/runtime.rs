//! smol peer of the runtime shapes: a smol `Executor` run by `WORKERS` threads.
//!
//! This is how smol itself builds its multi-thread runtime: `smol::spawn` is a global
//! `Executor` that `SMOL_THREADS` threads each run with `smol::block_on(ex.run(...))`
//! (smol's `spawn.rs`). Here the executor is also a `static`, so any task can spawn
//! onto it the way `tokio::spawn` and `netloop::spawn` spawn onto the current runtime
//! (no `Arc` to clone per spawn), and the threads are ours, so the runtime can be
//! stopped. `block_on` on the bench thread is `smol::block_on`, which, like the other
//! two runtimes' multi-thread `block_on`, runs the future on the calling thread and
//! runs no executor task there.

use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use netloop_benches::runtime::{
    CHAIN_LEN, DONE_CAPACITY, NUM_PINGS, NUM_SPAWN, NUM_YIELD, RuntimePeer, WORKERS, YIELD_TASKS,
};
use smol::future::yield_now;
use smol::{Executor, Task};

/// The executor every `SmolRuntime` runs (one at a time).
static EXECUTOR: Executor<'static> = Executor::new();
/// Set while a `SmolRuntime` exists.
static RUNNING: AtomicBool = AtomicBool::new(false);

/// Spawns onto the smol runtime (smol's `spawn`, on our executor).
fn spawn<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> Task<T> {
    EXECUTOR.spawn(future)
}

/// smol's executor run by `WORKERS` threads.
pub struct SmolRuntime {
    stop: Option<smol::channel::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
    rem: Arc<AtomicUsize>,
    done_tx: SyncSender<()>,
    done_rx: Receiver<()>,
    handles: Vec<Task<()>>,
}

impl SmolRuntime {
    /// Starts `WORKERS` threads, each running `smol::block_on(EXECUTOR.run(..))` until
    /// the runtime is dropped. Panics if another `SmolRuntime` is alive.
    pub fn new() -> SmolRuntime {
        assert!(!RUNNING.swap(true, AcqRel), "one SmolRuntime at a time");
        let (stop, stopped) = smol::channel::unbounded::<()>();
        let threads = (0..WORKERS)
            .map(|i| {
                let stopped = stopped.clone();
                thread::Builder::new()
                    .name(format!("smol-bench-{i}"))
                    .spawn(move || {
                        smol::block_on(EXECUTOR.run(async move {
                            let _ = stopped.recv().await;
                        }))
                    })
                    .expect("spawn an executor thread")
            })
            .collect();
        let (done_tx, done_rx) = mpsc::sync_channel(DONE_CAPACITY);
        SmolRuntime {
            stop: Some(stop),
            threads,
            rem: Arc::new(AtomicUsize::new(0)),
            done_tx,
            done_rx,
            handles: Vec::with_capacity(NUM_SPAWN),
        }
    }
}

impl Drop for SmolRuntime {
    fn drop(&mut self) {
        // Closing the channel ends every thread's `run`.
        drop(self.stop.take());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        RUNNING.store(false, Release);
    }
}

fn smol_chain(done_tx: SyncSender<()>, n: usize) {
    if n == 0 {
        done_tx.send(()).expect("bench thread waits");
    } else {
        spawn(async move {
            smol_chain(done_tx, n - 1);
        })
        .detach();
    }
}

impl RuntimePeer for SmolRuntime {
    fn name(&self) -> &'static str {
        "smol"
    }

    fn spawn_many_local(&mut self) -> Duration {
        let done_rx = &self.done_rx;
        let (rem, done_tx) = (&self.rem, &self.done_tx);
        let start = Instant::now();
        rem.store(NUM_SPAWN, Relaxed);
        smol::block_on(async {
            for _ in 0..NUM_SPAWN {
                let tx = done_tx.clone();
                let rem = rem.clone();
                spawn(async move {
                    if 1 == rem.fetch_sub(1, Relaxed) {
                        tx.send(()).expect("bench thread waits");
                    }
                })
                .detach();
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
        smol::block_on(async {
            spawn(async move {
                for _ in 0..NUM_SPAWN {
                    let tx = done_tx.clone();
                    let rem = rem.clone();
                    spawn(async move {
                        if 1 == rem.fetch_sub(1, Relaxed) {
                            tx.send(()).expect("bench thread waits");
                        }
                    })
                    .detach();
                }
            })
            .detach();
            done_rx.recv().expect("last task signals");
        });
        start.elapsed()
    }

    fn spawn_many_remote_idle(&mut self) -> Duration {
        let handles = &mut self.handles;
        let start = Instant::now();
        for _ in 0..NUM_SPAWN {
            handles.push(spawn(async {}));
        }
        smol::block_on(async {
            for handle in handles.drain(..) {
                handle.await;
            }
        });
        start.elapsed()
    }

    fn ping_pong(&mut self) -> Duration {
        let done_rx = &self.done_rx;
        let (rem, done_tx) = (self.rem.clone(), self.done_tx.clone());
        let start = Instant::now();
        rem.store(NUM_PINGS, Relaxed);
        smol::block_on(async {
            spawn(async move {
                for _ in 0..NUM_PINGS {
                    let rem = rem.clone();
                    let done_tx = done_tx.clone();
                    spawn(async move {
                        let (tx1, rx1) = oneshot::channel::<()>();
                        let (tx2, rx2) = oneshot::channel::<()>();
                        spawn(async move {
                            rx1.await.expect("ping");
                            tx2.send(()).expect("pong receiver alive");
                        })
                        .detach();
                        tx1.send(()).expect("ping receiver alive");
                        rx2.await.expect("pong");
                        if 1 == rem.fetch_sub(1, Relaxed) {
                            done_tx.send(()).expect("bench thread waits");
                        }
                    })
                    .detach();
                }
            })
            .detach();
            done_rx.recv().expect("last pair signals");
        });
        start.elapsed()
    }

    fn yield_many(&mut self) -> Duration {
        let done_rx = &self.done_rx;
        let start = Instant::now();
        for _ in 0..YIELD_TASKS {
            let tx = self.done_tx.clone();
            spawn(async move {
                for _ in 0..NUM_YIELD {
                    yield_now().await;
                }
                tx.send(()).expect("bench thread waits");
            })
            .detach();
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
        smol::block_on(async {
            spawn(async move {
                smol_chain(done_tx, CHAIN_LEN);
            })
            .detach();
            done_rx.recv().expect("end of the chain signals");
        });
        start.elapsed()
    }
}
