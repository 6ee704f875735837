//! Workloads for the `netloop-reactor` benchmarks.
//!
//! The criterion targets in `benches/` and the `reactor_report` example both drive
//! these functions, so the two measure exactly the same thing. The tokio peers live in
//! `tokio_peer/` (tokio is only a dev-dependency of this package). Every function runs
//! one batch and returns how long it took; nothing here asserts a speed.
//!
//! The runtime benchmarks (the shapes of tokio's `rt_multi_threaded` benches, on
//! `netloop::runtime` with two workers, against tokio and smol) are in [`runtime`].
//!
//! The network benchmarks (echo and HTTP servers on one core, a load client on the
//! other; netloop, tokio, smol and a raw mio loop) are in [`net`].

use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use netloop_reactor::{DriveError, EventLoop, EventLoopHandle, LoopMetrics, ScheduledHandle};

pub mod net;
pub mod report;
pub mod runtime;

/// Tasks (or timers) per batch in every shape.
pub const TASKS: usize = 1_000_000;

/// The delay of the timers of shape (c): far enough that none ever fires.
pub const TIMER_DELAY: Duration = Duration::from_secs(3600);

/// Shuts `event_loop` down (quiet period 0) and drives it on this thread until it
/// terminates.
pub fn shutdown_local(mut event_loop: EventLoop) {
    let handle = event_loop.handle();
    let terminated = handle
        .shutdown_gracefully_with(Duration::ZERO, Duration::from_secs(5))
        .expect("valid shutdown parameters");
    event_loop.run().expect("the loop terminates");
    drop(terminated);
}

/// Shape (a): `n` no-op closures submitted from a future running on the loop's own
/// thread (so they take the local run-queue path), until the last one ran.
///
/// Completion is observed by awaiting a future spawned after the closures: the local
/// run queue is FIFO, so when it has run, every closure has.
pub fn local_execute(event_loop: &mut EventLoop, n: usize) -> Duration {
    let handle = event_loop.handle();
    event_loop
        .block_on(async move {
            let start = Instant::now();
            for _ in 0..n {
                handle.execute(|| {}).expect("loop accepts tasks");
            }
            handle.spawn(async {}).expect("loop accepts tasks").await;
            start.elapsed()
        })
        .expect("loop is running")
}

/// Shape (a'): like [`local_execute`] with `n` no-op futures (`spawn` on the loop's
/// thread, tasks detached) instead of closures: the like-for-like peer of tokio's
/// `spawn`, since a no-op closure is a zero-sized box that allocates nothing.
pub fn local_spawn(event_loop: &mut EventLoop, n: usize) -> Duration {
    let handle = event_loop.handle();
    event_loop
        .block_on(async move {
            let start = Instant::now();
            for _ in 0..n {
                handle.spawn(async {}).expect("loop accepts tasks").detach();
            }
            handle.spawn(async {}).expect("loop accepts tasks").await;
            start.elapsed()
        })
        .expect("loop is running")
}

/// One batch of shape (b): time, and how the loop's wakeup counters moved.
#[derive(Debug, Clone, Copy)]
pub struct RemoteRun {
    /// From the first submission until the last task ran (seen by the submitter).
    pub elapsed: Duration,
    /// Eventfd writes the producer made during the batch.
    pub wakeups_sent: u64,
    /// Submissions that found the loop awake and skipped the wake.
    pub wakeups_suppressed: u64,
    /// Loop iterations during the batch (each one a `Poll::poll`).
    pub iterations: u64,
}

/// A loop running `EventLoop::run` on a thread of its own, fed from other threads.
pub struct RemoteLoop {
    handle: EventLoopHandle,
    thread: Option<JoinHandle<Result<(), DriveError>>>,
}

impl RemoteLoop {
    /// Creates a loop and starts driving it on a new thread.
    pub fn start() -> std::io::Result<RemoteLoop> {
        let mut event_loop = EventLoop::new()?;
        let handle = event_loop.handle();
        let thread = thread::Builder::new()
            .name("netloop-bench-loop".into())
            .spawn(move || event_loop.run())?;
        Ok(RemoteLoop {
            handle,
            thread: Some(thread),
        })
    }

    /// The loop's handle.
    pub fn handle(&self) -> &EventLoopHandle {
        &self.handle
    }

    /// Shape (b): submits `n` no-op closures from this thread, then one that signals
    /// back, and waits for it (the inbox is FIFO, so every closure has run by then).
    pub fn run_batch(&self, n: usize) -> RemoteRun {
        let before = self.handle.metrics();
        let (tx, rx) = mpsc::channel::<()>();
        let start = Instant::now();
        for _ in 0..n {
            self.handle.execute(|| {}).expect("loop accepts tasks");
        }
        self.handle
            .execute(move || {
                let _ = tx.send(());
            })
            .expect("loop accepts tasks");
        rx.recv().expect("the last task ran");
        let elapsed = start.elapsed();
        let after = self.handle.metrics();
        RemoteRun {
            elapsed,
            wakeups_sent: after.wakeups_sent - before.wakeups_sent,
            wakeups_suppressed: after.wakeups_suppressed - before.wakeups_suppressed,
            iterations: iterations_between(&before, &after),
        }
    }

    /// Shuts the loop down and joins its thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = self
                .handle
                .shutdown_gracefully_with(Duration::ZERO, Duration::from_secs(5));
            let _ = self.handle.await_termination(Duration::from_secs(10));
            let _ = thread.join();
        }
    }
}

impl Drop for RemoteLoop {
    fn drop(&mut self) {
        self.stop();
    }
}

fn iterations_between(before: &LoopMetrics, after: &LoopMetrics) -> u64 {
    after.iterations.saturating_sub(before.iterations)
}

/// Shape (c), interleaved: on the loop's own thread, `n` times schedule a one-shot
/// closure an hour away and cancel it at once.
pub fn timers_schedule_cancel_each(event_loop: &mut EventLoop, n: usize) -> Duration {
    let handle = event_loop.handle();
    event_loop
        .block_on(async move {
            let start = Instant::now();
            for _ in 0..n {
                let timer = handle.schedule(TIMER_DELAY, || {}).expect("loop accepts tasks");
                timer.cancel();
            }
            start.elapsed()
        })
        .expect("loop is running")
}

/// Shape (c), bulk: on the loop's own thread, schedule `n` one-shot closures an hour
/// away, then cancel them all in submission order and drop the handles. The handles'
/// vector is allocated before the clock starts.
pub fn timers_schedule_all_then_cancel(event_loop: &mut EventLoop, n: usize) -> Duration {
    let handle = event_loop.handle();
    event_loop
        .block_on(async move {
            let mut timers: Vec<ScheduledHandle> = Vec::with_capacity(n);
            let start = Instant::now();
            for _ in 0..n {
                timers.push(handle.schedule(TIMER_DELAY, || {}).expect("loop accepts tasks"));
            }
            for timer in timers.drain(..) {
                timer.cancel();
            }
            start.elapsed()
        })
        .expect("loop is running")
}
