//! tokio's `io` module without the parts that need a reactor, written for netloop:
//! the four traits ([`AsyncRead`], [`AsyncWrite`], [`AsyncBufRead`], [`AsyncSeek`]),
//! [`ReadBuf`], the extension traits with their futures, the buffering adapters, the
//! copy helpers, the in-memory pipes ([`duplex`], [`simplex`]) and the trivial
//! streams ([`empty`], [`repeat`], [`sink`]), signature for signature with tokio
//! 1.54's `tokio::io`.
//!
//! With the feature `tokio-io`, the in-memory pipes, the buffering adapters and the
//! other types here also implement tokio's own traits, and `impl_tokio_io!` does the
//! same for other crates' types (see `compat`).
//!
//! Standard input and output, `Interest`, `Ready` and `AsyncFd` live with netloop's
//! reactor (`netloop-net`), not here.
//!
//! The helpers that tokio makes spend its cooperative budget (`copy`, `copy_buf`,
//! `copy_bidirectional`, the duplex and simplex pipes, `empty`, `repeat`, `sink`) spend
//! netloop's ([`netloop_reactor::coop`]) at the same points, so a task that loops on an
//! always-ready stream still gives the loop back.
//!
//! ```
//! use netloop_io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! futures::executor::block_on(async {
//!     let mut out = Vec::new();
//!     out.write_all(b"one\ntwo\n").await.unwrap();
//!
//!     let mut lines = BufReader::new(&out[..]).lines();
//!     assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("one"));
//!     assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("two"));
//!     assert_eq!(lines.next_line().await.unwrap(), None);
//! });
//! ```

#![deny(missing_docs)]

mod async_buf_read;
mod async_read;
mod async_seek;
mod async_write;
#[cfg(feature = "tokio-io")]
pub mod compat;
mod join;
mod read_buf;
mod split;
mod util;

pub use async_buf_read::AsyncBufRead;
pub use async_read::AsyncRead;
pub use async_seek::AsyncSeek;
pub use async_write::AsyncWrite;
pub use join::{Join, join};
pub use read_buf::ReadBuf;
pub use split::{ReadHalf, WriteHalf, split};
pub use std::io::{Error, ErrorKind, Result, SeekFrom};
pub use util::{
    AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt, BufReader, BufStream, BufWriter, Chain, DuplexStream,
    Empty, Lines, Repeat, SimplexStream, Sink, Split, Take, copy, copy_bidirectional, copy_bidirectional_with_sizes,
    copy_buf, duplex, empty, repeat, simplex, sink,
};
