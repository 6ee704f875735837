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
#[allow(dead_code)]
mod loom;

// Each primitive's module is added here as it lands.
#[allow(dead_code)]
mod waiters;

mod batch_semaphore;
pub use batch_semaphore::{AcquireError, TryAcquireError};
mod semaphore;
pub use semaphore::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
mod mutex;
pub use mutex::{MappedMutexGuard, Mutex, MutexGuard, OwnedMappedMutexGuard, OwnedMutexGuard, TryLockError};
mod rwlock;
pub use rwlock::{
    OwnedRwLockMappedWriteGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock, RwLockMappedWriteGuard,
    RwLockReadGuard, RwLockWriteGuard,
};
mod once_cell;
pub use once_cell::{OnceCell, SetError};
