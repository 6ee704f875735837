//! `sink`: a writer that takes everything and keeps nothing.

use std::fmt;

/// A writer that accepts and discards every byte (tokio's `io::Sink`). Created by
/// [`sink`].
///
/// Copying a reader into a sink drains it, and counts its bytes:
///
/// ```
/// use netloop_net::io;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut reader: &[u8] = b"twenty-one bytes long"; // `&[u8]` is a reader
/// let n = io::copy(&mut reader, &mut io::sink()).await?;
/// assert_eq!(n, 21);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Sink {
    _private: (),
}

/// A writer that reports every write as complete and drops the data.
///
/// Every operation spends a unit of the task's cooperative budget, so a loop that
/// writes to it forever still lets the other tasks of its loop run.
///
/// ```
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// use netloop_net::io::AsyncWriteExt;
/// let n = netloop_net::io::sink().write(b"gone").await?;
/// assert_eq!(n, 4);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn sink() -> Sink {
    Sink { _private: () }
}

discarding_writer!(Sink);

impl fmt::Debug for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Sink { .. }")
    }
}
