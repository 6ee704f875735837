//! The runtime: tokio's `Runtime`, `Builder` and `Handle`, on a group of pinned loops.
//!
//! ```
//! let rt = netloop_scheduler::runtime::Runtime::new()?;
//! let answer = rt.block_on(async {
//!     let task = netloop_scheduler::task::spawn(async { 6 * 7 });
//!     task.await.unwrap()
//! });
//! assert_eq!(answer, 42);
//! # Ok::<(), std::io::Error>(())
//! ```

pub(crate) mod block_on;
mod builder;
#[cfg(feature = "tokio-compat")]
pub(crate) mod compat;
#[cfg(not(feature = "tokio-compat"))]
mod compat_hint;
#[cfg(all(tokio_unstable, feature = "taskdump"))]
pub mod dump;
pub(crate) mod flavor;
pub(crate) mod handle;
#[cfg(tokio_unstable)]
mod histogram;
#[cfg(tokio_unstable)]
pub(crate) mod hooks;
pub(crate) mod id;
mod local;
pub(crate) mod metrics;
mod rng;
// `runtime::runtime`, as tokio names it: the file of the type the module is named for.
#[allow(clippy::module_inception)]
mod runtime;
#[cfg(tokio_unstable)]
pub(crate) mod unstable;
#[cfg(tokio_unstable)]
mod unstable_api;

pub use builder::Builder;
pub use flavor::RuntimeFlavor;
pub use handle::{EnterGuard, Handle};
pub use id::Id;
pub use local::{LocalOptions, LocalRuntime};
pub use metrics::RuntimeMetrics;
pub use runtime::{Runtime, is_rt_shutdown_err, worker_index};

#[cfg(all(tokio_unstable, feature = "taskdump"))]
pub use dump::Dump;
#[cfg(tokio_unstable)]
pub use histogram::{
    HistogramConfiguration, HistogramScale, InvalidHistogramConfiguration, LogHistogram, LogHistogramBuilder,
};
#[cfg(tokio_unstable)]
pub use hooks::TaskMeta;
#[cfg(tokio_unstable)]
pub use rng::RngSeed;
/// `select!`'s and `join!`'s random numbers, from this thread's generator (seeded per
/// runtime by `Builder::rng_seed` under `tokio_unstable`).
#[doc(hidden)]
pub use rng::thread_rng_n;
#[cfg(tokio_unstable)]
pub use unstable::UnhandledPanic;

pub use crate::context::TryCurrentError;
