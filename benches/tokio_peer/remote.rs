//! Tokio peers of shape (b): no-op tasks spawned from another thread onto a runtime
//! whose worker runs on a thread of its own.

use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::oneshot;

/// A runtime running on a thread of its own, fed through its `Handle`.
pub struct RemotePeer {
    handle: Handle,
    /// The multi-thread runtime, which owns its worker thread.
    runtime: Option<Runtime>,
    /// The current-thread runtime's thread and the signal that ends its `block_on`.
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl RemotePeer {
    /// A current-thread runtime driven by `block_on` on a new thread.
    pub fn current_thread() -> RemotePeer {
        let rt = Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let handle = rt.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = thread::Builder::new()
            .name("tokio-bench-loop".into())
            .spawn(move || {
                rt.block_on(async move {
                    let _ = stopped.await;
                });
            })
            .expect("spawn the runtime's thread");
        RemotePeer {
            handle,
            runtime: None,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// A multi-thread runtime with a single worker.
    pub fn multi_thread_one_worker() -> RemotePeer {
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("tokio runtime");
        RemotePeer {
            handle: rt.handle().clone(),
            runtime: Some(rt),
            stop: None,
            thread: None,
        }
    }

    /// `n` detached no-op tasks spawned from this thread, then one that signals back;
    /// the injection queue is FIFO, so all have run when the signal arrives.
    pub fn run_batch(&self, n: usize) -> Duration {
        let (tx, rx) = mpsc::channel::<()>();
        let start = Instant::now();
        for _ in 0..n {
            drop(self.handle.spawn(async {}));
        }
        drop(self.handle.spawn(async move {
            let _ = tx.send(());
        }));
        rx.recv().expect("the last task ran");
        start.elapsed()
    }
}

impl Drop for RemotePeer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        drop(self.runtime.take());
    }
}
