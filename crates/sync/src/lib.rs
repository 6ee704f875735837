//! tokio's `sync` module, written for netloop: channels (`mpsc`, `oneshot`, `broadcast`,
//! `watch`), locks (`Mutex`, `RwLock`), `Semaphore`, `Notify`, `Barrier`, `OnceCell`
//! and `SetOnce`, signature for signature with tokio 1.54's.
//!
//! Every wait spends netloop's cooperative budget ([`netloop_reactor::coop`]) as
//! tokio's spend tokio's, and every `blocking_*` call panics on a loop's thread or
//! inside a runtime's `block_on`, as tokio's do inside a runtime.

#![deny(missing_docs)]

#[allow(dead_code)] // used as the primitives land
mod blocking;
// The shim names every atomic a primitive may use, used or not yet.
#[allow(dead_code, unused_imports)]
mod loom;

// Each primitive's module is added here as it lands.
pub mod broadcast;
pub mod mpsc;
#[allow(dead_code)]
mod waiters;
pub mod watch;

mod notify;
pub use notify::Notify;

/// The named future types of this crate's primitives (tokio's `sync::futures`).
pub mod futures {
    pub use crate::notify::{Notified, OwnedNotified};
}

mod barrier;
pub use barrier::{Barrier, BarrierWaitResult};

pub mod oneshot;

mod set_once;
pub use set_once::{SetOnce, SetOnceError};
