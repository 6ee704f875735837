//! Asynchronous signal handling, as in `tokio::signal`.
//!
//! The OS delivers a signal to the whole process, at any moment, on any thread. netloop
//! installs one handler per signal number the first time a program listens for it; the
//! handler only records the signal and writes a byte to a self-pipe. Each runtime that
//! listens reads that pipe in a task on one of its loops and wakes every listener of
//! the process, each on its own loop. So several listeners for one signal all see it,
//! and a listener keeps working after the runtime that created another one is gone.
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! # use netloop_scheduler as netloop;
//! # let rt = netloop::runtime::Runtime::new()?;
//! # rt.block_on(async {
//! netloop_net::signal::ctrl_c().await?;
//! println!("Ctrl-C: shutting down");
//! # std::io::Result::Ok(())
//! # })
//! # }
//! ```

mod driver;
mod registry;
pub mod unix;

use std::io;

/// Completes at the next Ctrl-C (`SIGINT`) to this process.
///
/// A server that stops accepting at Ctrl-C; the `serve` acceptor could be aborted the
/// same way.
///
/// ```no_run
/// use netloop_net::TcpListener;
/// use netloop_scheduler::task;
///
/// # let rt = netloop_scheduler::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// let listener = TcpListener::bind("127.0.0.1:8080").await?;
/// let server = task::spawn(async move {
///     while let Ok((stream, _)) = listener.accept().await {
///         task::spawn(async move { drop(stream) });
///     }
/// });
/// netloop_net::signal::ctrl_c().await?;
/// server.abort();
/// println!("stopped accepting");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// The first call installs netloop's `SIGINT` handler, which replaces the default action
/// of ending the process for the rest of its life: a program that awaits `ctrl_c` once
/// and then goes on keeps running at the next Ctrl-C.
///
/// # Errors
///
/// The handler could not be installed, or this runtime has shut down.
///
/// # Panics
///
/// Outside a netloop runtime's context (at the first poll).
pub async fn ctrl_c() -> io::Result<()> {
    unix::ctrl_c()?.recv().await;
    Ok(())
}
