//! What a loop counts for tokio's unstable per-worker metrics (`RuntimeMetrics`'s
//! `worker_poll_count`, `worker_local_schedule_count`, `worker_steal_count`, ...): a
//! netloop runtime's worker is one loop.
//!
//! Built only with `--cfg tokio_unstable`. Without the flag none of this exists, and
//! the loop's hot paths (a task's turn, a wake, a spawn, a select) carry none of it.
//! With it, each event costs one relaxed atomic add on a cache line of the loop's own,
//! and a task's turn two reads of the precise clock when poll times are asked for
//! ([`EventLoopBuilder::poll_times`]).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

/// Which bucket of a poll-time histogram a poll of `n` nanoseconds falls in.
pub type BucketOf = Arc<dyn Fn(u64) -> usize + Send + Sync>;

/// How a loop times its tasks' polls (see
/// [`EventLoopBuilder::poll_times`](crate::EventLoopBuilder::poll_times)).
#[derive(Clone)]
pub struct PollTimes {
    /// Keep a moving average of poll times (`UnstableMetrics::mean_poll_time`).
    pub mean: bool,
    /// Count each poll in a histogram of this many buckets, the bucket of a poll of
    /// `n` nanoseconds being `bucket_of(n)` (clamped to the last bucket).
    pub histogram: Option<(usize, BucketOf)>,
}

impl std::fmt::Debug for PollTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollTimes")
            .field("mean", &self.mean)
            .field("histogram_buckets", &self.histogram.as_ref().map(|h| h.0))
            .finish()
    }
}

/// One loop's counters for tokio's unstable worker metrics, read with
/// [`EventLoopHandle::unstable_metrics`](crate::EventLoopHandle::unstable_metrics).
/// Every count is a total since the loop was created.
pub struct UnstableMetrics {
    polls: AtomicU64,
    local_schedules: AtomicU64,
    remote_schedules: AtomicU64,
    steals: AtomicU64,
    steal_operations: AtomicU64,
    noops: AtomicU64,
    overflows: AtomicU64,
    forced_yields: AtomicU64,
    mean_poll_nanos: AtomicU64,
    fds_registered: AtomicU64,
    fds_deregistered: AtomicU64,
    ready_events: AtomicU64,
    /// The thread that last took the loop's state to drive it.
    driver: Mutex<Option<ThreadId>>,
    mean: bool,
    histogram: Option<(Box<[AtomicU64]>, BucketOf)>,
    /// [`EventLoopBuilder::complete_timers_at_shutdown`](crate::EventLoopBuilder::complete_timers_at_shutdown).
    pub(crate) timers_complete_at_shutdown: bool,
}

impl UnstableMetrics {
    pub(crate) fn new(times: Option<&PollTimes>, timers_complete_at_shutdown: bool) -> UnstableMetrics {
        UnstableMetrics {
            timers_complete_at_shutdown,
            polls: AtomicU64::new(0),
            local_schedules: AtomicU64::new(0),
            remote_schedules: AtomicU64::new(0),
            steals: AtomicU64::new(0),
            steal_operations: AtomicU64::new(0),
            noops: AtomicU64::new(0),
            overflows: AtomicU64::new(0),
            forced_yields: AtomicU64::new(0),
            mean_poll_nanos: AtomicU64::new(0),
            fds_registered: AtomicU64::new(0),
            fds_deregistered: AtomicU64::new(0),
            ready_events: AtomicU64::new(0),
            driver: Mutex::new(None),
            mean: times.is_some_and(|t| t.mean),
            histogram: times.and_then(|t| t.histogram.clone()).map(|(n, bucket_of)| {
                let buckets = (0..n.max(1)).map(|_| AtomicU64::new(0)).collect();
                (buckets, bucket_of)
            }),
        }
    }

    /// Polls of the loop's tasks: each turn of a task (its future polled once), on
    /// the loop's thread or its stand-in's. Closures, timers and tail tasks are not
    /// counted, nor `block_on`'s own future.
    pub fn polls(&self) -> u64 {
        self.polls.load(Relaxed)
    }

    /// Tasks scheduled by this loop's thread while it drives the loop: spawned or woken
    /// onto its own run queue, or sent to another loop of its group.
    pub fn local_schedules(&self) -> u64 {
        self.local_schedules.load(Relaxed)
    }

    /// Tasks scheduled onto this loop from a thread that drives no loop of its group:
    /// spawned or woken there, through the loop's inbox.
    pub fn remote_schedules(&self) -> u64 {
        self.remote_schedules.load(Relaxed)
    }

    /// Tasks no loop had polled yet that another loop of the group handed to this one
    /// (netloop's work sharing: the busy loop gives, the idle one takes).
    pub fn steals(&self) -> u64 {
        self.steals.load(Relaxed)
    }

    /// Hand-offs to this loop (each brings one or more of [`steals`](Self::steals)).
    pub fn steal_operations(&self) -> u64 {
        self.steal_operations.load(Relaxed)
    }

    /// Times the loop woke from blocking in `select` and its iteration then ran no task
    /// and no closure: a wake-up that found nothing queued for the loop (a timer that
    /// only woke a `block_on` future, a shutdown request, a wake that raced ahead).
    pub fn noops(&self) -> u64 {
        self.noops.load(Relaxed)
    }

    /// Times the loop's run queue grew past 256 tasks, the capacity of
    /// a tokio worker's local queue, where tokio moves half of it to its shared queue
    /// (an overflow). A netloop run queue grows as needed and never overflows: this
    /// counts where tokio's would have.
    pub fn overflows(&self) -> u64 {
        self.overflows.load(Relaxed)
    }

    /// Times a task's cooperative budget ran out on this loop (counted as the last
    /// unit is spent, so a task that keeps asking is counted once per poll).
    pub fn forced_yields(&self) -> u64 {
        self.forced_yields.load(Relaxed)
    }

    /// A moving average of the loop's task polls (each new poll weighs 1/16); zero
    /// unless [`PollTimes::mean`] was asked for.
    pub fn mean_poll_time(&self) -> Duration {
        Duration::from_nanos(self.mean_poll_nanos.load(Relaxed))
    }

    /// Sockets, pipes and other descriptors registered with the loop's selector.
    pub fn fds_registered(&self) -> u64 {
        self.fds_registered.load(Relaxed)
    }

    /// Registrations removed from the loop's selector.
    pub fn fds_deregistered(&self) -> u64 {
        self.fds_deregistered.load(Relaxed)
    }

    /// Readiness events the loop processed (its own wake-ups not included).
    pub fn ready_events(&self) -> u64 {
        self.ready_events.load(Relaxed)
    }

    /// The thread that drives the loop now, or last drove it: its own thread, a
    /// current-thread runtime's `block_on` caller, or the stand-in that serves it while
    /// its thread blocks in place. `None` before the loop first ran.
    pub fn driver_thread(&self) -> Option<ThreadId> {
        *self.driver.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The histogram's bucket counts, if the loop keeps one.
    pub fn poll_time_histogram(&self) -> Option<Vec<u64>> {
        self.histogram
            .as_ref()
            .map(|(buckets, _)| buckets.iter().map(|b| b.load(Relaxed)).collect())
    }

    /// One bucket of the histogram: 0 if the loop keeps none or `bucket` is past its
    /// end.
    pub fn poll_time_histogram_bucket(&self, bucket: usize) -> u64 {
        self.histogram
            .as_ref()
            .and_then(|(buckets, _)| buckets.get(bucket))
            .map_or(0, |b| b.load(Relaxed))
    }

    /// Whether polls are timed at all.
    pub(crate) fn times_polls(&self) -> bool {
        self.mean || self.histogram.is_some()
    }

    /// A poll of `nanos`.
    pub(crate) fn record_poll_time(&self, nanos: u64) {
        if self.mean {
            // Written by the loop's driver alone: load and store, no read-modify-write.
            let mean = self.mean_poll_nanos.load(Relaxed);
            let next = if mean == 0 {
                nanos
            } else {
                (mean as i128 + (nanos as i128 - mean as i128) / 16) as u64
            };
            self.mean_poll_nanos.store(next, Relaxed);
        }
        if let Some((buckets, bucket_of)) = &self.histogram {
            let i = bucket_of(nanos).min(buckets.len() - 1);
            buckets[i].fetch_add(1, Relaxed);
        }
    }

    pub(crate) fn count_poll(&self) {
        self.polls.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_noop(&self) {
        self.noops.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_local_schedule(&self) {
        self.local_schedules.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_remote_schedule(&self) {
        self.remote_schedules.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_overflow(&self) {
        self.overflows.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_forced_yield(&self) {
        self.forced_yields.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_steal(&self, tasks: usize) {
        self.steals.fetch_add(tasks as u64, Relaxed);
        self.steal_operations.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_registration(&self) {
        self.fds_registered.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_deregistration(&self) {
        self.fds_deregistered.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_ready_events(&self, events: u64) {
        if events != 0 {
            self.ready_events.fetch_add(events, Relaxed);
        }
    }

    pub(crate) fn set_driver(&self, thread: ThreadId) {
        let mut driver = self.driver.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if *driver != Some(thread) {
            *driver = Some(thread);
        }
    }
}
