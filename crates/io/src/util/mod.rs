//! The extension traits, their futures, and the adapters and helpers built on the four
//! I/O traits.

mod adapters;
mod buf_reader;
mod buf_stream;
mod buf_writer;
mod copy;
mod ext_buf_read;
mod ext_int;
mod ext_read;
mod ext_seek;
mod ext_write;
mod mem;
mod trivial;
mod vec_buf;

pub use adapters::{Chain, Take};
pub use buf_reader::BufReader;
pub use buf_stream::BufStream;
pub use buf_writer::BufWriter;
pub use copy::{copy, copy_bidirectional, copy_bidirectional_with_sizes, copy_buf};
pub use ext_buf_read::{AsyncBufReadExt, Lines, Split};
pub use ext_read::AsyncReadExt;
pub use ext_seek::AsyncSeekExt;
pub use ext_write::AsyncWriteExt;
pub use mem::{DuplexStream, SimplexStream, duplex, simplex};
pub use trivial::{Empty, Repeat, Sink, empty, repeat, sink};

/// The buffer size of `BufReader`, `BufWriter` and `copy` when none is given (8 KiB, as
/// tokio's).
const DEFAULT_BUF_SIZE: usize = 8 * 1024;

/// Spends one unit of the task's cooperative budget and keeps it spent: for operations
/// that always complete (the trivial streams).
#[inline]
fn spend_budget(cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
    let coop = std::task::ready!(netloop_reactor::coop::poll_proceed(cx));
    coop.made_progress();
    std::task::Poll::Ready(())
}
