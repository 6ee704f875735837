//! Channels with many senders and one receiver, each message received once, in the
//! order each sender sent it.
//!
//! [`channel`] makes a bounded one: a sender waits (or [`try_send`](Sender::try_send)
//! fails) while the buffer holds `buffer` messages, which slows fast producers down to
//! the consumer's pace. [`unbounded_channel`] makes one whose sends never wait and
//! never fail while the receiver lives.
//!
//! Under both, the messages sit in a lock-free list of fixed-size blocks (a send is a
//! few atomic operations, no lock), blocks are recycled as the receiver empties them,
//! and the receiver's wake-up goes through a lock-free waker cell. A bounded channel's
//! free slots are one atomic count; only senders that must wait take a lock, and they
//! are served in arrival order.
//!
//! ```
//! use netloop_sync::mpsc;
//!
//! futures::executor::block_on(async {
//!     let (tx, mut rx) = mpsc::channel(8);
//!     for i in 0..3 {
//!         tx.send(i).await.unwrap();
//!     }
//!     drop(tx);
//!     let mut got = Vec::new();
//!     while let Some(i) = rx.recv().await {
//!         got.push(i);
//!     }
//!     assert_eq!(got, [0, 1, 2]);
//! });
//! ```

mod bounded;
mod capacity;
mod cell;
mod chan;
pub mod error;
mod list;
mod receiver;
mod rx_waker;
mod unbounded;

#[cfg(all(test, loom))]
mod loom_models;
#[cfg(all(test, not(loom)))]
mod tests;

pub use self::bounded::{OwnedPermit, Permit, PermitIterator, Receiver, Sender, WeakSender, channel};
pub use self::unbounded::{UnboundedReceiver, UnboundedSender, WeakUnboundedSender, unbounded_channel};
