//! The errors of the broadcast channel's operations.

use std::fmt;

/// Returned by [`Sender::send`](super::Sender::send) when no receiver exists; it
/// gives the value back.
#[derive(Debug)]
pub struct SendError<T>(pub T);

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("channel closed")
    }
}

impl<T: fmt::Debug> std::error::Error for SendError<T> {}

/// Why [`Receiver::recv`](super::Receiver::recv) returned no value.
#[derive(Debug, PartialEq, Eq, Clone)]
pub enum RecvError {
    /// Every sender is gone and this receiver has read every value left.
    Closed,
    /// This receiver fell behind by more than the channel's capacity: that many
    /// values were overwritten before it read them. Its next receive returns the
    /// oldest value the channel still holds.
    Lagged(u64),
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Closed => f.write_str("channel closed"),
            RecvError::Lagged(n) => write!(f, "channel lagged by {n}"),
        }
    }
}

impl std::error::Error for RecvError {}

/// Why [`Receiver::try_recv`](super::Receiver::try_recv) returned no value.
#[derive(Debug, PartialEq, Eq, Clone)]
pub enum TryRecvError {
    /// No value is ready for this receiver now; senders still exist.
    Empty,
    /// Every sender is gone and this receiver has read every value left.
    Closed,
    /// This receiver missed that many overwritten values; see
    /// [`RecvError::Lagged`].
    Lagged(u64),
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("channel empty"),
            TryRecvError::Closed => f.write_str("channel closed"),
            TryRecvError::Lagged(n) => write!(f, "channel lagged by {n}"),
        }
    }
}

impl std::error::Error for TryRecvError {}
