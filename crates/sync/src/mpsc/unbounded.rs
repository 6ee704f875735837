//! The unbounded channel: [`unbounded_channel`], [`UnboundedSender`],
//! [`UnboundedReceiver`].

use std::fmt;

use super::chan::{self, Chan, Unbounded};
use super::error::SendError;
use super::receiver::receiver_methods;
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

receiver_methods!(UnboundedReceiver);

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
