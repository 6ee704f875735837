//! The tasks waiting on one direction of a ring socket, and their wake once the
//! socket's lock is released.

use std::task::{Context, Waker};

use crate::io::shared_waiters;

/// Wakes after the locks are released.
pub(crate) fn wake_all(wakers: impl IntoIterator<Item = Waiters>) {
    wakers.into_iter().flatten().for_each(Waker::wake);
}

/// Wakes the waiters a full shared list displaced, once the lock is released.
pub(crate) fn wake_displaced(displaced: Vec<Waker>) {
    displaced.into_iter().for_each(Waker::wake);
}

/// The tasks waiting on one direction of a socket: the last task to poll through a
/// `poll_*` method (only its waker is kept, as tokio keeps one per direction), and every
/// task awaiting `readable`/`writable` (each is woken, as tokio wakes every waiter).
/// Taken whole when the direction may have changed; an empty one holds no allocation.
#[derive(Debug, Default)]
#[must_use]
pub(crate) struct Waiters {
    last: Option<Waker>,
    all: Vec<Waker>,
}

impl Waiters {
    /// Keeps `waker` as the last poller's, in place of the one before.
    pub(crate) fn set_last(&mut self, waker: &Waker) {
        match &mut self.last {
            Some(w) if w.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
    }

    /// Keeps `cx`'s waker, as the last poller's or (`shared`) beside the others (once,
    /// however often its task polls). Returns the waiters it displaced from a full
    /// list (`shared_waiters`), to wake once the lock is released.
    #[must_use = "displaced waiters must be woken, or a live one waits forever"]
    pub(crate) fn wait(&mut self, cx: &Context<'_>, shared: bool) -> Vec<Waker> {
        if shared {
            shared_waiters::join(&mut self.all, cx.waker())
        } else {
            self.set_last(cx.waker());
            Vec::new()
        }
    }

    /// [`wait`](Self::wait) for an optional waiter: nothing kept without one.
    #[must_use = "displaced waiters must be woken, or a live one waits forever"]
    pub(crate) fn wait_if(&mut self, waiter: Option<(&Context<'_>, bool)>) -> Vec<Waker> {
        match waiter {
            Some((cx, shared)) => self.wait(cx, shared),
            None => Vec::new(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.last.is_none() && self.all.is_empty()
    }

    /// Every waiter, to wake once the lock is released.
    pub(crate) fn take(&mut self) -> Waiters {
        std::mem::take(self)
    }

    /// These waiters and `other`'s.
    pub(crate) fn and(mut self, other: Waiters) -> Waiters {
        if self.is_empty() {
            return other;
        }
        self.all.extend(other);
        self
    }
}

impl IntoIterator for Waiters {
    type Item = Waker;
    type IntoIter = std::iter::Chain<std::option::IntoIter<Waker>, std::vec::IntoIter<Waker>>;

    fn into_iter(self) -> Self::IntoIter {
        self.last.into_iter().chain(self.all)
    }
}
