//! The state one channel's senders and receiver share, generic over how capacity is
//! counted (bounded: free slots; unbounded: messages in flight).

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::capacity::Capacity;
use super::error::TryRecvError;
use super::list::{self, ListRx, ListTx, Read, TryPop};
use super::rx_waker::RxWaker;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use crate::loom::sync::{Arc, Mutex};
use crate::waiters::{WaitList, WaiterKey};

/// How a channel counts what its senders may still send.
pub(crate) trait Sem {
    /// No permit is out (bounded) or no send is in flight (unbounded).
    fn is_idle(&self) -> bool;
    /// A received message gives back its permit.
    fn add_permits(&self, n: usize);
    fn close(&self);
    fn is_closed(&self) -> bool;
}

/// The bounded channel's semaphore and its bound.
#[derive(Debug)]
pub(crate) struct Bounded {
    pub(crate) cap: Capacity,
    pub(crate) bound: usize,
}

impl Sem for Bounded {
    fn is_idle(&self) -> bool {
        self.cap.available() == self.bound
    }
    fn add_permits(&self, n: usize) {
        self.cap.release(n);
    }
    fn close(&self) {
        self.cap.close();
    }
    fn is_closed(&self) -> bool {
        self.cap.is_closed()
    }
}

/// The unbounded channel's count: `in_flight << 1 | closed`. A send counts itself in
/// before pushing (failing if closed) and the receive counts it out, so a closed
/// receiver knows when no send can still land.
#[derive(Debug)]
pub(crate) struct Unbounded(pub(crate) AtomicUsize);

impl Unbounded {
    /// Counts one send in; false if the receiver closed.
    pub(crate) fn start_send(&self) -> bool {
        let mut s = self.0.load(Acquire);
        loop {
            if s & 1 == 1 {
                return false;
            }
            if s == usize::MAX ^ 1 {
                // More messages in flight than a usize counts: nothing sane is left.
                std::process::abort();
            }
            match self.0.compare_exchange_weak(s, s + 2, AcqRel, Acquire) {
                Ok(_) => return true,
                Err(actual) => s = actual,
            }
        }
    }
}

impl Sem for Unbounded {
    fn is_idle(&self) -> bool {
        self.0.load(Acquire) >> 1 == 0
    }
    fn add_permits(&self, n: usize) {
        let prev = self.0.fetch_sub(n << 1, Release);
        if prev >> 1 < n {
            // More receives than sends: the count is corrupt.
            std::process::abort();
        }
    }
    fn close(&self) {
        self.0.fetch_or(1, Release);
    }
    fn is_closed(&self) -> bool {
        self.0.load(Acquire) & 1 == 1
    }
}

/// Keeps the senders' and the receiver's hot words on separate cache lines.
#[repr(align(128))]
struct Padded<T>(T);

impl<T> Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

#[derive(Debug, Default)]
struct ClosedWaiters {
    /// Set (under the lock) when the receiver closes: no one registers after it.
    closed: bool,
    list: WaitList<std::task::Waker>,
}

/// One channel.
pub(crate) struct Chan<T, S> {
    tx: Padded<ListTx<T>>,
    rx_waker: Padded<RxWaker>,
    sem: S,
    tx_count: AtomicUsize,
    tx_weak_count: AtomicUsize,
    closed_waiters: Mutex<ClosedWaiters>,
    /// The receiver's half of the list, handed over when the receiver drops, so that the
    /// last owner frees the blocks.
    orphaned_rx: Mutex<Option<ListRx<T>>>,
}

// The channel's state stays consistent across a panic in user code (a waker or a
// value's drop): unwinding cannot leave it half-changed in a way later calls trust.
impl<T, S> RefUnwindSafe for Chan<T, S> {}
impl<T, S> UnwindSafe for Chan<T, S> {}

impl<T, S: fmt::Debug> fmt::Debug for Chan<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chan")
            .field("tx", &*self.tx)
            .field("semaphore", &self.sem)
            .field("rx_waker", &*self.rx_waker)
            .field("tx_count", &self.tx_count)
            .field("rx_fields", &"...")
            .finish()
    }
}

impl<T, S> Drop for Chan<T, S> {
    fn drop(&mut self) {
        let rx = crate::loom::lock(&self.orphaned_rx).take();
        if let Some(mut rx) = rx {
            // SAFETY: the last handle is gone: no sender pushes, no receiver reads.
            unsafe { rx.free_all(&self.tx) };
        }
    }
}

/// A sending handle (counted in `tx_count`).
pub(crate) struct Tx<T, S> {
    inner: Arc<Chan<T, S>>,
}

/// The receiving handle.
pub(crate) struct Rx<T, S: Sem> {
    inner: Arc<Chan<T, S>>,
    list: ListRx<T>,
    closed: bool,
}

pub(crate) fn channel<T, S: Sem>(sem: S) -> (Tx<T, S>, Rx<T, S>) {
    let (ltx, lrx) = list::list(0);
    let chan = Arc::new(Chan {
        tx: Padded(ltx),
        rx_waker: Padded(RxWaker::new()),
        sem,
        tx_count: AtomicUsize::new(1),
        tx_weak_count: AtomicUsize::new(0),
        closed_waiters: Mutex::new(ClosedWaiters::default()),
        orphaned_rx: Mutex::new(None),
    });
    (
        Tx { inner: chan.clone() },
        Rx {
            inner: chan,
            list: lrx,
            closed: false,
        },
    )
}

impl<T, S: fmt::Debug> fmt::Debug for Tx<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tx").field("inner", &self.inner).finish()
    }
}

impl<T, S: Sem + fmt::Debug> fmt::Debug for Rx<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rx").field("inner", &self.inner).finish()
    }
}

impl<T, S> Chan<T, S> {
    pub(crate) fn strong_count(&self) -> usize {
        self.tx_count.load(Acquire)
    }
    pub(crate) fn weak_count(&self) -> usize {
        self.tx_weak_count.load(Relaxed)
    }
    pub(crate) fn inc_weak(&self) {
        self.tx_weak_count.fetch_add(1, Relaxed);
    }
    pub(crate) fn dec_weak(&self) {
        self.tx_weak_count.fetch_sub(1, Relaxed);
    }
}

impl<T, S> Tx<T, S> {
    pub(crate) fn sem(&self) -> &S {
        &self.inner.sem
    }

    /// Pushes `value` and wakes the receiver. The caller holds the permit (bounded) or
    /// has counted the send in (unbounded).
    pub(crate) fn send(&self, value: T) {
        self.inner.tx.push(value);
        self.inner.rx_waker.wake();
    }

    pub(crate) fn wake_rx(&self) {
        self.inner.rx_waker.wake();
    }

    pub(crate) fn same_channel(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub(crate) fn chan(&self) -> &Arc<Chan<T, S>> {
        &self.inner
    }

    /// A weak reference: the channel, with the weak count raised.
    pub(crate) fn downgrade(&self) -> Arc<Chan<T, S>> {
        self.inner.inc_weak();
        self.inner.clone()
    }

    /// A sender again, unless every sender is gone.
    pub(crate) fn upgrade(chan: Arc<Chan<T, S>>) -> Option<Self> {
        let mut n = chan.tx_count.load(Acquire);
        loop {
            if n == 0 {
                return None;
            }
            match chan.tx_count.compare_exchange_weak(n, n + 1, AcqRel, Acquire) {
                Ok(_) => return Some(Tx { inner: chan }),
                Err(actual) => n = actual,
            }
        }
    }
}

impl<T, S: Sem> Tx<T, S> {
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.sem.is_closed()
    }

    /// Resolves once the receiver is closed or dropped.
    pub(crate) fn closed(&self) -> Closed<'_, T, S> {
        Closed {
            chan: &self.inner,
            key: None,
        }
    }
}

impl<T, S> Clone for Tx<T, S> {
    fn clone(&self) -> Self {
        self.inner.tx_count.fetch_add(1, Relaxed);
        Tx {
            inner: self.inner.clone(),
        }
    }
}

impl<T, S> Drop for Tx<T, S> {
    fn drop(&mut self) {
        if self.inner.tx_count.fetch_sub(1, AcqRel) != 1 {
            return;
        }
        // The last sender: mark the end of the list, so the receiver returns `None`
        // once it has read everything before it.
        self.inner.tx.close();
        self.inner.rx_waker.wake();
    }
}

/// The future of [`Tx::closed`].
pub(crate) struct Closed<'a, T, S> {
    chan: &'a Chan<T, S>,
    key: Option<WaiterKey>,
}

impl<T, S: Sem> Future for Closed<'_, T, S> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if this.chan.sem.is_closed() {
            this.forget_key();
            return Poll::Ready(());
        }
        let mut w = crate::loom::lock(&this.chan.closed_waiters);
        if w.closed {
            // Our node (if any) went with the close's drain.
            this.key = None;
            return Poll::Ready(());
        }
        match this.key {
            Some(key) => {
                let slot = w.list.get_mut(key);
                if !slot.will_wake(cx.waker()) {
                    *slot = cx.waker().clone();
                }
            }
            None => this.key = Some(w.list.push_back(cx.waker().clone())),
        }
        Poll::Pending
    }
}

impl<T, S> Closed<'_, T, S> {
    fn forget_key(&mut self) {
        if let Some(key) = self.key.take() {
            let mut w = crate::loom::lock(&self.chan.closed_waiters);
            // After the close's drain the key is stale (and nobody registers since).
            if !w.closed {
                w.list.remove(key);
            }
        }
    }
}

impl<T, S> Drop for Closed<'_, T, S> {
    fn drop(&mut self) {
        self.forget_key();
    }
}

impl<T, S: Sem> Rx<T, S> {
    /// Stops the senders: sends fail from now on, waiting ones are woken with an error,
    /// and what is buffered can still be received.
    pub(crate) fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.inner.sem.close();
        let mut w = crate::loom::lock(&self.inner.closed_waiters);
        w.closed = true;
        let wakers: Vec<_> = w.list.drain().collect();
        drop(w);
        for waker in wakers {
            waker.wake();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.inner.sem.is_closed() || self.inner.tx_count.load(Acquire) == 0
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty(&self.inner.tx)
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len(&self.inner.tx)
    }

    pub(crate) fn sem(&self) -> &S {
        &self.inner.sem
    }

    /// Receives one message, or `None` once every sender is gone (or the channel is
    /// closed) and the buffer is empty.
    pub(crate) fn recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        let chan = &*self.inner;
        for attempt in 0..2 {
            match self.list.pop(&chan.tx) {
                Some(Read::Value(v)) => {
                    chan.sem.add_permits(1);
                    coop.made_progress();
                    return Poll::Ready(Some(v));
                }
                Some(Read::Closed) => {
                    coop.made_progress();
                    return Poll::Ready(None);
                }
                None if attempt == 0 => {
                    // Register, then look again: a send between the two is not missed.
                    chan.rx_waker.register(cx.waker());
                }
                None => {}
            }
        }
        if self.closed && chan.sem.is_idle() {
            coop.made_progress();
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }

    /// Receives up to `limit` messages into `buffer`; 0 only when `limit` is 0 or the
    /// channel is closed and empty.
    pub(crate) fn recv_many(&mut self, cx: &mut Context<'_>, buffer: &mut Vec<T>, limit: usize) -> Poll<usize> {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        if limit == 0 {
            coop.made_progress();
            return Poll::Ready(0);
        }
        let chan = &*self.inner;
        let start = buffer.len();
        for attempt in 0..2 {
            let mut closed = false;
            while buffer.len() - start < limit {
                match self.list.pop(&chan.tx) {
                    Some(Read::Value(v)) => buffer.push(v),
                    Some(Read::Closed) => {
                        closed = true;
                        break;
                    }
                    None => break,
                }
            }
            let got = buffer.len() - start;
            if got > 0 {
                chan.sem.add_permits(got);
            }
            if got > 0 || closed {
                coop.made_progress();
                return Poll::Ready(got);
            }
            if attempt == 0 {
                chan.rx_waker.register(cx.waker());
            }
        }
        if self.closed && chan.sem.is_idle() {
            coop.made_progress();
            Poll::Ready(0)
        } else {
            Poll::Pending
        }
    }

    pub(crate) fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let chan = &*self.inner;
        loop {
            match self.list.try_pop(&chan.tx) {
                TryPop::Value(v) => {
                    chan.sem.add_permits(1);
                    return Ok(v);
                }
                TryPop::Closed => return Err(TryRecvError::Disconnected),
                TryPop::Empty if self.closed && chan.sem.is_idle() => return Err(TryRecvError::Disconnected),
                TryPop::Empty => return Err(TryRecvError::Empty),
                // A sender is between claiming the slot and writing it: it will be done
                // in a moment (a push never blocks or awaits in between).
                TryPop::Busy => {
                    #[cfg(not(loom))]
                    std::thread::yield_now();
                    #[cfg(loom)]
                    loom::thread::yield_now();
                }
            }
        }
    }

    pub(crate) fn sender_strong_count(&self) -> usize {
        self.inner.tx_count.load(Acquire)
    }

    pub(crate) fn sender_weak_count(&self) -> usize {
        self.inner.tx_weak_count.load(Relaxed)
    }
}

impl<T, S: Sem> Rx<T, S> {
    /// Drops every buffered value, giving each permit back.
    fn drain(&mut self) {
        let chan = &*self.inner;
        while let Some(Read::Value(v)) = self.list.pop(&chan.tx) {
            chan.sem.add_permits(1);
            drop(v);
        }
    }
}

impl<T, S: Sem> Drop for Rx<T, S> {
    fn drop(&mut self) {
        self.close();
        drop(self.inner.rx_waker.take());
        // Buffered values are dropped now, as tokio's are. If one's drop panics, the
        // guard finishes the drain; either way it hands the list to the channel, whose
        // last owner frees the blocks.
        struct Guard<'a, T, S: Sem>(&'a mut Rx<T, S>);
        impl<T, S: Sem> Drop for Guard<'_, T, S> {
            fn drop(&mut self) {
                self.0.drain();
                let list = self.0.list.detach();
                *crate::loom::lock(&self.0.inner.orphaned_rx) = Some(list);
            }
        }
        let guard = Guard(self);
        guard.0.drain();
        drop(guard);
    }
}
