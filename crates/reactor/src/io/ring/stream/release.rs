//! The release of a dropped stream: what it accepted is still sent, within a grace
//! that starts over with each send's progress; a TCP connection is reset, as the
//! kernel's close resets it, when the stream leaves bytes unread or sends nothing for
//! its whole grace.
//!
//! ```text
//!   release (stream dropped)
//!     ├─ TCP, on the ring, with chunks unread, or unsent bytes and a zero linger
//!     │    ─▶ abort: SO_LINGER 0, every operation cancelled; the last close resets
//!     └─ else: the receive cancelled; sends in flight? linger on the loop:
//!          send progress ─▶ grace starts over        all sent ─▶ unlinger
//!          send fails    ─▶ unlinger                 bytes arrive ─▶ abort (TCP)
//!          no progress for RELEASE_GRACE ─▶ give up: abort (TCP), or the sends
//!                                           cancelled and what waits dropped (Unix)
//!   the descriptor closes with the last operation's completion
//! ```
//!
//! Invariant: a TCP connection that lost bytes is reset, never closed cleanly. A
//! stream that left the ring before its release (`into_std`) is not reset for bytes
//! left unread or a zero linger (its new owner has the socket); only sends stuck past
//! their grace reset it.

use std::sync::Arc;
use std::time::Duration;

use super::super::seam::OnRing;
use super::socket::RingSocket;
use super::state::State;
use crate::completion::{CompletionTarget, RingDriver};
use crate::context;
use crate::shared::Shared;
use crate::sync::lock;
use crate::sys::socket;

/// How long a dropped stream's sends may make no progress before they are given up (a
/// peer that never reads must not hold a descriptor for ever): the connection is then
/// reset, so that the peer cannot take the bytes it got for all of them. A slow peer
/// gets every byte, as from the kernel, which keeps an orphaned socket's data far
/// longer still.
const RELEASE_GRACE: Duration = Duration::from_secs(60);

/// How often a loop with released sockets still sending looks for expired graces.
const LINGER_CHECK: Duration = Duration::from_secs(1);

impl RingSocket {
    /// The stream is dropping: the receive is cancelled (its buffers come back); what
    /// the stream accepted is still sent, until no send has made progress for
    /// [`RELEASE_GRACE`], then the socket's descriptor closes with its last operation.
    /// As the kernel's `tcp_close`, a TCP connection is reset instead ([`abort`]) if
    /// received bytes were never read, or if the socket's linger is zero (`SO_LINGER`
    /// 0) and bytes are unsent. A stream that left the ring (`into_std`) lives on: its
    /// connection is never reset here.
    ///
    /// [`abort`]: Self::abort
    pub(crate) fn release(self: &Arc<Self>) {
        lock(&self.state).lifecycle.release();
        self.with_driver(|this, driver| {
            let Some(driver) = driver else { return };
            let mut state = lock(&this.state);
            let reset = !state.lifecycle.left_ring()
                && (!state.chunks.is_empty() || (state.sending && socket::linger_is_zero(this.sock())));
            if reset && this.abort(&mut state, driver) {
                return;
            }
            if let Some(key) = state.recv {
                driver.cancel(key);
            }
            if state.sending {
                let target: Arc<dyn CompletionTarget> = this.clone();
                let (key, schedule) = driver.linger(Arc::downgrade(&target), RELEASE_GRACE);
                state.lifecycle.linger(key);
                drop(state);
                if schedule {
                    schedule_linger_check(&this.shared);
                }
            }
        });
    }

    /// Resets a released TCP stream's connection, as the kernel's close does when it
    /// finds unread bytes (or a zero linger, or a send stuck past its grace): the
    /// socket's linger is set to zero (on the socket, which the stream's descriptor and
    /// `keeper` share, so the last close sends the reset and drops any unsent byte),
    /// nothing more is sent and every operation is cancelled. False, with nothing done,
    /// for a socket that is not TCP (a Unix socket has no such close) or whose linger
    /// cannot be set.
    pub(super) fn abort(&self, state: &mut State, driver: &mut RingDriver) -> bool {
        if state.lifecycle.aborted() {
            return true;
        }
        if !socket::is_tcp(self.sock()) || !socket::set_linger_zero(self.sock()) {
            return false;
        }
        let lingering = state.lifecycle.abort();
        state.pending.clear();
        if let Some(key) = state.recv {
            driver.cancel(key);
        }
        if let Some(key) = state.send {
            driver.cancel(key);
        }
        if let Some(key) = lingering {
            driver.unlinger(key);
        }
        true
    }

    /// A dropped stream's sends made no progress for their grace: the connection is
    /// reset ([`abort`](Self::abort)), so that the peer never takes the bytes it got
    /// for all of them; a Unix stream's sends are cancelled and what waits behind them
    /// dropped. Either way the descriptor closes.
    pub(super) fn give_up(&self, driver: &mut RingDriver) {
        let mut state = lock(&self.state);
        state.lifecycle.take_lingering();
        if !self.abort(&mut state, driver) {
            state.pending.clear();
            if let Some(key) = state.send {
                driver.cancel(key);
            }
        }
    }
}

/// Schedules the loop's next look at its lingering sockets (see `RingDriver::linger`).
fn schedule_linger_check(shared: &Arc<Shared>) {
    let handle = crate::handle::EventLoopHandle { shared: shared.clone() };
    let shared = shared.clone();
    let _ = handle.schedule(LINGER_CHECK, move || {
        let again = context::with_own_core(&shared, |core| match core.ring.try_borrow_mut() {
            Ok(mut ring) => ring.as_mut().is_some_and(RingDriver::expire_lingering),
            // Busy (cannot be, from a scheduled task): look again later.
            Err(_) => true,
        });
        if again == Some(true) {
            schedule_linger_check(&shared);
        }
    });
}
