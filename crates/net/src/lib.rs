//! # netloop-net: TCP on pinned event loops
//!
//! [`TcpListener`] and [`TcpStream`] with tokio's API, implementing tokio's own
//! `AsyncRead` / `AsyncWrite` (and futures-io's), so hyper, tokio-util codecs and
//! friends run on netloop unchanged. [`serve`] is the acceptor: it accepts on one loop
//! and hands each connection to the next loop of the runtime, where the connection's
//! socket is registered and its future runs for life, as a Netty channel does.

#![deny(missing_docs)]

#[macro_use]
mod byte_stream;
#[macro_use]
mod datagram;
mod addr;
pub mod fs;
pub mod io;
pub mod process;
mod registration;
mod serve;
pub mod signal;
pub mod tcp;
mod udp;
pub mod unix;

pub use addr::{ToSocketAddrs, lookup_host};
pub use serve::{ACCEPTS_PER_EVENT, EXHAUSTION_PAUSE, Serve, serve};
pub use tcp::{TcpListener, TcpSocket, TcpStream};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixListener, UnixSocket, UnixStream};
