//! The bounded channel: [`channel`], [`Sender`], [`Receiver`] and the permits.

use std::fmt;
use std::future::poll_fn;

use super::capacity::{AcquireFut, Capacity, TryAcquireError};
use super::chan::{self, Bounded, Chan, Sem};
#[cfg(not(loom))]
use super::error::SendTimeoutError;
use super::error::{SendError, TrySendError};
use super::receiver::receiver_methods;
use crate::loom::sync::Arc;

/// Makes a channel that buffers at most `buffer` messages, returning its first
/// sender and its receiver. Clone the sender for more producers.
///
/// # Panics
///
/// If `buffer` is 0.
///
/// ```
/// futures::executor::block_on(async {
///     let (tx, mut rx) = netloop_sync::mpsc::channel(1);
///     tx.send("ping").await.unwrap();
///     assert!(tx.try_send("full").is_err());
///     assert_eq!(rx.recv().await, Some("ping"));
/// });
/// ```
#[track_caller]
pub fn channel<T>(buffer: usize) -> (Sender<T>, Receiver<T>) {
    assert!(buffer > 0, "mpsc bounded channel requires buffer > 0");
    let (tx, rx) = chan::channel(Bounded {
        cap: Capacity::new(buffer),
        bound: buffer,
    });
    (Sender { chan: tx }, Receiver { chan: rx })
}

/// The sending half of a bounded channel; cheap to clone, one per producer.
///
/// The channel closes for the receiver once every `Sender` (and every
/// [`OwnedPermit`]) is dropped.
pub struct Sender<T> {
    chan: chan::Tx<T, Bounded>,
}

/// A sender that does not keep the channel open: [`upgrade`](WeakSender::upgrade) it
/// to send, which fails once every strong [`Sender`] is gone.
pub struct WeakSender<T> {
    chan: Arc<Chan<T, Bounded>>,
}

/// One reserved slot in the channel's buffer: [`send`](Permit::send) fills it without
/// waiting; dropping the permit frees the slot.
pub struct Permit<'a, T> {
    chan: &'a chan::Tx<T, Bounded>,
}

/// `n` reserved slots, yielded one [`Permit`] at a time; the slots not taken out are
/// freed when it drops.
pub struct PermitIterator<'a, T> {
    chan: &'a chan::Tx<T, Bounded>,
    n: usize,
}

/// A reserved slot that owns its sender (so it can be stored or moved into a task):
/// [`send`](OwnedPermit::send) fills it and gives the sender back.
pub struct OwnedPermit<T> {
    chan: Option<chan::Tx<T, Bounded>>,
}

/// The receiving half of a bounded channel.
pub struct Receiver<T> {
    chan: chan::Rx<T, Bounded>,
}

receiver_methods!(Receiver);

impl<T> Receiver<T> {
    /// Free slots right now: the bound minus buffered messages and reserved permits.
    pub fn capacity(&self) -> usize {
        self.chan.sem().cap.available()
    }

    /// The bound the channel was made with.
    pub fn max_capacity(&self) -> usize {
        self.chan.sem().bound
    }
}

/// Gives the receiver a look when a reservation ends without handing its permits to
/// the caller: their return may be what a closed receiver waits for.
struct WakeRxOnDrop<'a, T>(&'a chan::Tx<T, Bounded>);

impl<T> Drop for WakeRxOnDrop<'_, T> {
    fn drop(&mut self) {
        let sem = self.0.sem();
        if sem.is_closed() && sem.is_idle() {
            self.0.wake_rx();
        }
    }
}

impl<T> Sender<T> {
    /// Waits for room, then sends `value`; fails (returning the value) if the receiver
    /// is gone or closed.
    ///
    /// Cancel safe in that a dropped `send` sends nothing; its place in the queue of
    /// waiting senders is lost.
    pub async fn send(&self, value: T) -> Result<(), SendError<T>> {
        match self.reserve().await {
            Ok(permit) => {
                permit.send(value);
                Ok(())
            }
            Err(_) => Err(SendError(value)),
        }
    }

    /// Resolves once the receiver is dropped or closed.
    pub async fn closed(&self) {
        self.chan.closed().await;
    }

    /// [`send`](Self::send), giving up after `timeout` without room: the value comes
    /// back as `Timeout`, or as `Closed` if the receiver is gone or closed.
    ///
    /// The wait is a timer of the current runtime, so this needs one with time
    /// enabled (it panics at its first poll elsewhere, as tokio's does), and it follows
    /// a paused clock.
    #[cfg(not(loom))]
    pub async fn send_timeout(&self, value: T, timeout: std::time::Duration) -> Result<(), SendTimeoutError<T>> {
        match netloop_scheduler::time::timeout(timeout, self.reserve()).await {
            Err(_) => Err(SendTimeoutError::Timeout(value)),
            Ok(Err(_)) => Err(SendTimeoutError::Closed(value)),
            Ok(Ok(permit)) => {
                permit.send(value);
                Ok(())
            }
        }
    }

    /// Sends `message` if there is room now; otherwise gives it back as `Full` or
    /// `Closed`.
    pub fn try_send(&self, message: T) -> Result<(), TrySendError<T>> {
        match self.chan.sem().cap.try_acquire(1) {
            Ok(()) => {
                self.chan.send(message);
                Ok(())
            }
            Err(TryAcquireError::Closed) => Err(TrySendError::Closed(message)),
            Err(TryAcquireError::NoPermits) => Err(TrySendError::Full(message)),
        }
    }

    /// [`send`](Self::send) for code outside async: parks this thread until there is
    /// room.
    ///
    /// # Panics
    ///
    /// On a loop's thread or inside a runtime's `block_on`.
    #[track_caller]
    pub fn blocking_send(&self, value: T) -> Result<(), SendError<T>> {
        crate::blocking::block_on(self.send(value))
    }

    /// True once the receiver is dropped or closed.
    pub fn is_closed(&self) -> bool {
        self.chan.is_closed()
    }

    /// Waits for one slot and reserves it: the [`Permit`] then sends without waiting.
    /// Senders waiting for room are served in the order they started waiting.
    pub async fn reserve(&self) -> Result<Permit<'_, T>, SendError<()>> {
        self.reserve_inner(1).await?;
        Ok(Permit { chan: &self.chan })
    }

    /// Waits for `n` slots at once and reserves them. Fails at once if `n` exceeds
    /// the channel's bound.
    pub async fn reserve_many(&self, n: usize) -> Result<PermitIterator<'_, T>, SendError<()>> {
        self.reserve_inner(n).await?;
        Ok(PermitIterator { chan: &self.chan, n })
    }

    /// Like [`reserve`](Self::reserve), consuming the sender into an [`OwnedPermit`]
    /// that can outlive any borrow.
    pub async fn reserve_owned(self) -> Result<OwnedPermit<T>, SendError<()>> {
        self.reserve_inner(1).await?;
        Ok(OwnedPermit { chan: Some(self.chan) })
    }

    async fn reserve_inner(&self, n: usize) -> Result<(), SendError<()>> {
        if n > self.max_capacity() {
            return Err(SendError(()));
        }
        let guard = WakeRxOnDrop(&self.chan);
        let mut acquire = AcquireFut::new(&self.chan.sem().cap, n);
        match poll_fn(|cx| acquire.poll_acquire(cx)).await {
            Ok(()) => {
                // The caller owns the permits now.
                std::mem::forget(guard);
                Ok(())
            }
            Err(_) => Err(SendError(())),
        }
    }

    /// Reserves one slot if one is free now.
    pub fn try_reserve(&self) -> Result<Permit<'_, T>, TrySendError<()>> {
        match self.chan.sem().cap.try_acquire(1) {
            Ok(()) => Ok(Permit { chan: &self.chan }),
            Err(TryAcquireError::Closed) => Err(TrySendError::Closed(())),
            Err(TryAcquireError::NoPermits) => Err(TrySendError::Full(())),
        }
    }

    /// Reserves `n` slots if they are free now (`Full` if `n` exceeds the bound).
    pub fn try_reserve_many(&self, n: usize) -> Result<PermitIterator<'_, T>, TrySendError<()>> {
        if n > self.max_capacity() {
            return Err(TrySendError::Full(()));
        }
        match self.chan.sem().cap.try_acquire(n) {
            Ok(()) => Ok(PermitIterator { chan: &self.chan, n }),
            Err(TryAcquireError::Closed) => Err(TrySendError::Closed(())),
            Err(TryAcquireError::NoPermits) => Err(TrySendError::Full(())),
        }
    }

    /// Like [`try_reserve`](Self::try_reserve), consuming the sender; on failure the
    /// sender comes back inside the error.
    pub fn try_reserve_owned(self) -> Result<OwnedPermit<T>, TrySendError<Self>> {
        match self.chan.sem().cap.try_acquire(1) {
            Ok(()) => Ok(OwnedPermit { chan: Some(self.chan) }),
            Err(TryAcquireError::Closed) => Err(TrySendError::Closed(self)),
            Err(TryAcquireError::NoPermits) => Err(TrySendError::Full(self)),
        }
    }

    /// True if both senders feed the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        self.chan.same_channel(&other.chan)
    }

    /// Free slots right now.
    pub fn capacity(&self) -> usize {
        self.chan.sem().cap.available()
    }

    /// A [`WeakSender`] for this channel, which does not keep it open.
    #[must_use = "Downgrade creates a WeakSender without destroying the original non-weak sender."]
    pub fn downgrade(&self) -> WeakSender<T> {
        WeakSender {
            chan: self.chan.downgrade(),
        }
    }

    /// The bound the channel was made with.
    pub fn max_capacity(&self) -> usize {
        self.chan.sem().bound
    }

    /// How many strong senders (including owned permits) are alive.
    pub fn strong_count(&self) -> usize {
        self.chan.chan().strong_count()
    }

    /// How many weak senders are alive.
    pub fn weak_count(&self) -> usize {
        self.chan.chan().weak_count()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").field("chan", &self.chan).finish()
    }
}

impl<T> Clone for WeakSender<T> {
    fn clone(&self) -> Self {
        self.chan.inc_weak();
        WeakSender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for WeakSender<T> {
    fn drop(&mut self) {
        self.chan.dec_weak();
    }
}

impl<T> WeakSender<T> {
    /// A strong [`Sender`] again, or `None` if every strong sender is gone.
    pub fn upgrade(&self) -> Option<Sender<T>> {
        chan::Tx::upgrade(self.chan.clone()).map(|chan| Sender { chan })
    }

    /// How many strong senders are alive.
    pub fn strong_count(&self) -> usize {
        self.chan.strong_count()
    }

    /// How many weak senders are alive.
    pub fn weak_count(&self) -> usize {
        self.chan.weak_count()
    }
}

impl<T> fmt::Debug for WeakSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakSender").finish()
    }
}

/// Frees one reserved slot, waking a closed receiver that waits for the last one.
fn give_back<T>(chan: &chan::Tx<T, Bounded>, n: usize) {
    let sem = chan.sem();
    sem.add_permits(n);
    if sem.is_closed() && sem.is_idle() {
        chan.wake_rx();
    }
}

impl<T> Permit<'_, T> {
    /// Sends `value` into the reserved slot.
    pub fn send(self, value: T) {
        let chan = self.chan;
        std::mem::forget(self);
        chan.send(value);
    }
}

impl<T> Drop for Permit<'_, T> {
    fn drop(&mut self) {
        give_back(self.chan, 1);
    }
}

impl<T> fmt::Debug for Permit<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit").field("chan", &self.chan).finish()
    }
}

impl<'a, T> Iterator for PermitIterator<'a, T> {
    type Item = Permit<'a, T>;

    fn next(&mut self) -> Option<Permit<'a, T>> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        Some(Permit { chan: self.chan })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.n, Some(self.n))
    }
}

impl<T> ExactSizeIterator for PermitIterator<'_, T> {}
impl<T> std::iter::FusedIterator for PermitIterator<'_, T> {}

impl<T> Drop for PermitIterator<'_, T> {
    fn drop(&mut self) {
        if self.n > 0 {
            give_back(self.chan, self.n);
        }
    }
}

impl<T> fmt::Debug for PermitIterator<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermitIterator")
            .field("chan", &self.chan)
            .field("capacity", &self.n)
            .finish()
    }
}

impl<T> OwnedPermit<T> {
    /// Sends `value` into the reserved slot and returns the sender.
    pub fn send(mut self, value: T) -> Sender<T> {
        let chan = self
            .chan
            .take()
            .expect("an OwnedPermit holds its sender until consumed");
        chan.send(value);
        Sender { chan }
    }

    /// Frees the reserved slot unused and returns the sender.
    pub fn release(mut self) -> Sender<T> {
        let chan = self
            .chan
            .take()
            .expect("an OwnedPermit holds its sender until consumed");
        give_back(&chan, 1);
        Sender { chan }
    }

    /// True if both permits belong to the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        match (&self.chan, &other.chan) {
            (Some(a), Some(b)) => a.same_channel(b),
            _ => false,
        }
    }

    /// True if the permit belongs to `sender`'s channel.
    pub fn same_channel_as_sender(&self, sender: &Sender<T>) -> bool {
        self.chan.as_ref().is_some_and(|c| c.same_channel(&sender.chan))
    }
}

impl<T> Drop for OwnedPermit<T> {
    fn drop(&mut self) {
        if let Some(chan) = self.chan.take() {
            give_back(&chan, 1);
        }
    }
}

impl<T> fmt::Debug for OwnedPermit<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit").field("chan", &self.chan).finish()
    }
}
