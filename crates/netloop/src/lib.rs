//! # netloop
//!
//! Netty's event-loop design as a Rust async runtime. This facade will expose tokio's
//! module layout (`runtime`, `task`, `time`, `net`, `io`, ...). Today it offers the
//! event loop itself, under [`event_loop`].

#![warn(missing_docs)]

pub use netloop_reactor as event_loop;
