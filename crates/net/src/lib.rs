//! # netloop-net (skeleton)
//!
//! Will hold `TcpListener`, `TcpStream` and the acceptor that hands each connection to
//! the next loop of the group, built on [`netloop_reactor::io::PollEvented`].

#![warn(missing_docs)]

pub use netloop_reactor::io;
