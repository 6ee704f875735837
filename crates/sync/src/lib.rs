//! tokio's `sync` module, written for netloop: channels (`mpsc`, `oneshot`, `broadcast`,
//! `watch`), locks (`Mutex`, `RwLock`), `Semaphore`, `Notify`, `Barrier`, `OnceCell`
//! and `SetOnce`, signature for signature with tokio 1.54's.
//!
//! Every wait spends netloop's cooperative budget ([`netloop_reactor::coop`]) as
//! tokio's spend tokio's, and every `blocking_*` call panics on a loop's thread or
//! inside a runtime's `block_on`, as tokio's do inside a runtime.

#![deny(missing_docs)]

// The layers, lowest first: the shims and the waiter list; the semaphore and Notify
// that the locks and cells wait through; the primitives.
mod blocking;
// The shim names every atomic a primitive may use, used or not.
#[allow(dead_code, unused_imports)]
mod loom;
#[cfg(all(tokio_unstable, feature = "tracing"))]
mod trace;
mod waiters;

mod batch_semaphore;
mod guard;
mod notify;

mod barrier;
pub mod broadcast;
pub mod mpsc;
mod mutex;
mod once_cell;
pub mod oneshot;
mod rwlock;
mod semaphore;
mod send_error;
mod set_once;
pub mod watch;

pub use barrier::{Barrier, BarrierWaitResult};
pub use batch_semaphore::{AcquireError, TryAcquireError};
pub use mutex::{MappedMutexGuard, Mutex, MutexGuard, OwnedMappedMutexGuard, OwnedMutexGuard, TryLockError};
pub use notify::Notify;
pub use once_cell::{OnceCell, SetError};
pub use rwlock::{
    OwnedRwLockMappedWriteGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock, RwLockMappedWriteGuard,
    RwLockReadGuard, RwLockWriteGuard,
};
pub use semaphore::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
pub use set_once::{SetOnce, SetOnceError};

/// The named future types of this crate's primitives (tokio's `sync::futures`).
pub mod futures {
    pub use crate::notify::{Notified, OwnedNotified};
}
