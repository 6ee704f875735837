//! A channel for sending a single value from one task to another.
//!
//! [`channel`] returns a [`Sender`] and a [`Receiver`]. The sender sends at most once
//! ([`Sender::send`] consumes it); the receiver is a future that resolves to the value,
//! or to [`RecvError`](error::RecvError) if the sender was dropped without sending.
//! Either side notices when the other goes away: the receiver through its error, the
//! sender through [`Sender::is_closed`] and [`Sender::closed`].
//!
//! ```
//! use netloop_sync::oneshot;
//!
//! let (tx, rx) = oneshot::channel();
//! std::thread::spawn(move || tx.send(3).unwrap());
//! assert_eq!(futures::executor::block_on(rx), Ok(3));
//! ```
//!
//! The channel is one allocation: an atomic word of flags (read without locking by the
//! quick checks) and, under a lock that is never contended for long, the value and the
//! two sides' wakers. Both flags are set only under that lock, so each side sees the
//! other's last step whole.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use crate::loom::lock;
use crate::loom::sync::atomic::AtomicU8;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire};
use crate::loom::sync::{Arc, Mutex};
use netloop_reactor::coop;

use self::error::{RecvError, TryRecvError};

/// The sender sent its value or was dropped: it will touch the channel no more.
const COMPLETE: u8 = 1;
/// The receiver closed the channel or was dropped.
const CLOSED: u8 = 2;

/// The errors of a oneshot channel's receiving side.
pub mod error {
    use std::fmt;

    /// The error of awaiting a [`Receiver`](super::Receiver): the sender was dropped
    /// without sending a value.
    #[derive(Debug, Eq, PartialEq, Clone)]
    pub struct RecvError(pub(super) ());

    impl fmt::Display for RecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("channel closed")
        }
    }

    impl std::error::Error for RecvError {}

    /// The error of [`Receiver::try_recv`](super::Receiver::try_recv).
    #[derive(Debug, Eq, PartialEq, Clone)]
    pub enum TryRecvError {
        /// No value yet, and the sender is still there.
        Empty,
        /// No value will come: the sender was dropped without sending, the receiver
        /// closed the channel, or the value was already received.
        Closed,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                TryRecvError::Empty => "channel empty",
                TryRecvError::Closed => "channel closed",
            })
        }
    }

    impl std::error::Error for TryRecvError {}
}

struct Inner<T> {
    /// `COMPLETE` and `CLOSED`, each set once, under `slots`' lock.
    flags: AtomicU8,
    slots: Mutex<Slots<T>>,
}

struct Slots<T> {
    value: Option<T>,
    /// Woken when the sender completes.
    rx_waker: Option<Waker>,
    /// Woken when the receiver closes.
    tx_waker: Option<Waker>,
}

impl<T> Inner<T> {
    fn flags(&self) -> u8 {
        self.flags.load(Acquire)
    }

    /// The value, once the sender has completed (`None` if it was dropped unsent or the
    /// value was taken).
    fn take_value(&self) -> Option<T> {
        lock(&self.slots).value.take()
    }

    /// Marks the receiver gone; wakes a sender waiting in `closed()`. Returns what the
    /// slots held for the receiver, to drop outside the lock.
    fn close(&self, take_value: bool) -> (Option<T>, Option<Waker>) {
        let mut slots = lock(&self.slots);
        let before = self.flags.fetch_or(CLOSED, AcqRel);
        let tx = if before & COMPLETE == 0 {
            slots.tx_waker.take()
        } else {
            None
        };
        let rx = slots.rx_waker.take();
        let value = if take_value { slots.value.take() } else { None };
        drop(slots);
        if let Some(tx) = tx {
            tx.wake();
        }
        (value, rx)
    }
}

/// Creates a oneshot channel: the [`Sender`] sends one value to the [`Receiver`].
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Inner {
        flags: AtomicU8::new(0),
        slots: Mutex::new(Slots {
            value: None,
            rx_waker: None,
            tx_waker: None,
        }),
    });
    (
        Sender {
            inner: Some(inner.clone()),
        },
        Receiver { inner: Some(inner) },
    )
}

/// The sending side of a oneshot channel, made by [`channel`].
///
/// Dropping it without sending makes the receiver resolve to a
/// [`RecvError`](error::RecvError).
pub struct Sender<T> {
    /// `None` only while `send` is running.
    inner: Option<Arc<Inner<T>>>,
}

impl<T> Sender<T> {
    /// Sends `t` to the receiver, consuming the sender.
    ///
    /// Returns `Err(t)` if the receiver was dropped or closed: the value is handed back.
    /// `Ok` does not mean that the receiver will take the value: it may still be
    /// dropped before it does.
    pub fn send(mut self, t: T) -> Result<(), T> {
        let inner = self.inner.take().expect("a Sender is used once");
        let mut slots = lock(&inner.slots);
        if inner.flags.load(Acquire) & CLOSED != 0 {
            drop(slots);
            return Err(t);
        }
        slots.value = Some(t);
        inner.flags.fetch_or(COMPLETE, AcqRel);
        let rx = slots.rx_waker.take();
        drop(slots);
        if let Some(rx) = rx {
            rx.wake();
        }
        Ok(())
    }

    /// Waits until the receiver is dropped or [closed](Receiver::close): a way to stop
    /// computing a value nobody will receive.
    ///
    /// Cancel safe. Only the task that last awaited (or polled) is woken.
    pub async fn closed(&mut self) {
        std::future::poll_fn(|cx| self.poll_closed(cx)).await;
    }

    /// True once the receiver has been dropped or [closed](Receiver::close): a `send`
    /// would fail.
    pub fn is_closed(&self) -> bool {
        let inner = self.inner.as_ref().expect("a Sender is used once");
        inner.flags() & CLOSED != 0
    }

    /// Polls for the receiver's drop or close: `Ready` once it happened; otherwise
    /// registers `cx`'s waker (replacing the one of an earlier poll) and returns
    /// `Pending`.
    pub fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let budget = ready!(coop::poll_proceed(cx));
        let inner = self.inner.as_ref().expect("a Sender is used once");
        if inner.flags() & CLOSED != 0 {
            budget.made_progress();
            return Poll::Ready(());
        }
        let mut slots = lock(&inner.slots);
        if inner.flags.load(Acquire) & CLOSED != 0 {
            drop(slots);
            budget.made_progress();
            return Poll::Ready(());
        }
        let old = match &slots.tx_waker {
            Some(w) if w.will_wake(cx.waker()) => None,
            _ => slots.tx_waker.replace(cx.waker().clone()),
        };
        drop(slots);
        drop(old);
        Poll::Pending
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else { return };
        let mut slots = lock(&inner.slots);
        let before = inner.flags.fetch_or(COMPLETE, AcqRel);
        let rx = if before & CLOSED == 0 {
            slots.rx_waker.take()
        } else {
            None
        };
        let tx = slots.tx_waker.take();
        drop(slots);
        drop(tx);
        if let Some(rx) = rx {
            rx.wake();
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flags = self.inner.as_ref().map_or(COMPLETE, |i| i.flags());
        f.debug_struct("Sender")
            .field("is_closed", &(flags & CLOSED != 0))
            .finish_non_exhaustive()
    }
}

/// The receiving side of a oneshot channel, made by [`channel`]: a future of the value.
///
/// Resolves to `Ok(value)`, or to [`RecvError`](error::RecvError) if the sender was
/// dropped without sending. Polling it again after it resolved panics. Awaiting
/// `&mut receiver` is cancel safe: a value sent meanwhile stays for the next await.
pub struct Receiver<T> {
    /// `None` once the value (or the error) was received.
    inner: Option<Arc<Inner<T>>>,
}

impl<T> Receiver<T> {
    /// Closes the channel without dropping the receiver: a later `send` fails and a
    /// sender awaiting [`closed`](Sender::closed) wakes. A value sent before the close
    /// can still be taken with [`try_recv`](Receiver::try_recv) or by awaiting.
    pub fn close(&mut self) {
        if let Some(inner) = &self.inner {
            let (_, rx) = inner.close(false);
            drop(rx);
        }
    }

    /// True once the receiver has yielded its value or its error (by await or
    /// `try_recv`): it will yield nothing more.
    pub fn is_terminated(&self) -> bool {
        self.inner.is_none()
    }

    /// True if no value is waiting to be received right now (none sent yet, the sender
    /// dropped, or the value already taken).
    pub fn is_empty(&self) -> bool {
        let Some(inner) = &self.inner else { return true };
        if inner.flags() & COMPLETE == 0 {
            return true;
        }
        lock(&inner.slots).value.is_none()
    }

    /// Takes the value without waiting.
    ///
    /// `Err(Empty)` if nothing was sent yet (the receiver stays usable);
    /// `Err(Closed)` if the sender was dropped without sending, the channel was closed
    /// with no value in it, or the value was already taken.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let result = match &self.inner {
            None => Err(TryRecvError::Closed),
            Some(inner) => {
                let flags = inner.flags();
                if flags & COMPLETE != 0 {
                    inner.take_value().ok_or(TryRecvError::Closed)
                } else if flags & CLOSED != 0 {
                    Err(TryRecvError::Closed)
                } else {
                    return Err(TryRecvError::Empty);
                }
            }
        };
        self.inner = None;
        result
    }

    /// Waits for the value on a thread that may block (not a loop's thread).
    ///
    /// # Panics
    ///
    /// On a loop's thread or inside a runtime's `block_on`.
    #[track_caller]
    pub fn blocking_recv(self) -> Result<T, RecvError> {
        crate::blocking::block_on(self)
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(inner) = &this.inner else {
            panic!("called after complete");
        };
        let budget = ready!(coop::poll_proceed(cx));
        let flags = inner.flags();
        let result = if flags & COMPLETE != 0 {
            inner.take_value().ok_or(RecvError(()))
        } else if flags & CLOSED != 0 {
            Err(RecvError(()))
        } else {
            let mut slots = lock(&inner.slots);
            let flags = inner.flags.load(Acquire);
            if flags & COMPLETE != 0 {
                slots.value.take().ok_or(RecvError(()))
            } else if flags & CLOSED != 0 {
                Err(RecvError(()))
            } else {
                let old = match &slots.rx_waker {
                    Some(w) if w.will_wake(cx.waker()) => None,
                    _ => slots.rx_waker.replace(cx.waker().clone()),
                };
                drop(slots);
                drop(old);
                return Poll::Pending;
            }
        };
        budget.made_progress();
        this.inner = None;
        Poll::Ready(result)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let (value, rx) = inner.close(true);
            drop(rx);
            drop(value);
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flags = self.inner.as_ref().map(|i| i.flags());
        f.debug_struct("Receiver")
            .field("is_terminated", &flags.is_none())
            .field("sender_done", &flags.is_some_and(|f| f & COMPLETE != 0))
            .field("closed", &flags.is_some_and(|f| f & CLOSED != 0))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn value_and_errors() {
        let (tx, mut rx) = channel::<String>();
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        assert!(rx.is_empty());
        tx.send("hi".into()).unwrap();
        assert!(!rx.is_empty());
        assert_eq!(rx.try_recv().as_deref(), Ok("hi"));
        assert!(rx.is_terminated());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));

        let (tx, rx) = channel::<u8>();
        drop(tx);
        assert_eq!(rx.now_or_never(), Some(Err(RecvError(()))));

        let (tx, mut rx) = channel::<u8>();
        rx.close();
        assert!(tx.is_closed());
        assert_eq!(tx.send(7), Err(7));
    }

    #[test]
    fn a_value_unreceived_is_dropped_with_the_receiver() {
        let v = std::sync::Arc::new(());
        let (tx, rx) = channel();
        tx.send(v.clone()).unwrap();
        drop(rx);
        assert_eq!(std::sync::Arc::strong_count(&v), 1);
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::future::block_on;
    use loom::thread;

    /// send racing recv: the receiver gets the value.
    #[test]
    fn send_vs_recv() {
        loom::model(|| {
            let (tx, rx) = channel::<u32>();
            let t = thread::spawn(move || tx.send(1).unwrap());
            assert_eq!(block_on(rx), Ok(1));
            t.join().unwrap();
        });
    }

    /// send racing the receiver's drop: the value is dropped exactly once, whichever
    /// side wins (and handed back if the drop came first).
    #[test]
    fn send_vs_drop_of_receiver() {
        loom::model(|| {
            let v = Arc::new(());
            let (tx, rx) = channel::<Arc<()>>();
            let v2 = v.clone();
            let t = thread::spawn(move || tx.send(v2).map_err(drop).is_ok());
            drop(rx);
            t.join().unwrap();
            assert_eq!(Arc::strong_count(&v), 1);
        });
    }

    /// The sender's drop racing recv: the receiver resolves to the error.
    #[test]
    fn drop_of_sender_vs_recv() {
        loom::model(|| {
            let (tx, rx) = channel::<u32>();
            let t = thread::spawn(move || drop(tx));
            assert_eq!(block_on(rx), Err(RecvError(())));
            t.join().unwrap();
        });
    }

    /// close racing a sender waiting in closed() and then sending: the wait ends and
    /// the send fails.
    #[test]
    fn close_vs_closed_and_send() {
        loom::model(|| {
            let (mut tx, mut rx) = channel::<u32>();
            let t = thread::spawn(move || {
                block_on(tx.closed());
                assert_eq!(tx.send(5), Err(5));
            });
            rx.close();
            t.join().unwrap();
            assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
        });
    }

    /// close racing send: either the send failed, or the value stays receivable.
    #[test]
    fn close_vs_send() {
        loom::model(|| {
            let (tx, mut rx) = channel::<u32>();
            let t = thread::spawn(move || tx.send(9).is_ok());
            rx.close();
            let sent = t.join().unwrap();
            let got = rx.try_recv();
            if sent {
                assert_eq!(got, Ok(9));
            } else {
                assert_eq!(got, Err(TryRecvError::Closed));
            }
        });
    }
}
