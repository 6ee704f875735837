//! What `--cfg tokio_unstable` adds to a runtime's settings and state: the builder's
//! unstable settings ([`UnstableSettings`]), and what a built runtime keeps of them
//! ([`RuntimeUnstable`], in its shared state). The builder's unstable setters and
//! `Handle::dump` are in `unstable_api`, above the handle.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;

use netloop_reactor::PollTimes;

use super::histogram::{HistogramSettings, Shape};
use super::hooks::{RuntimeTasks, TaskHooks};
use super::rng::{RngSeed, SeedSequence};

/// What a runtime does when a spawned task panics (tokio's unstable
/// `runtime::UnhandledPanic`), for
/// [`Builder::unhandled_panic`](super::Builder::unhandled_panic) and
/// [`LocalSet::unhandled_panic`](crate::task::LocalSet::unhandled_panic).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum UnhandledPanic {
    /// The panic goes to the task's `JoinHandle` as a `JoinError`, and every other
    /// task runs on: the default.
    Ignore,
    /// The runtime (or the `LocalSet`) shuts down at once: every other task is
    /// dropped, and `block_on` (or `run_until`) panics, now and at every later call.
    ShutdownRuntime,
}

/// The message of `block_on` on a runtime shut down by [`UnhandledPanic::ShutdownRuntime`].
pub(crate) const RUNTIME_PANIC_SHUTDOWN: &str =
    "a spawned task panicked and the runtime is configured to shut down on unhandled panic";

/// The builder's unstable settings.
#[derive(Clone)]
pub(crate) struct UnstableSettings {
    pub(crate) hooks: TaskHooks,
    pub(crate) unhandled_panic: UnhandledPanic,
    pub(crate) disable_lifo_slot: bool,
    pub(crate) rng_seed: Option<RngSeed>,
    pub(crate) histogram: HistogramSettings,
    /// `enable_alt_timer`: timers of a runtime that shut down complete.
    pub(crate) alt_timer: bool,
}

impl Default for UnstableSettings {
    fn default() -> Self {
        UnstableSettings {
            hooks: TaskHooks::default(),
            unhandled_panic: UnhandledPanic::Ignore,
            disable_lifo_slot: false,
            rng_seed: None,
            histogram: HistogramSettings::default(),
            alt_timer: false,
        }
    }
}

impl UnstableSettings {
    /// How the loops time their tasks' polls: a moving average on a multi-thread
    /// runtime (tokio keeps its mean only there), a histogram if one was asked for.
    pub(crate) fn poll_times(&self, multi_thread: bool) -> Option<PollTimes> {
        let histogram = self.histogram.shape().map(|shape| {
            let bucket_of: netloop_reactor::BucketOf = Arc::new(move |n| shape.bucket(n));
            (shape.num_buckets(), bucket_of)
        });
        (multi_thread || histogram.is_some()).then_some(PollTimes {
            mean: multi_thread,
            histogram,
        })
    }

    /// What the built runtime keeps.
    pub(crate) fn runtime_state(&self) -> RuntimeUnstable {
        RuntimeUnstable {
            tasks: Arc::new(RuntimeTasks {
                hooks: self.hooks.clone(),
                spawned: Default::default(),
            }),
            histogram: self.histogram.shape(),
            seeds: self.rng_seed.as_ref().map(SeedSequence::new),
            panicked: matches!(self.unhandled_panic, UnhandledPanic::ShutdownRuntime)
                .then(|| Arc::new(AtomicBool::new(false))),
            disable_lifo_slot: self.disable_lifo_slot,
            #[cfg(feature = "taskdump")]
            tracer: Arc::default(),
        }
    }
}

/// What a runtime keeps of its unstable settings.
pub(crate) struct RuntimeUnstable {
    /// Its hooks and its count of spawned tasks.
    pub(crate) tasks: Arc<RuntimeTasks>,
    /// The shape of its loops' poll-time histograms, if they keep one.
    pub(crate) histogram: Option<Shape>,
    /// The seeds of its threads' random numbers, if it was given one.
    pub(crate) seeds: Option<SeedSequence>,
    /// With `UnhandledPanic::ShutdownRuntime`: set once a task panicked.
    pub(crate) panicked: Option<Arc<AtomicBool>>,
    /// `Builder::disable_lifo_slot`: a task's spawns start on another loop.
    pub(crate) disable_lifo_slot: bool,
    /// Its traceable tasks (`Handle::dump`).
    #[cfg(feature = "taskdump")]
    pub(crate) tracer: Arc<super::dump::Tracer>,
}

impl RuntimeUnstable {
    /// Whether a task's panic shut the runtime down.
    pub(crate) fn shut_down_by_panic(&self) -> bool {
        self.panicked.as_ref().is_some_and(|p| p.load(SeqCst))
    }
}
