//! A multi-producer, multi-consumer channel in which every receiver gets every value.
//!
//! [`channel`] returns a [`Sender`] and a first [`Receiver`]; more receivers come from
//! [`Sender::subscribe`] or [`Receiver::resubscribe`] and only see values sent after
//! they were made. Each value is cloned out to each receiver, so `T` must be `Clone`
//! to receive.
//!
//! The channel keeps the last `capacity` values (rounded up to a power of two) in a
//! ring. A sender never waits: when the ring is full, the oldest value is overwritten.
//! A receiver that had not read it yet learns so from its next receive, which returns
//! [`RecvError::Lagged`] with the number of values it missed, and then goes on from the
//! oldest value still held.
//!
//! A value is dropped once every receiver that existed when it was sent has read it
//! (or has been dropped, or skipped it by lagging), or when it is overwritten.
//!
//! When every [`Sender`] is gone, receivers read what is left and then get
//! [`RecvError::Closed`]. When every [`Receiver`] is gone, [`Sender::send`] fails.
//!
//! ```
//! use netloop_sync::broadcast;
//!
//! futures::executor::block_on(async {
//!     let (tx, mut rx1) = broadcast::channel(8);
//!     let mut rx2 = tx.subscribe();
//!     tx.send("hello").unwrap();
//!     assert_eq!(rx1.recv().await.unwrap(), "hello");
//!     assert_eq!(rx2.recv().await.unwrap(), "hello");
//!     drop(tx);
//!     assert_eq!(rx1.recv().await, Err(broadcast::error::RecvError::Closed));
//! });
//! ```
//!
//! [`RecvError::Lagged`]: error::RecvError::Lagged
//! [`RecvError::Closed`]: error::RecvError::Closed

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use crate::loom::lock;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use crate::loom::sync::{Arc, Mutex};
use crate::waiters::{WakeBatch, WakerEntry, WakerQueue};

use self::error::{RecvError, SendError, TryRecvError};

pub mod error;

/// The sending half: sends each value to every receiver. Cloning it makes another
/// sender of the same channel; the channel closes for receivers when the last one is
/// dropped.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// A sender that does not keep the channel open: [`upgrade`](WeakSender::upgrade) it
/// to send, which works while some [`Sender`] still exists.
pub struct WeakSender<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving half: gets every value sent after it was created, in order.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// Position of the next value this receiver reads.
    next: u64,
}

/// More receivers than this would eat into the bits a count needs to stay exact.
const MAX_RECEIVERS: usize = usize::MAX >> 2;

/// What senders and receivers share.
///
/// Lock order: `tail`, then one slot. A receiver that finds nothing in its slot drops
/// the slot's lock before taking `tail`.
struct Shared<T> {
    /// The ring; position `p` lives in `slots[p & mask]`.
    slots: Box<[Mutex<Slot<T>>]>,
    mask: usize,
    tail: Mutex<Tail>,
    /// A copy of `tail.waiters.round()`, written under the `tail` lock, so a receive
    /// that completes or is cancelled can see without locking that its waker entry was
    /// already taken by a send.
    waiters_round: AtomicUsize,
    num_tx: AtomicUsize,
    num_weak_tx: AtomicUsize,
}

/// The writing end and the bookkeeping that changes with it.
struct Tail {
    /// Position of the next value sent.
    pos: u64,
    /// Live receivers.
    rx_cnt: usize,
    /// True when every sender is gone, or no receiver exists.
    closed: bool,
    /// Receivers waiting for the value at `pos`; all woken by the next send or close.
    waiters: WakerQueue,
    /// Tasks in [`Sender::closed`], woken when the last receiver goes.
    closed_waiters: WakerQueue,
}

/// One place in the ring.
struct Slot<T> {
    /// Receivers that still have to read this value; at zero the value is dropped.
    rem: usize,
    /// Position of the value last written here.
    pos: u64,
    val: Option<T>,
}

/// Creates a channel holding up to `capacity` values (rounded up to a power of two),
/// returning its sender and a first receiver.
///
/// # Panics
///
/// If `capacity` is 0 or more than `usize::MAX / 2`.
///
/// ```
/// let (tx, mut rx) = netloop_sync::broadcast::channel(3);
/// for i in 0..5 {
///     tx.send(i).unwrap();
/// }
/// // A capacity of 3 holds 4 values: 0 was overwritten.
/// assert_eq!(rx.try_recv(), Err(netloop_sync::broadcast::error::TryRecvError::Lagged(1)));
/// assert_eq!(rx.try_recv(), Ok(1));
/// ```
#[track_caller]
pub fn channel<T: Clone>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let tx = Sender::with_receivers(capacity, 1);
    let rx = Receiver {
        shared: tx.shared.clone(),
        next: 0,
    };
    (tx, rx)
}

impl<T> Sender<T> {
    /// Creates a channel with no receiver yet (sends fail until
    /// [`subscribe`](Self::subscribe) is called), holding up to `capacity` values
    /// rounded up to a power of two.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 or more than `usize::MAX / 2`.
    #[track_caller]
    pub fn new(capacity: usize) -> Self {
        Sender::with_receivers(capacity, 0)
    }

    #[track_caller]
    fn with_receivers(capacity: usize, rx_cnt: usize) -> Self {
        assert!(capacity > 0, "broadcast channel capacity cannot be zero");
        assert!(
            capacity <= usize::MAX >> 1,
            "broadcast channel capacity exceeded `usize::MAX / 2`"
        );
        let capacity = capacity.next_power_of_two();
        // Each slot starts out one lap behind position 0, so that a receiver at
        // position `i` sees "nothing yet" there.
        let slots = (0..capacity)
            .map(|i| {
                Mutex::new(Slot {
                    rem: 0,
                    pos: (i as u64).wrapping_sub(capacity as u64),
                    val: None,
                })
            })
            .collect();
        Sender {
            shared: Arc::new(Shared {
                slots,
                mask: capacity - 1,
                tail: Mutex::new(Tail {
                    pos: 0,
                    rx_cnt,
                    closed: rx_cnt == 0,
                    waiters: WakerQueue::new(),
                    closed_waiters: WakerQueue::new(),
                }),
                waiters_round: AtomicUsize::new(0),
                num_tx: AtomicUsize::new(1),
                num_weak_tx: AtomicUsize::new(0),
            }),
        }
    }

    /// Sends `value` to every current receiver and returns how many there are.
    ///
    /// Never waits: if the ring is full the oldest value is overwritten, and receivers
    /// that had not read it get [`RecvError::Lagged`]. Fails, giving the value back,
    /// when no receiver exists.
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        let shared = &*self.shared;
        let mut tail = lock(&shared.tail);
        if tail.rx_cnt == 0 {
            return Err(SendError(value));
        }
        let pos = tail.pos;
        let readers = tail.rx_cnt;
        tail.pos = pos.wrapping_add(1);
        let overwritten = {
            let mut slot = lock(&shared.slots[pos as usize & shared.mask]);
            slot.pos = pos;
            slot.rem = readers;
            slot.val.replace(value)
        };
        if tail.waiters.is_empty() {
            drop(tail);
        } else {
            let mut wake = WakeBatch::new();
            shared.take_waiters(&mut tail, &mut wake);
            drop(tail);
            wake.wake_all();
        }
        drop(overwritten);
        Ok(readers)
    }

    /// Creates a receiver that gets the values sent from now on.
    ///
    /// # Panics
    ///
    /// If the channel already has `usize::MAX >> 2` receivers.
    pub fn subscribe(&self) -> Receiver<T> {
        new_receiver(self.shared.clone())
    }

    /// Makes a [`WeakSender`], which does not keep the channel open.
    #[must_use = "Downgrade creates a WeakSender without destroying the original non-weak sender."]
    pub fn downgrade(&self) -> WeakSender<T> {
        self.shared.num_weak_tx.fetch_add(1, Relaxed);
        WeakSender {
            shared: self.shared.clone(),
        }
    }

    /// How many values some receiver has still to read (at most the capacity).
    pub fn len(&self) -> usize {
        let shared = &*self.shared;
        let tail = lock(&shared.tail);
        // From the oldest slot (at `tail.pos`) to the newest, the slots nobody needs
        // any more come first: a value still needed is never older than one that is
        // not. Find the first needed one by bisection.
        let oldest = tail.pos as usize;
        let (mut lo, mut hi) = (0, shared.slots.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if lock(&shared.slots[oldest.wrapping_add(mid) & shared.mask]).rem == 0 {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        shared.slots.len() - lo
    }

    /// True if every receiver has read every value sent.
    pub fn is_empty(&self) -> bool {
        let shared = &*self.shared;
        let tail = lock(&shared.tail);
        let newest = tail.pos.wrapping_sub(1) as usize & shared.mask;
        lock(&shared.slots[newest]).rem == 0
    }

    /// How many receivers exist now.
    pub fn receiver_count(&self) -> usize {
        lock(&self.shared.tail).rx_cnt
    }

    /// True if both senders belong to the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Completes when the channel has no receiver (at once if it has none now).
    ///
    /// A receiver created by [`subscribe`](Self::subscribe) opens the channel again.
    pub async fn closed(&self) {
        Closed {
            shared: &self.shared,
            entry: None,
        }
        .await
    }

    /// How many [`Sender`]s exist.
    pub fn strong_count(&self) -> usize {
        self.shared.num_tx.load(Acquire)
    }

    /// How many [`WeakSender`]s exist.
    pub fn weak_count(&self) -> usize {
        self.shared.num_weak_tx.load(Acquire)
    }
}

fn new_receiver<T>(shared: Arc<Shared<T>>) -> Receiver<T> {
    let mut tail = lock(&shared.tail);
    assert!(tail.rx_cnt != MAX_RECEIVERS, "max receivers");
    if tail.rx_cnt == 0 {
        // The channel closed for want of receivers; this one opens it again.
        tail.closed = false;
    }
    tail.rx_cnt = tail.rx_cnt.checked_add(1).expect("overflow");
    let next = tail.pos;
    drop(tail);
    Receiver { shared, next }
}

impl<T> Shared<T> {
    /// Moves every waiting receiver's waker into `wake`; call with `tail` locked.
    fn take_waiters(&self, tail: &mut Tail, wake: &mut WakeBatch) {
        let round = tail.waiters.round();
        tail.waiters.take_all(wake);
        if tail.waiters.round() != round {
            self.waiters_round.store(tail.waiters.round(), Release);
        }
    }

    /// Unlinks a receive's waker entry, if a send has not taken it already.
    fn forget_waiter(&self, entry: &mut Option<WakerEntry>) {
        let Some((_, round)) = *entry else { return };
        if self.waiters_round.load(Acquire) != round {
            // Taken (and woken) by a send or close: nothing links to it any more.
            *entry = None;
            return;
        }
        let waker = lock(&self.tail).waiters.unregister(entry);
        drop(waker);
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.num_tx.fetch_add(1, Relaxed);
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.shared.num_tx.fetch_sub(1, AcqRel) == 1 {
            let mut wake = WakeBatch::new();
            let mut tail = lock(&self.shared.tail);
            tail.closed = true;
            self.shared.take_waiters(&mut tail, &mut wake);
            drop(tail);
            wake.wake_all();
        }
    }
}

impl<T> WeakSender<T> {
    /// A [`Sender`] for the channel, or `None` if every sender is gone.
    #[must_use]
    pub fn upgrade(&self) -> Option<Sender<T>> {
        let mut count = self.shared.num_tx.load(Acquire);
        loop {
            if count == 0 {
                return None;
            }
            match self
                .shared
                .num_tx
                .compare_exchange_weak(count, count + 1, Relaxed, Acquire)
            {
                Ok(_) => {
                    return Some(Sender {
                        shared: self.shared.clone(),
                    });
                }
                Err(now) => count = now,
            }
        }
    }

    /// How many [`Sender`]s exist.
    pub fn strong_count(&self) -> usize {
        self.shared.num_tx.load(Acquire)
    }

    /// How many [`WeakSender`]s exist.
    pub fn weak_count(&self) -> usize {
        self.shared.num_weak_tx.load(Acquire)
    }
}

impl<T> Clone for WeakSender<T> {
    fn clone(&self) -> Self {
        self.shared.num_weak_tx.fetch_add(1, Relaxed);
        WeakSender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for WeakSender<T> {
    fn drop(&mut self) {
        self.shared.num_weak_tx.fetch_sub(1, AcqRel);
    }
}

impl<T> Receiver<T> {
    /// How many values this receiver has yet to read (counting ones it will find
    /// overwritten).
    pub fn len(&self) -> usize {
        let pos = lock(&self.shared.tail).pos;
        pos.wrapping_sub(self.next) as usize
    }

    /// True if this receiver has read every value sent.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if both receivers belong to the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// How many [`Sender`]s exist.
    pub fn sender_strong_count(&self) -> usize {
        self.shared.num_tx.load(Acquire)
    }

    /// How many [`WeakSender`]s exist.
    pub fn sender_weak_count(&self) -> usize {
        self.shared.num_weak_tx.load(Acquire)
    }

    /// True if every [`Sender`] is gone (values may still be left to read).
    pub fn is_closed(&self) -> bool {
        self.shared.num_tx.load(Acquire) == 0
    }

    /// Reads the slot at this receiver's position with `read` (under the slot's lock,
    /// after counting this receiver off it), or says why it cannot. With `waiter`,
    /// an empty channel registers the waker for the next send.
    fn recv_with<R>(
        &mut self,
        waiter: Option<(&mut Option<WakerEntry>, &Waker)>,
        read: impl FnOnce(&mut Slot<T>) -> R,
    ) -> Result<R, TryRecvError> {
        let shared = &*self.shared;
        let laps = shared.slots.len() as u64;
        let slot_lock = &shared.slots[self.next as usize & shared.mask];
        loop {
            let mut slot = lock(slot_lock);
            if slot.pos == self.next {
                self.next = self.next.wrapping_add(1);
                slot.rem -= 1;
                return Ok(read(&mut slot));
            }
            // The slot holds either the value one lap before ours (ours is not sent
            // yet) or a later lap's (ours was overwritten).
            let not_sent = slot.pos.wrapping_add(laps) == self.next;
            drop(slot);
            let mut tail = lock(&shared.tail);
            if not_sent {
                if tail.pos != self.next {
                    // Sent between the two locks: look again.
                    continue;
                }
                if tail.closed {
                    return Err(TryRecvError::Closed);
                }
                let old = waiter.and_then(|(entry, waker)| tail.waiters.register(entry, waker));
                drop(tail);
                drop(old);
                return Err(TryRecvError::Empty);
            }
            // Overwritten: skip to the oldest value the ring still holds. Sends are
            // held off by the `tail` lock, so that position is stable.
            let oldest = tail.pos.wrapping_sub(laps);
            let missed = oldest.wrapping_sub(self.next);
            self.next = oldest;
            return Err(TryRecvError::Lagged(missed));
        }
    }
}

/// Clones the slot's value out; when this receiver was the last to need it, also
/// takes the slot's copy, for the caller to drop after the lock is released. Every
/// receiver gets a clone, as tokio's do: a panicking `clone` is observable.
fn clone_out<T: Clone>(slot: &mut Slot<T>) -> (Option<T>, Option<T>) {
    if slot.rem == 0 {
        // Taken first, so that a panicking `clone` still releases it.
        let released = slot.val.take();
        (released.clone(), released)
    } else {
        (slot.val.clone(), None)
    }
}

impl<T: Clone> Receiver<T> {
    /// A new receiver of the same channel that gets the values sent from now on (not
    /// the ones this receiver has yet to read).
    ///
    /// # Panics
    ///
    /// If the channel already has `usize::MAX >> 2` receivers.
    pub fn resubscribe(&self) -> Self {
        new_receiver(self.shared.clone())
    }

    /// Waits for the next value.
    ///
    /// Returns [`RecvError::Lagged`] if values were overwritten before this receiver
    /// read them (the next call returns the oldest value still held), and
    /// [`RecvError::Closed`] once every sender is gone and nothing is left.
    ///
    /// Cancel safe: dropping the future before it completes loses no value.
    pub async fn recv(&mut self) -> Result<T, RecvError> {
        Recv { rx: self, entry: None }.await
    }

    /// Takes the next value if one is ready, without waiting.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let (value, released) = self.recv_with(None, clone_out)?;
        drop(released);
        value.ok_or(TryRecvError::Closed)
    }

    /// Waits for the next value, blocking this thread: for code outside the runtime.
    ///
    /// # Panics
    ///
    /// When called on a loop's thread or inside a runtime's `block_on`.
    #[track_caller]
    pub fn blocking_recv(&mut self) -> Result<T, RecvError> {
        crate::blocking::block_on(self.recv())
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut wake = WakeBatch::new();
        let mut tail = lock(&self.shared.tail);
        tail.rx_cnt -= 1;
        let until = tail.pos;
        if tail.rx_cnt == 0 {
            tail.closed = true;
            tail.closed_waiters.take_all(&mut wake);
        }
        drop(tail);
        // Count this receiver off every value it was still expected to read, so that
        // they are dropped as soon as the others have read them.
        while self.next != until {
            match self.recv_with(None, |slot| if slot.rem == 0 { slot.val.take() } else { None }) {
                Ok(value) => drop(value),
                Err(TryRecvError::Closed) => break,
                Err(TryRecvError::Lagged(_)) => {}
                Err(TryRecvError::Empty) => unreachable!("a value before the tail was missing"),
            }
        }
        wake.wake_all();
    }
}

/// The future of [`Receiver::recv`].
struct Recv<'a, T> {
    rx: &'a mut Receiver<T>,
    /// This receive's waker in the channel's waiter queue.
    entry: Option<WakerEntry>,
}

impl<T: Clone> Future for Recv<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        let this = self.get_mut();
        let out = match this.rx.recv_with(Some((&mut this.entry, cx.waker())), clone_out) {
            Ok((value, released)) => {
                drop(released);
                value.ok_or(RecvError::Closed)
            }
            Err(TryRecvError::Empty) => return Poll::Pending,
            Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
            Err(TryRecvError::Closed) => Err(RecvError::Closed),
        };
        coop.made_progress();
        this.rx.shared.forget_waiter(&mut this.entry);
        Poll::Ready(out)
    }
}

impl<T> Drop for Recv<'_, T> {
    fn drop(&mut self) {
        self.rx.shared.forget_waiter(&mut self.entry);
    }
}

/// The future of [`Sender::closed`].
struct Closed<'a, T> {
    shared: &'a Shared<T>,
    entry: Option<WakerEntry>,
}

impl<T> Future for Closed<'_, T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut tail = lock(&this.shared.tail);
        if tail.closed {
            let old = tail.closed_waiters.unregister(&mut this.entry);
            drop(tail);
            drop(old);
            return Poll::Ready(());
        }
        let old = tail.closed_waiters.register(&mut this.entry, cx.waker());
        drop(tail);
        drop(old);
        Poll::Pending
    }
}

impl<T> Drop for Closed<'_, T> {
    fn drop(&mut self) {
        if self.entry.is_some() {
            let old = lock(&self.shared.tail).closed_waiters.unregister(&mut self.entry);
            drop(old);
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("broadcast::Sender")
    }
}

impl<T> fmt::Debug for WeakSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("broadcast::WeakSender")
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("broadcast::Receiver")
    }
}

#[cfg(all(test, loom))]
mod loom_models;

#[cfg(all(test, not(loom)))]
mod tests;
