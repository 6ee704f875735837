//! Wakes deferred until the loop has next polled for I/O: what `yield_now` and an
//! exhausted cooperative budget use, as tokio does.
//!
//! A task that yields is ready again at once. Woken straight away it would go back into
//! the run queue and could run many more times within the same iteration, so the I/O
//! it waits for (a connection, a reply) would not be seen until the iteration's task
//! budget ran out. Deferred, it runs again only after the next select has processed
//! whatever I/O is ready: a yield always lets the loop look at the network.

use std::task::Waker;

use crate::context;

/// Wakes `waker` right after this thread's event loop next polls for I/O; at once if
/// this thread runs no loop (a `block_on` off the loops, a blocking-pool thread).
pub fn defer(waker: &Waker) {
    let deferred = context::with_core(|core| match core {
        Some(core) => {
            core.local.defer(core, waker);
            true
        }
        None => false,
    });
    if !deferred {
        waker.wake_by_ref();
    }
}
