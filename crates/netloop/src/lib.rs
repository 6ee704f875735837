//! # netloop
//!
//! Netty's event-loop design as a Rust async runtime, with tokio's API.
//!
//! A runtime is a group of event loops, each pinned to one thread for life. Every loop
//! repeats *select → process I/O → run tasks*, with a lock-free inbox for other
//! threads, a local run queue for its own, a timer heap, and wakeup suppression (a
//! producer writes the eventfd only when the loop is blocked, and only the first one
//! to notice). A task stays on the loop it was spawned on: no work stealing, cheap
//! same-thread wakes, and `!Send` futures anywhere on a loop.
//!
//! The module layout is tokio's: replace `tokio::` with `netloop::`.
//!
//! ```
//! use std::time::Duration;
//!
//! let rt = netloop::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let task = netloop::spawn(async {
//!         netloop::time::sleep(Duration::from_millis(1)).await;
//!         1 + 1
//!     });
//!     assert_eq!(task.await.unwrap(), 2);
//! });
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! ## When to choose netloop over tokio
//!
//! When connections are independent and long-lived (proxies, gateways, protocol
//! servers): pinning each to one loop keeps its state on one core and its wakes free of
//! cross-thread traffic. tokio's work stealing wins when task sizes are very uneven and
//! cannot be spread by connection.

#![deny(missing_docs)]

pub use netloop_macros::{main, test};
pub use netloop_net::fs;
pub use netloop_net::io;
pub use netloop_net::process;
pub use netloop_net::signal;
pub use netloop_scheduler::task::spawn;
pub use netloop_scheduler::{runtime, task, task_local, time};

/// Synchronization primitives: tokio's `sync` module itself (channels, `Mutex`,
/// `Notify`, `Semaphore`, ...), which is runtime-agnostic and works on netloop.
pub mod sync {
    pub use tokio::sync::*;
}

#[cfg(feature = "hyper")]
pub mod hyper_rt;

mod macros;

#[doc(hidden)]
pub mod __private;

/// TCP networking (tokio's `net`), plus netloop's acceptor [`net::serve`].
pub mod net {
    pub use netloop_net::{
        Serve, TcpListener, TcpSocket, TcpStream, ToSocketAddrs, UdpSocket, UnixDatagram, UnixListener, UnixSocket,
        UnixStream, lookup_host, serve, tcp, unix,
    };
}

/// Netty-level access to the event loops: the group, each loop's handle (`execute`,
/// `schedule*`, `in_event_loop`, metrics), and the single-loop reactor itself.
pub mod event_loop {
    pub use netloop_reactor::*;
    pub use netloop_scheduler::EventLoopGroup;
}
