//! netloop's own versions of tokio's I/O utilities that never wait on a socket:
//! in-memory pipes, endless readers and writers, and the copy loops.
//!
//! They differ from tokio's (which `netloop::io` used to re-export) in one way that
//! matters: each operation spends a unit of *netloop's* cooperative budget. tokio's
//! versions consult tokio's budget, which no netloop loop sets, so on netloop they
//! never run out: a task looping on `io::repeat` or `io::sink` would never give its
//! loop back, and every other task on that loop would starve.

mod copy;
mod copy_bidirectional;
mod copy_buf;
mod empty;
mod mem;
mod repeat;
mod sink;

pub use copy::copy;
pub use copy_bidirectional::{copy_bidirectional, copy_bidirectional_with_sizes};
pub use copy_buf::copy_buf;
pub use empty::{Empty, empty};
pub use mem::{DuplexStream, SimplexStream, duplex, simplex};
pub use repeat::{Repeat, repeat};
pub use sink::{Sink, sink};

use std::task::{Context, Poll, ready};

/// The buffer of `copy` and `copy_bidirectional` (tokio's size).
const DEFAULT_BUF_SIZE: usize = 8 * 1024;

/// Spends one unit of the task's budget on an operation that is always ready; when
/// none is left, `Pending` (with the task woken to run again later).
#[inline]
fn spend_budget(cx: &mut Context<'_>) -> Poll<()> {
    ready!(netloop_reactor::coop::poll_proceed(cx)).made_progress();
    Poll::Ready(())
}
