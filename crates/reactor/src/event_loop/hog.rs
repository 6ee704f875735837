//! The hog check: a task's turn that held its loop longer than a threshold is named
//! (`EventLoopBuilder::hog_threshold`).

use crate::clock;
use crate::core::Core;
use crate::sys;

/// The hog check: a turn that held the loop longer than the threshold is named.
///
/// Each turn costs one read of `sys::busy_ticks` (the time-stamp counter on x86_64):
/// the end of one turn is the start of the next. `floor_ticks` is the threshold in
/// ticks of the slowest counter assumed (0.5 GHz), so a turn with fewer ticks is under
/// the threshold; only a turn above it is converted to time and compared.
#[derive(Clone, Copy)]
pub(super) struct HogWatch {
    pub(super) threshold_nanos: u64,
    pub(super) floor_ticks: u64,
}

impl HogWatch {
    pub(super) fn new(threshold: std::time::Duration) -> HogWatch {
        let threshold_nanos = clock::nanos(threshold);
        HogWatch {
            threshold_nanos,
            floor_ticks: threshold_nanos / 2,
        }
    }
}

/// Reports a turn of task `id` that took `ticks` if it passed the threshold.
#[cold]
#[inline(never)]
pub(super) fn report_hog(core: &Core, watch: HogWatch, id: u64, ticks: u64) {
    let nanos = sys::busy_ticks_to_nanos(ticks);
    if nanos < watch.threshold_nanos {
        return;
    }
    core.shared
        .published
        .hog_polls
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tracing::warn!(
        target: "netloop::reactor",
        loop_id = core.shared.id,
        task_id = id,
        poll_ms = nanos as f64 / 1e6,
        threshold_ms = watch.threshold_nanos as f64 / 1e6,
        "a task held its event loop for one long poll: every other task, socket and timer of \
         the loop waited; move blocking or CPU-heavy work into `block_in_place` or `spawn_blocking`"
    );
}
