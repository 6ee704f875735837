//! # netloop-scheduler: a group of pinned event loops, with tokio's APIs
//!
//! A [`runtime::Runtime`] owns an [`EventLoopGroup`]: N event loops
//! ([`netloop_reactor::EventLoop`]), each on its own thread for life, handed out
//! round-robin. A task stays, from its first poll, on the loop that polled it (a `Send`
//! task no loop has polled yet may start on an idle loop, see `docs/affinity.md`), so a
//! task's wakes on its own thread cost no atomic operation and no syscall, and `!Send`
//! futures are first-class ([`task::spawn_local`] works on any loop thread).
//!
//! The modules mirror tokio's: [`runtime`], [`task`], [`time`]. Code written against
//! those tokio APIs compiles with the crate name changed.
//!
//! ```
//! use std::time::Duration;
//! use netloop_scheduler::{runtime::Builder, task, time};
//!
//! let rt = Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
//! rt.block_on(async {
//!     let handle = task::spawn(async {
//!         time::sleep(Duration::from_millis(5)).await;
//!         "done"
//!     });
//!     assert_eq!(handle.await.unwrap(), "done");
//! });
//! # Ok::<(), std::io::Error>(())
//! ```

#![deny(missing_docs)]

mod blocking;
mod context;
pub mod drivers;
mod group;
pub mod placement;
pub mod runtime;
mod shared;
pub mod sync;
pub mod task;
pub mod time;

pub use group::EventLoopGroup;
pub use netloop_reactor as reactor;
