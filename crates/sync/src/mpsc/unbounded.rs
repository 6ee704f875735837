//! The unbounded channel: [`unbounded_channel`], [`UnboundedSender`],
//! [`UnboundedReceiver`].

use std::fmt;
use std::future::poll_fn;
use std::task::{Context, Poll};

use super::chan::{self, Chan, Unbounded};
use super::error::{SendError, TryRecvError};
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::AtomicUsize;

/// Makes a channel without a bound: sends never wait, and the buffer grows as needed
/// (so a consumer that falls behind costs memory, not back-pressure).
///
/// ```
/// let (tx, mut rx) = netloop_sync::mpsc::unbounded_channel();
/// tx.send(1).unwrap();
/// tx.send(2).unwrap();
/// assert_eq!(rx.try_recv(), Ok(1));
/// assert_eq!(futures::executor::block_on(rx.recv()), Some(2));
/// ```
pub fn unbounded_channel<T>() -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    let (tx, rx) = chan::channel(Unbounded(AtomicUsize::new(0)));
    (UnboundedSender { chan: tx }, UnboundedReceiver { chan: rx })
}

/// The sending half of an unbounded channel; cheap to clone, one per producer.
pub struct UnboundedSender<T> {
    chan: chan::Tx<T, Unbounded>,
}

/// An unbounded sender that does not keep the channel open:
/// [`upgrade`](WeakUnboundedSender::upgrade) it to send.
pub struct WeakUnboundedSender<T> {
    chan: Arc<Chan<T, Unbounded>>,
}

/// The receiving half of an unbounded channel.
pub struct UnboundedReceiver<T> {
    chan: chan::Rx<T, Unbounded>,
}

impl<T> Clone for UnboundedSender<T> {
    fn clone(&self) -> Self {
        UnboundedSender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> fmt::Debug for UnboundedSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnboundedSender").field("chan", &self.chan).finish()
    }
}

impl<T> fmt::Debug for UnboundedReceiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnboundedReceiver").field("chan", &self.chan).finish()
    }
}

impl<T> UnboundedReceiver<T> {
    /// Waits for the next message; `None` once the channel is closed and drained.
    /// Cancel safe.
    pub async fn recv(&mut self) -> Option<T> {
        poll_fn(|cx| self.chan.recv(cx)).await
    }

    /// Waits for at least one message, then moves up to `limit` of them into `buffer`,
    /// returning how many (0 at once if `limit` is 0; 0 once closed and drained).
    pub async fn recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
        poll_fn(|cx| self.chan.recv_many(cx, buffer, limit)).await
    }

    /// Takes the next message if one is buffered, without waiting.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.chan.try_recv()
    }

    /// [`recv`](Self::recv) for code outside async, parking this thread.
    ///
    /// # Panics
    ///
    /// On a loop's thread or inside a runtime's `block_on`.
    #[track_caller]
    pub fn blocking_recv(&mut self) -> Option<T> {
        crate::blocking::block_on(self.recv())
    }

    /// [`recv_many`](Self::recv_many) for code outside async, parking this thread.
    ///
    /// # Panics
    ///
    /// On a loop's thread or inside a runtime's `block_on`.
    #[track_caller]
    pub fn blocking_recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
        crate::blocking::block_on(self.recv_many(buffer, limit))
    }

    /// Closes the channel to further sends; what is buffered can still be received.
    pub fn close(&mut self) {
        self.chan.close();
    }

    /// True once [`close`](Self::close) was called or every sender is gone.
    pub fn is_closed(&self) -> bool {
        self.chan.is_closed()
    }

    /// True if no message is buffered.
    pub fn is_empty(&self) -> bool {
        self.chan.is_empty()
    }

    /// How many messages are buffered.
    pub fn len(&self) -> usize {
        self.chan.len()
    }

    /// Polls for the next message: the building block of [`recv`](Self::recv).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.chan.recv(cx)
    }

    /// Polls for up to `limit` messages into `buffer`: the building block of
    /// [`recv_many`](Self::recv_many).
    pub fn poll_recv_many(&mut self, cx: &mut Context<'_>, buffer: &mut Vec<T>, limit: usize) -> Poll<usize> {
        self.chan.recv_many(cx, buffer, limit)
    }

    /// How many strong senders are alive.
    pub fn sender_strong_count(&self) -> usize {
        self.chan.sender_strong_count()
    }

    /// How many weak senders are alive.
    pub fn sender_weak_count(&self) -> usize {
        self.chan.sender_weak_count()
    }
}

impl<T> UnboundedSender<T> {
    /// Sends `message` at once; fails (returning it) if the receiver is gone or closed.
    pub fn send(&self, message: T) -> Result<(), SendError<T>> {
        if !self.chan.sem().start_send() {
            return Err(SendError(message));
        }
        self.chan.send(message);
        Ok(())
    }

    /// Resolves once the receiver is dropped or closed.
    pub async fn closed(&self) {
        self.chan.closed().await;
    }

    /// True once the receiver is dropped or closed.
    pub fn is_closed(&self) -> bool {
        self.chan.is_closed()
    }

    /// True if both senders feed the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        self.chan.same_channel(&other.chan)
    }

    /// A [`WeakUnboundedSender`] for this channel, which does not keep it open.
    #[must_use = "Downgrade creates a WeakSender without destroying the original non-weak sender."]
    pub fn downgrade(&self) -> WeakUnboundedSender<T> {
        WeakUnboundedSender {
            chan: self.chan.downgrade(),
        }
    }

    /// How many strong senders are alive.
    pub fn strong_count(&self) -> usize {
        self.chan.chan().strong_count()
    }

    /// How many weak senders are alive.
    pub fn weak_count(&self) -> usize {
        self.chan.chan().weak_count()
    }
}

impl<T> Clone for WeakUnboundedSender<T> {
    fn clone(&self) -> Self {
        self.chan.inc_weak();
        WeakUnboundedSender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for WeakUnboundedSender<T> {
    fn drop(&mut self) {
        self.chan.dec_weak();
    }
}

impl<T> WeakUnboundedSender<T> {
    /// A strong [`UnboundedSender`] again, or `None` if every strong sender is gone.
    pub fn upgrade(&self) -> Option<UnboundedSender<T>> {
        chan::Tx::upgrade(self.chan.clone()).map(|chan| UnboundedSender { chan })
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

impl<T> fmt::Debug for WeakUnboundedSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakUnboundedSender").finish()
    }
}
