//! I/O registrations: any mio `Source`, with readiness cached per registration.
//!
//! [`PollEvented`] owns a source registered with one loop's `Poll`. The loop records
//! each readiness event in the registration and wakes the reader and/or writer waiting
//! on it; an operation then runs until the OS says `WouldBlock`, which clears the cached
//! readiness (guarded against racing a newer event, see [`ReadyEvent`]).
//!
//! ```
//! use std::io::{Read, Write};
//! use mio::net::UnixStream;
//! use netloop_reactor::{EventLoop, io::{Interest, PollEvented}};
//!
//! let mut event_loop = EventLoop::new()?;
//! let handle = event_loop.handle();
//! let (a, mut b) = UnixStream::pair()?;
//! let a = handle.register(a, Interest::READABLE)?;
//! b.write_all(b"ping")?;
//! let got = event_loop.block_on(async move {
//!     let mut buf = [0u8; 4];
//!     let n = std::future::poll_fn(|cx| a.poll_read_io(cx, |mut s| s.read(&mut buf))).await?;
//!     Ok::<_, std::io::Error>(buf[..n].to_vec())
//! })??;
//! assert_eq!(got, b"ping");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod datagram_io;
mod listener_io;
mod poll_evented;
pub(crate) mod readiness;
pub(crate) mod ready;
pub(crate) mod registration_set;
mod ring;
mod shared_waiters;
mod stream_io;

pub use datagram_io::DatagramIo;
pub use listener_io::ListenerIo;
pub use mio::Interest;
pub use poll_evented::{PollEvented, Registration};
pub use readiness::ReadyEvent;
pub use ready::{Direction, Ready};
pub use stream_io::StreamIo;
