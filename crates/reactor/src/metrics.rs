//! Per-loop metrics (design §8).
//!
//! The loop keeps its counters in plain fields and publishes them with one relaxed
//! store each per iteration, so reading metrics costs the loop nothing per task. Only
//! producers' wakeup counters are written by other threads; they live on their own
//! cache line so they do not bounce the inbox's.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::LoopState;

/// A snapshot of one loop's counters. Counts are totals since the loop was created.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoopMetrics {
    /// Where the loop is in its life.
    pub state: LoopState,
    /// Tasks waiting: inbox + local run queue + tail queue.
    pub pending_tasks: usize,
    /// Tasks run: polls of futures, closures, scheduled tasks and tail tasks.
    pub tasks_run: u64,
    /// I/O readiness events processed (the loop's own wakeups not included).
    pub io_events: u64,
    /// Readiness wakes that crossed to another thread: the waiting task lives on
    /// another loop, or is not a loop task at all (`block_on` on a plain thread, a
    /// foreign waker). A connection whose task runs on the loop its socket is
    /// registered with adds nothing here; each wake counted cost an inbox push and,
    /// if the other loop slept, an eventfd write.
    pub io_wakes_remote: u64,
    /// Loop iterations (select, process I/O, run tasks).
    pub iterations: u64,
    /// Eventfd writes producers actually made to wake the loop.
    pub wakeups_sent: u64,
    /// Remote submissions that needed no wake because the loop was awake.
    pub wakeups_suppressed: u64,
    /// Wakeups the loop received from its eventfd.
    pub wakeups_received: u64,
    /// Times the loop blocked in `select` with nothing to do (tokio's worker parks).
    pub parks: u64,
    /// Times a blocking `select` returned (published at the end of the iteration, so
    /// `parks` runs ahead of it while the loop is blocked and just after it woke).
    pub unparks: u64,
    /// Tasks submitted from other threads and not yet taken by the loop (its inbox).
    pub inbox_tasks: usize,
    /// Blocking selects that returned with nothing to do before their deadline
    /// (what Netty counts to detect the JDK epoll bug; here only reported).
    pub premature_wakeups: u64,
    /// Times the loop, about to block after taking work from its inbox, spun a little
    /// longer first (see [`EventLoopBuilder::idle_spin`](crate::EventLoopBuilder::idle_spin)).
    pub idle_spins: u64,
    /// Spins that found work before they ended, each saving a producer's wakeup.
    pub idle_spins_found_work: u64,
    /// Timers in the wheel: scheduled tasks and pending sleeps.
    pub scheduled_tasks: usize,
    /// Live I/O registrations.
    pub registrations: usize,
    /// Futures spawned on this loop that have not finished.
    pub live_tasks: usize,
    /// Time spent outside `Poll::poll`, i.e. working, counted up to the last time the
    /// loop went idle.
    ///
    /// On x86_64 it is measured with the CPU's time-stamp counter, read as the loop
    /// goes idle and as it wakes (one instruction each), and converted to time at the
    /// counter's rate measured against the precise clock. Elsewhere it is measured on
    /// the coarse monotonic clock, which moves once per scheduler tick (1 to 4 ms) on
    /// Linux: a short stretch of work may count as zero or as a whole tick, but the
    /// errors cancel out over many stretches, so over a second or more the total is
    /// accurate. The precise clock would cost two reads each time the loop sleeps, a
    /// cost that grows with the rate of wake-ups.
    pub busy: Duration,
    /// `busy` divided by the time since the loop started (0 before it started).
    pub utilization: f64,
    /// Task polls that held the loop longer than the hog threshold
    /// (`EventLoopBuilder::hog_threshold`): while one runs, every other task of the
    /// loop waits.
    pub hog_polls: u64,
}

#[derive(Default)]
#[repr(align(128))]
pub(crate) struct ProducerCounters {
    pub(crate) wakeups_sent: AtomicU64,
    pub(crate) wakeups_suppressed: AtomicU64,
}

/// Values the loop publishes once per iteration.
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct Published {
    pub(crate) tasks_run: AtomicU64,
    pub(crate) io_events: AtomicU64,
    pub(crate) io_wakes_remote: AtomicU64,
    pub(crate) iterations: AtomicU64,
    pub(crate) wakeups_received: AtomicU64,
    pub(crate) premature_wakeups: AtomicU64,
    pub(crate) parks: AtomicU64,
    pub(crate) unparks: AtomicU64,
    pub(crate) idle_spins: AtomicU64,
    pub(crate) idle_spins_found_work: AtomicU64,
    pub(crate) local_pending: AtomicU64,
    pub(crate) scheduled_tasks: AtomicU64,
    pub(crate) live_tasks: AtomicU64,
    /// Published by the loop as it goes idle, the only time it changes.
    pub(crate) busy_ticks: AtomicU64,
    /// Clock nanos when the loop first ran; 0 before.
    pub(crate) started_at: AtomicU64,
    /// Counted as each hog is seen (rare).
    pub(crate) hog_polls: AtomicU64,
}

/// The loop thread's own running totals, published by `publish` (busy time as the
/// loop goes idle).
#[derive(Default, Clone, Copy)]
pub(crate) struct LoopCounters {
    pub(crate) tasks_run: u64,
    pub(crate) io_events: u64,
    pub(crate) io_wakes_remote: u64,
    pub(crate) iterations: u64,
    pub(crate) wakeups_received: u64,
    pub(crate) premature_wakeups: u64,
    pub(crate) parks: u64,
    pub(crate) unparks: u64,
    pub(crate) idle_spins: u64,
    pub(crate) idle_spins_found_work: u64,
    pub(crate) busy_ticks: u64,
}

impl Published {
    #[inline]
    pub(crate) fn publish(&self, c: &LoopCounters, local_pending: usize, scheduled: usize, live: usize) {
        self.tasks_run.store(c.tasks_run, Relaxed);
        self.io_events.store(c.io_events, Relaxed);
        self.io_wakes_remote.store(c.io_wakes_remote, Relaxed);
        self.iterations.store(c.iterations, Relaxed);
        self.wakeups_received.store(c.wakeups_received, Relaxed);
        self.premature_wakeups.store(c.premature_wakeups, Relaxed);
        self.parks.store(c.parks, Relaxed);
        self.unparks.store(c.unparks, Relaxed);
        self.idle_spins.store(c.idle_spins, Relaxed);
        self.idle_spins_found_work.store(c.idle_spins_found_work, Relaxed);
        self.local_pending.store(local_pending as u64, Relaxed);
        self.scheduled_tasks.store(scheduled as u64, Relaxed);
        self.live_tasks.store(live as u64, Relaxed);
    }
}
