//! netloop's own versions of tokio's I/O utilities that never wait on a socket:
//! in-memory pipes, endless readers and writers, and the copy loops.
//!
//! Invariant: each operation spends a unit of *netloop's* cooperative budget. tokio's
//! versions of these utilities consult tokio's budget, which no netloop loop sets, so
//! on netloop they would never run out: a task looping on `io::repeat` or `io::sink`
//! would never give its loop back, and every other task on that loop would starve.

/// `AsyncWrite` for a writer that takes every byte and keeps none (`sink`, `empty`):
/// every operation succeeds at once, for a unit of budget.
macro_rules! discarding_writer {
    ($Type:ty) => {
        const _: () = {
            use std::io::{self, IoSlice};
            use std::pin::Pin;
            use std::task::{Context, Poll};

            impl tokio::io::AsyncWrite for $Type {
                #[inline]
                fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                    super::spent(cx, buf.len())
                }

                #[inline]
                fn poll_write_vectored(
                    self: Pin<&mut Self>,
                    cx: &mut Context<'_>,
                    bufs: &[IoSlice<'_>],
                ) -> Poll<io::Result<usize>> {
                    super::spent(cx, bufs.iter().map(|b| b.len()).sum())
                }

                #[inline]
                fn is_write_vectored(&self) -> bool {
                    true
                }

                #[inline]
                fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                    super::spent(cx, ())
                }

                /// Flushes: nothing is kept to shut down.
                #[inline]
                fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                    self.poll_flush(cx)
                }
            }
        };
    };
}

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

use std::io;
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

/// `Ok(value)` for an operation that is always ready, once it has spent a unit of the
/// task's budget (see [`spend_budget`]).
#[inline]
fn spent<T>(cx: &mut Context<'_>, value: T) -> Poll<io::Result<T>> {
    spend_budget(cx).map(|()| Ok(value))
}
