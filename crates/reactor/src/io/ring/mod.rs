//! The io_uring wing: sockets whose operations run on their loop's ring, each owned
//! jointly by its socket's I/O seam (`StreamIo`, `DatagramIo`, `ListenerIo`) and by its
//! operations in flight.
//!
//! ```text
//!   StreamIo ─▶ stream/   RingSocket: multishot receive, send window, leave, release
//!   DatagramIo ─▶ datagram.rs  RingDatagram: one-shot recvmsg, write poll
//!   ListenerIo ─▶ acceptor.rs  RingAcceptor: multishot accept
//!                   │
//!                   ▼  what they share
//!   first_use.rs  the place chosen at first use (ring or readiness), left for good
//!   seam.rs       reaching the loop's driver; submit, or learn the loop is gone
//!   fd.rs         the descriptor every operation names, kept until its last completion
//!   waiters.rs    the tasks waiting on one direction
//!                   │
//!                   ▼
//!   completion.rs (the op table and dispatch), sys/op.rs, sys/socket.rs, sys/ring.rs
//! ```

pub(crate) mod acceptor;
pub(crate) mod datagram;
mod fd;
pub(crate) mod first_use;
mod seam;
pub(crate) mod stream;
mod waiters;
