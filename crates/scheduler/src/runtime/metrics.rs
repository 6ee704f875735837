//! `RuntimeMetrics`: tokio's stable runtime metrics, read from the loops' own, and
//! `Handle::metrics`, which makes them (above the handle).

use std::time::Duration;

use netloop_reactor::LoopMetrics;

use super::handle::Handle;

/// A view of a runtime's metrics (tokio's `runtime::RuntimeMetrics`). Each call reads
/// the loops' published counters; a worker is one event loop, by index.
///
/// For everything netloop counts per loop (tasks run, I/O events, wakeups, ...), see
/// [`EventLoopHandle::metrics`](netloop_reactor::EventLoopHandle::metrics) through
/// [`Handle::event_loops`].
///
/// ```
/// let rt = netloop_scheduler::runtime::Builder::new_multi_thread().worker_threads(2).build()?;
/// let metrics = rt.metrics();
/// assert_eq!(metrics.num_workers(), 2);
/// assert_eq!(metrics.num_alive_tasks(), 0);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RuntimeMetrics {
    handle: Handle,
}

impl Handle {
    /// The runtime's metrics (tokio's stable set; netloop's per-loop metrics are on
    /// [`event_loops`](Self::event_loops)).
    pub fn metrics(&self) -> RuntimeMetrics {
        RuntimeMetrics { handle: self.clone() }
    }
}

impl RuntimeMetrics {
    fn worker(&self, worker: usize) -> LoopMetrics {
        let loops = self.handle.event_loops();
        match loops.get(worker) {
            Some(l) => l.metrics(),
            None => panic!(
                "worker index {worker} out of bounds: the runtime has {} workers",
                loops.len()
            ),
        }
    }

    /// The number of worker threads: event loops (1 for a current-thread runtime).
    pub fn num_workers(&self) -> usize {
        self.handle.event_loops().len()
    }

    /// Tasks spawned on the runtime's loops that have not finished (blocking tasks
    /// not included).
    pub fn num_alive_tasks(&self) -> usize {
        self.handle.event_loops().iter().map(|l| l.metrics().live_tasks).sum()
    }

    /// Tasks submitted from other threads that no loop has taken yet: the sum of the
    /// loops' inboxes, netloop's counterpart of tokio's global queue.
    pub fn global_queue_depth(&self) -> usize {
        self.handle.event_loops().iter().map(|l| l.metrics().inbox_tasks).sum()
    }

    /// How long worker `worker` has been busy (not blocked in `select`). Panics if
    /// `worker` is not below [`num_workers`](Self::num_workers).
    pub fn worker_total_busy_duration(&self, worker: usize) -> Duration {
        self.worker(worker).busy
    }

    /// How many times worker `worker` blocked with nothing to do.
    pub fn worker_park_count(&self, worker: usize) -> u64 {
        self.worker(worker).parks
    }

    /// How many times worker `worker` blocked or woke from blocking.
    pub fn worker_park_unpark_count(&self, worker: usize) -> u64 {
        let m = self.worker(worker);
        m.parks + m.unparks
    }
}
