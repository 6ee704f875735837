//! A connected stream (TCP, Unix) on io_uring: a multishot receive into the loop's
//! provided buffers, whose data waits here until a reader takes it, and sends gathered
//! per turn.
//!
//! ```text
//!   StreamIo ─▶ RingSocket (socket.rs: what it holds; each completion to its handler)
//!                 ├─ receive.rs  the receive, its chunks and its throttling
//!                 ├─ send.rs     the send window, flush and shutdown
//!                 ├─ leave.rs    leaving the ring for readiness (`into_std`, `ready`)
//!                 └─ release.rs  the dropped stream: linger, grace, reset
//!               state.rs: the lifecycle and both directions' state, under one lock
//! ```
//!
//! Each file draws its own protocol. What holds throughout:
//! - The socket owns its own descriptor (`RingFd`, a duplicate of the stream's): every
//!   operation names that number, which stays open until the last operation that may
//!   name it has completed (each operation holds the socket's `Arc`).
//! - At most one receive (or readiness poll) and one send are in flight.
//! - Each direction wakes the last task to poll it and every task awaiting
//!   `readable`/`writable`, after the lock is released.

mod leave;
mod receive;
mod release;
mod send;
pub(crate) mod socket;
mod state;
