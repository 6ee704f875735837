//! Tokio peer of the runtime shapes: tokio's own `benches/rt_multi_threaded.rs`, on a
//! multi-thread runtime with `WORKERS` workers (tokio's bench uses 4).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use netloop_benches::runtime::{
    CHAIN_LEN, DONE_CAPACITY, NUM_PINGS, NUM_SPAWN, NUM_YIELD, RuntimePeer, WORKERS, YIELD_TASKS,
};
use tokio::runtime::{Builder, Runtime};
use tokio::task::{JoinHandle, yield_now};

/// tokio's multi-thread runtime with `WORKERS` workers.
pub struct TokioRuntime {
    rt: Runtime,
    rem: Arc<AtomicUsize>,
    done_tx: SyncSender<()>,
    done_rx: Receiver<()>,
    handles: Vec<JoinHandle<()>>,
}

impl TokioRuntime {
    /// `Builder::new_multi_thread().worker_threads(WORKERS).enable_all()`.
    pub fn new() -> TokioRuntime {
        let rt = Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let (done_tx, done_rx) = mpsc::sync_channel(DONE_CAPACITY);
        TokioRuntime {
            rt,
            rem: Arc::new(AtomicUsize::new(0)),
            done_tx,
            done_rx,
            handles: Vec::with_capacity(NUM_SPAWN),
        }
    }
}

fn tokio_chain(done_tx: SyncSender<()>, n: usize) {
    if n == 0 {
        done_tx.send(()).expect("bench thread waits");
    } else {
        tokio::spawn(async move {
            tokio_chain(done_tx, n - 1);
        });
    }
}

impl RuntimePeer for TokioRuntime {
    fn name(&self) -> &'static str {
        "tokio"
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
                tokio::spawn(async move {
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
            tokio::spawn(async move {
                for _ in 0..NUM_SPAWN {
                    let tx = done_tx.clone();
                    let rem = rem.clone();
                    tokio::spawn(async move {
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
            tokio::spawn(async move {
                for _ in 0..NUM_PINGS {
                    let rem = rem.clone();
                    let done_tx = done_tx.clone();
                    tokio::spawn(async move {
                        let (tx1, rx1) = oneshot::channel::<()>();
                        let (tx2, rx2) = oneshot::channel::<()>();
                        tokio::spawn(async move {
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
            tokio::spawn(async move {
                tokio_chain(done_tx, CHAIN_LEN);
            });
            done_rx.recv().expect("end of the chain signals");
        });
        start.elapsed()
    }
}
