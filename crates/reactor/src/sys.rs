//! The OS boundary: mio's `Poll`, its `Events` buffer and the eventfd `Waker`.
//! Nothing else in the crate calls into mio's polling directly.

use std::io;
use std::time::Duration;

use mio::{Events, Poll, Registry, Waker};

use crate::shared::WAKER_TOKEN;

pub(crate) struct Selector {
    poll: Poll,
    pub(crate) events: Events,
}

impl Selector {
    /// The selector, the waker other threads use to interrupt it, and a registry
    /// handle through which any thread may register sources.
    pub(crate) fn new(events_capacity: usize) -> io::Result<(Selector, Waker, Registry)> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER_TOKEN)?;
        let registry = poll.registry().try_clone()?;
        Ok((
            Selector {
                poll,
                events: Events::with_capacity(events_capacity),
            },
            waker,
            registry,
        ))
    }

    /// Netty's `select` / `selectNow`: block up to `timeout` (`None` = until woken,
    /// zero = do not block) and fill `events`.
    pub(crate) fn select(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.poll.poll(&mut self.events, timeout)
    }

    /// Forget the previous events when an iteration skips the poll.
    pub(crate) fn clear(&mut self) {
        self.events.clear();
    }
}
