//! A channel that holds one value: senders replace it, receivers look at the latest
//! one and can wait until it changes.
//!
//! Receivers do not queue values; a receiver that looks after two sends sees only the
//! second. Each receiver remembers the version of the value it last marked as seen
//! ([`Receiver::borrow_and_update`], [`Receiver::changed`]), which is how it knows
//! whether something new arrived.
//!
//! ```
//! use netloop_sync::watch;
//!
//! futures::executor::block_on(async {
//!     let (tx, mut rx) = watch::channel("starting");
//!     tx.send("running").unwrap();
//!     rx.changed().await.unwrap();
//!     assert_eq!(*rx.borrow_and_update(), "running");
//!     drop(tx);
//!     assert!(rx.changed().await.is_err());
//! });
//! ```
//!
//! The value sits under a reader-writer lock: a [`Ref`] from `borrow` holds a read
//! lock, so keep it short and never across an `.await`, or senders wait.

use std::fmt;
use std::future::Future;
use std::mem;
use std::ops;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, ready};

use crate::loom::lock;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use crate::loom::sync::{Arc, Mutex};
use crate::waiters::{WakeBatch, WakerEntry, WakerQueue};

#[cfg(loom)]
use loom::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
#[cfg(not(loom))]
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

pub mod error {
    //! The errors of the watch channel's operations.

    use std::fmt;

    crate::send_error::closed_send_error! {
        /// Returned by [`Sender::send`](super::Sender::send) when no receiver exists; it
        /// gives the value back.
    }

    /// Returned by the receiver's waits when every sender is gone (and, for
    /// [`changed`](super::Receiver::changed), nothing new is left to see).
    #[derive(Debug, Clone)]
    pub struct RecvError(pub(super) ());

    impl fmt::Display for RecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("channel closed")
        }
    }

    impl std::error::Error for RecvError {}
}

use self::error::{RecvError, SendError};

/// The state word's low bit: set once every sender is gone.
const CLOSED: usize = 1;
/// What one send adds to the state word (leaving the closed bit alone).
const STEP: usize = 2;

/// The receiving half: looks at the current value and waits for changes. Cloning it
/// makes a receiver that has seen what this one has seen.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// The version (state word without the closed bit) this receiver has seen.
    version: usize,
}

/// The sending half: replaces or modifies the value and wakes the receivers. Cloning
/// it makes another sender; the channel closes for receivers when the last is dropped.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// A read-locked view of the channel's value, returned by the `borrow` methods.
///
/// Senders wait while it lives: drop it soon, and do not hold it across an `.await`.
pub struct Ref<'a, T> {
    guard: RwLockReadGuard<'a, T>,
    has_changed: bool,
}

impl<T> Ref<'_, T> {
    /// True if this value was new to the receiver that borrowed it (always false for
    /// a sender's borrow).
    pub fn has_changed(&self) -> bool {
        self.has_changed
    }
}

impl<T> ops::Deref for Ref<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ref")
            .field("value", &*self.guard)
            .field("has_changed", &self.has_changed)
            .finish()
    }
}

struct Shared<T> {
    value: RwLock<T>,
    /// The version in the upper bits (bumped by [`STEP`] while the value is
    /// write-locked) and [`CLOSED`].
    state: AtomicUsize,
    rx_count: AtomicUsize,
    tx_count: AtomicUsize,
    /// Receivers waiting for a new version or for the close.
    notify_rx: Waiters,
    /// Senders waiting in [`Sender::closed`] for the last receiver to go.
    notify_tx: Waiters,
}

impl<T> Shared<T> {
    fn read(&self) -> RwLockReadGuard<'_, T> {
        // A panic in a sender's modify closure leaves the lock poisoned; the value is
        // whatever the closure left, which is what readers see (as tokio's do).
        self.value.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.value.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.load(Acquire);
        f.debug_struct("Shared")
            .field("value", &self.value)
            .field("version", &VersionDebug(state & !CLOSED))
            .field("is_closed", &(state & CLOSED == CLOSED))
            .field("ref_count_rx", &self.rx_count)
            .finish()
    }
}

/// Tasks waiting for an event that wakes all of them at once: this channel's stand-in
/// for `Notify::notify_waiters`.
///
/// `state` counts notifications in its upper bits; its low bit says the list may hold
/// wakers. A wait reads the count when it is created ([`Waiters::notified`]), before
/// the caller checks its condition; it completes once the count has moved, so a
/// notification that comes after the check but before the wait registers is not lost.
/// Notifying is one atomic add when no task waits, and otherwise also takes the lock
/// to empty the list.
struct Waiters {
    state: AtomicUsize,
    list: Mutex<WakerQueue>,
}

/// The low bit of [`Waiters::state`].
const MAY_HAVE_WAITERS: usize = 1;

impl Waiters {
    fn new() -> Self {
        Waiters {
            state: AtomicUsize::new(0),
            list: Mutex::new(WakerQueue::new()),
        }
    }

    /// A wait that completes at the next notification after this call.
    fn notified(&self) -> Notified<'_> {
        Notified {
            waiters: self,
            count: self.state.load(SeqCst) >> 1,
            entry: None,
        }
    }

    /// Wakes every waiting task, and completes every [`Notified`] created so far.
    fn notify_waiters(&self) {
        let before = self.state.fetch_add(2, SeqCst);
        if before & MAY_HAVE_WAITERS == 0 {
            return;
        }
        let mut wake = WakeBatch::new();
        let mut list = lock(&self.list);
        // Registrations set the bit under this lock, so clearing it here cannot hide
        // one: a later registration sets it again.
        self.state.fetch_and(!MAY_HAVE_WAITERS, SeqCst);
        list.take_all(&mut wake);
        drop(list);
        wake.wake_all();
    }
}

/// One wait on [`Waiters`]; cancel safe (dropping it unlinks its waker).
struct Notified<'a> {
    waiters: &'a Waiters,
    /// The notification count when the wait was created.
    count: usize,
    entry: Option<WakerEntry>,
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.entry.is_none() && this.waiters.state.load(SeqCst) >> 1 != this.count {
            return Poll::Ready(());
        }
        let mut list = lock(&this.waiters.list);
        if this.entry.is_some() && !list.is_linked(&this.entry) {
            // Taken by a notification.
            this.entry = None;
            return Poll::Ready(());
        }
        // Set the bit before the last look at the count: a notification either comes
        // later in the atomic's order (and sees the bit, and takes the lock to wake
        // us) or earlier (and we see its count now).
        let state = this.waiters.state.fetch_or(MAY_HAVE_WAITERS, SeqCst);
        if state >> 1 != this.count {
            let old = list.unregister(&mut this.entry);
            drop(list);
            drop(old);
            return Poll::Ready(());
        }
        let old = list.register(&mut this.entry, cx.waker());
        drop(list);
        drop(old);
        Poll::Pending
    }
}

impl Drop for Notified<'_> {
    fn drop(&mut self) {
        if self.entry.is_some() {
            let old = lock(&self.waiters.list).unregister(&mut self.entry);
            drop(old);
        }
    }
}

/// Runs `fut`, spending one unit of the cooperative budget per poll and keeping it
/// when `fut` completes.
async fn cooperative<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    std::future::poll_fn(move |cx| {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        let out = ready!(fut.as_mut().poll(cx));
        coop.made_progress();
        Poll::Ready(out)
    })
    .await
}

/// Creates a channel holding `init`, returning its sender and a first receiver (which
/// counts `init` as seen).
pub fn channel<T>(init: T) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        value: RwLock::new(init),
        state: AtomicUsize::new(0),
        rx_count: AtomicUsize::new(1),
        tx_count: AtomicUsize::new(1),
        notify_rx: Waiters::new(),
        notify_tx: Waiters::new(),
    });
    let tx = Sender { shared: shared.clone() };
    let rx = Receiver { shared, version: 0 };
    (tx, rx)
}

/// If the version moved past `seen`, marks it seen and returns `Ok`; if not and every
/// sender is gone, returns `Err`; otherwise `None`.
fn check_changed<T>(shared: &Shared<T>, seen: &mut usize) -> Option<Result<(), RecvError>> {
    let state = shared.state.load(Acquire);
    let version = state & !CLOSED;
    if version != *seen {
        *seen = version;
        return Some(Ok(()));
    }
    (state & CLOSED == CLOSED).then_some(Err(RecvError(())))
}

async fn wait_changed<T>(shared: &Shared<T>, seen: &mut usize) -> Result<(), RecvError> {
    loop {
        // Arm the wait before looking, so a send in between is not missed.
        let notified = shared.notify_rx.notified();
        if let Some(result) = check_changed(shared, seen) {
            return result;
        }
        notified.await;
    }
}

impl<T> Receiver<T> {
    /// Read-locks the current value without marking it seen.
    ///
    /// [`Ref::has_changed`] tells whether it is new to this receiver. Do not hold the
    /// `Ref` across an `.await`.
    pub fn borrow(&self) -> Ref<'_, T> {
        let guard = self.shared.read();
        // Versions move only under the write lock, so this is the guarded value's.
        let version = self.shared.state.load(Acquire) & !CLOSED;
        Ref {
            guard,
            has_changed: version != self.version,
        }
    }

    /// Read-locks the current value and marks it seen.
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        let guard = self.shared.read();
        let version = self.shared.state.load(Acquire) & !CLOSED;
        let has_changed = version != self.version;
        self.version = version;
        Ref { guard, has_changed }
    }

    /// True if a value this receiver has not seen was sent; `Err` if every sender is
    /// gone.
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        let state = self.shared.state.load(Acquire);
        if state & CLOSED == CLOSED {
            return Err(RecvError(()));
        }
        Ok(state & !CLOSED != self.version)
    }

    /// True if every sender is gone.
    pub fn is_closed(&self) -> bool {
        self.shared.state.load(Acquire) & CLOSED == CLOSED
    }

    /// Makes the current value count as unseen, so that the next
    /// [`changed`](Self::changed) completes at once.
    pub fn mark_changed(&mut self) {
        self.version = self.version.wrapping_sub(STEP);
    }

    /// Makes the current value count as seen.
    pub fn mark_unchanged(&mut self) {
        self.version = self.shared.state.load(Acquire) & !CLOSED;
    }

    /// Waits until a value this receiver has not seen is sent, and marks it seen.
    ///
    /// Completes at once if there is one already. Returns `Err` when every sender is
    /// gone and nothing unseen is left. Cancel safe.
    pub async fn changed(&mut self) -> Result<(), RecvError> {
        cooperative(wait_changed(&self.shared, &mut self.version)).await
    }

    /// Waits until the value satisfies `f`, and returns it read-locked (marked seen).
    ///
    /// Looks at the current value first, then at each new one. Returns `Err` when
    /// every sender is gone and the last value did not satisfy `f`. A panic in `f`
    /// propagates to the caller. Cancel safe.
    pub async fn wait_for(&mut self, f: impl FnMut(&T) -> bool) -> Result<Ref<'_, T>, RecvError> {
        cooperative(self.wait_for_inner(f)).await
    }

    async fn wait_for_inner(&mut self, mut f: impl FnMut(&T) -> bool) -> Result<Ref<'_, T>, RecvError> {
        let mut closed = false;
        loop {
            {
                let guard = self.shared.read();
                let version = self.shared.state.load(Acquire) & !CLOSED;
                let has_changed = version != self.version;
                self.version = version;
                if (!closed || has_changed) && f(&guard) {
                    return Ok(Ref { guard, has_changed });
                }
            }
            if closed {
                return Err(RecvError(()));
            }
            closed = wait_changed(&self.shared, &mut self.version).await.is_err();
        }
    }

    /// True if both receivers belong to the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    fn with_version(shared: Arc<Shared<T>>, version: usize) -> Self {
        shared.rx_count.fetch_add(1, Relaxed);
        Receiver { shared, version }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        Receiver::with_version(self.shared.clone(), self.version)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if self.shared.rx_count.fetch_sub(1, Relaxed) == 1 {
            self.shared.notify_tx.notify_waiters();
        }
    }
}

impl<T> Sender<T> {
    /// Creates a channel holding `init` with no receiver yet (make one with
    /// [`subscribe`](Self::subscribe)).
    pub fn new(init: T) -> Self {
        channel(init).0
    }

    /// Replaces the value and wakes the receivers; fails, giving `value` back, when no
    /// receiver exists (use [`send_replace`](Self::send_replace) to store it anyway).
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if self.receiver_count() == 0 {
            return Err(SendError(value));
        }
        self.send_replace(value);
        Ok(())
    }

    /// Changes the value in place with `modify` and wakes the receivers, whether or not
    /// any exist.
    ///
    /// The value is write-locked while `modify` runs. If it panics, receivers are not
    /// told of a change (whatever it already changed stays) and the panic propagates.
    pub fn send_modify<F: FnOnce(&mut T)>(&self, modify: F) {
        self.send_if_modified(|value| {
            modify(value);
            true
        });
    }

    /// Like [`send_modify`](Self::send_modify), but `modify` says whether it changed
    /// the value; receivers are told only when it returns true. Returns what `modify`
    /// returned.
    pub fn send_if_modified<F: FnOnce(&mut T) -> bool>(&self, modify: F) -> bool {
        {
            let mut guard = self.shared.write();
            if !modify(&mut guard) {
                return false;
            }
            // Bumped under the write lock: a reader holding the read lock sees the
            // version of the value it guards.
            self.shared.state.fetch_add(STEP, Release);
        }
        self.shared.notify_rx.notify_waiters();
        true
    }

    /// Replaces the value, wakes the receivers (whether or not any exist) and returns
    /// the previous value.
    pub fn send_replace(&self, mut value: T) -> T {
        self.send_modify(|old| mem::swap(old, &mut value));
        value
    }

    /// Read-locks the current value. Its [`Ref::has_changed`] is always false.
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref {
            guard: self.shared.read(),
            has_changed: false,
        }
    }

    /// True if no receiver exists.
    pub fn is_closed(&self) -> bool {
        self.receiver_count() == 0
    }

    /// Completes when no receiver exists (at once if none does now).
    pub async fn closed(&self) {
        cooperative(async {
            while self.receiver_count() > 0 {
                let notified = self.shared.notify_tx.notified();
                if self.receiver_count() == 0 {
                    return;
                }
                notified.await;
                // A subscribe may have made a receiver again: look once more.
            }
        })
        .await
    }

    /// Creates a receiver that counts the current value as seen.
    pub fn subscribe(&self) -> Receiver<T> {
        let version = self.shared.state.load(Acquire) & !CLOSED;
        Receiver::with_version(self.shared.clone(), version)
    }

    /// How many receivers exist.
    pub fn receiver_count(&self) -> usize {
        self.shared.rx_count.load(Relaxed)
    }

    /// How many senders exist.
    pub fn sender_count(&self) -> usize {
        self.shared.tx_count.load(Relaxed)
    }

    /// True if both senders belong to the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.tx_count.fetch_add(1, Relaxed);
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T: Default> Default for Sender<T> {
    fn default() -> Self {
        Sender::new(T::default())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.shared.tx_count.fetch_sub(1, AcqRel) == 1 {
            self.shared.state.fetch_or(CLOSED, Release);
            self.shared.notify_rx.notify_waiters();
        }
    }
}

/// Prints a version as tokio's `Debug` output does.
struct VersionDebug(usize);

impl fmt::Debug for VersionDebug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Version").field(&self.0).finish()
    }
}

impl<T: fmt::Debug> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").field("shared", &self.shared).finish()
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("shared", &self.shared)
            .field("version", &VersionDebug(self.version))
            .finish()
    }
}

#[cfg(all(test, loom))]
mod loom_models;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn debug_output_shows_value_version_and_counts() {
        let (tx, rx) = channel(5u8);
        assert_eq!(
            format!("{rx:?}"),
            "Receiver { shared: Shared { value: RwLock { data: 5, poisoned: false, .. }, \
             version: Version(0), is_closed: false, ref_count_rx: 1 }, version: Version(0) }"
        );
        assert!(format!("{tx:?}").starts_with("Sender { shared: Shared {"));
        assert_eq!(format!("{:?}", error::SendError(1)), "SendError { .. }");
    }

    #[test]
    fn a_cancelled_wait_unlinks_its_waker() {
        let (tx, mut rx) = channel(0);
        {
            let fut = std::pin::pin!(rx.changed());
            let mut cx = Context::from_waker(std::task::Waker::noop());
            assert!(fut.poll(&mut cx).is_pending());
        }
        assert!(lock(&tx.shared.notify_rx.list).is_empty());
        tx.send(1).unwrap();
        assert!(rx.has_changed().unwrap());
    }
}
