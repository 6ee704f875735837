//! # netloop-scheduler (skeleton)
//!
//! Will hold the `EventLoopGroup`: N [`netloop_reactor::EventLoop`]s, each on its own
//! thread, a round-robin chooser, futures pinned to loops, the tokio-shaped runtime
//! builder and handle, `spawn_blocking`, and time. Until then it re-exports the single
//! loop so dependents can build.

#![warn(missing_docs)]

pub use netloop_reactor as reactor;
