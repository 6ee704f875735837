//! What the channel's operations return when they cannot do their job.

use std::error::Error;
use std::fmt;

crate::send_error::closed_send_error! {
    /// A send failed because the receiver is gone or closed; the message comes back in
    /// field `0`.
}

/// Why [`try_send`](super::Sender::try_send) (or a `try_reserve*`) gave up; the
/// message comes back inside.
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum TrySendError<T> {
    /// Every slot of the buffer is taken right now.
    Full(T),
    /// The receiver is gone or closed.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// The message that could not be sent.
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) => v,
        }
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrySendError::Full(_) => "Full(..)",
            TrySendError::Closed(_) => "Closed(..)",
        })
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrySendError::Full(_) => "no available capacity",
            TrySendError::Closed(_) => "channel closed",
        })
    }
}

impl<T> Error for TrySendError<T> {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> Self {
        TrySendError::Closed(e.0)
    }
}

/// Why [`try_recv`](super::Receiver::try_recv) returned no message.
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum TryRecvError {
    /// Nothing is buffered now, but a sender may still send.
    Empty,
    /// Nothing is buffered and nothing more can arrive: every sender is gone or the
    /// receiver was closed.
    Disconnected,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryRecvError::Empty => "receiving on an empty channel",
            TryRecvError::Disconnected => "receiving on a closed channel",
        })
    }
}

impl Error for TryRecvError {}

/// Why a send with a deadline failed; the message comes back inside.
///
/// tokio returns it from `Sender::send_timeout`, which needs a timer; this crate has
/// none, so the type is here for code that names it.
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum SendTimeoutError<T> {
    /// The deadline passed with the buffer still full.
    Timeout(T),
    /// The receiver is gone or closed.
    Closed(T),
}

impl<T> SendTimeoutError<T> {
    /// The message that could not be sent.
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v) | SendTimeoutError::Closed(v) => v,
        }
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendTimeoutError::Timeout(_) => "Timeout(..)",
            SendTimeoutError::Closed(_) => "Closed(..)",
        })
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendTimeoutError::Timeout(_) => "timed out waiting on send operation",
            SendTimeoutError::Closed(_) => "channel closed",
        })
    }
}

impl<T> Error for SendTimeoutError<T> {}
