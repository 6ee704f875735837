//! A stream leaving the ring for good (`into_std`, or readiness asked for itself): the
//! receive stops, and what the ring holds comes before anything the socket holds.
//!
//! ```text
//!   detach ─┬─ on the loop's thread: queued sends to the kernel, the receive
//!           │  cancelled at once, completions already posted taken in: every byte
//!           │  the ring received is in `chunks`
//!           └─ elsewhere: the cancel is only queued; the receive may still bring bytes
//!
//!   a read of the left stream:  chunks left? copy them out
//!                             : receive still in flight? wait (its last completion
//!                               wakes the reader)
//!                             : a receive error left? report it
//!                             : read the socket itself from now on
//!   a write of the left stream: by readiness, once the ring sent what it accepted
//! ```
//!
//! Invariant: once the stream left the ring nothing new is submitted for it, and the
//! socket is read directly only once no chunk is left and no receive is in flight.

use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::super::seam::OnRing;
use super::super::waiters::{wake_all, wake_displaced};
use super::socket::RingSocket;
use crate::sync::lock;

impl RingSocket {
    /// The stream leaves the ring for good (`into_std`, or readiness asked for): on the
    /// loop's thread, the queued sends go to the kernel now and the receive stops at
    /// once, and the completions already waiting are taken in, so that every byte the
    /// ring received is in `chunks` before anything reads the socket directly. Off the
    /// loop's thread the cancel is only queued: reads wait for the receive's last
    /// completion, which wakes them ([`read_leftover`](Self::read_leftover)).
    pub(crate) fn detach(self: &Arc<Self>) {
        lock(&self.state).lifecycle.leave();
        self.cancel_in_flight(|this| lock(&this.state).recv.into_iter().collect());
        // Readers waiting on the ring poll again, by readiness now.
        let readers = lock(&self.state).reader.take();
        wake_all([readers]);
    }

    /// A read (or, `peek`, a peek) of a stream that left the ring: the bytes the ring
    /// received come first, in order. While the cancelled receive is still in flight
    /// (a detach off the loop's thread only queues its cancel), it may still bring
    /// bytes that came before anything now in the socket, so the read waits
    /// (`Pending`, `waiter`'s waker kept, woken by the receive's last completion).
    /// Then the chunks left are read, then a receive error the ring took from the
    /// socket; `None` once nothing is left and nothing is in flight: the socket is
    /// read directly from then on.
    pub(crate) fn read_leftover(
        self: &Arc<Self>,
        waiter: Option<(&Context<'_>, bool)>,
        buf: &mut [u8],
        peek: bool,
    ) -> Option<Poll<io::Result<usize>>> {
        let mut state = lock(&self.state);
        if !state.chunks.is_empty() {
            return Some(Poll::Ready(Ok(self.copy_out(state, buf, peek))));
        }
        if state.leftover_in_flight() {
            let displaced = state.reader.wait_if(waiter);
            drop(state);
            wake_displaced(displaced);
            return Some(Poll::Pending);
        }
        let errno = if peek {
            state.read_error
        } else {
            state.read_error.take()
        }?;
        Some(Poll::Ready(Err(io::Error::from_raw_os_error(errno))))
    }

    /// The read readiness of a stream that left the ring, from what the ring left:
    /// ready while received bytes (or a receive error) wait, `Pending` (`cx`'s waker
    /// kept as [`poll_read_ready`](Self::poll_read_ready) keeps it) while the
    /// cancelled receive is in flight, `None` once the socket's own readiness counts.
    pub(crate) fn poll_leftover_ready(&self, cx: &Context<'_>, shared: bool) -> Option<Poll<io::Result<()>>> {
        let mut state = lock(&self.state);
        if !state.chunks.is_empty() || state.read_error.is_some() {
            return Some(Poll::Ready(Ok(())));
        }
        if !state.leftover_in_flight() {
            return None;
        }
        let displaced = state.reader.wait(cx, shared);
        drop(state);
        wake_displaced(displaced);
        Some(Poll::Pending)
    }

    /// True while bytes received before the stream left the ring (or a receive error)
    /// wait, or may still arrive from the cancelled receive: a read goes through
    /// [`read_leftover`](Self::read_leftover) until this is false.
    pub(crate) fn has_leftover(&self) -> bool {
        let state = lock(&self.state);
        !state.chunks.is_empty() || state.read_error.is_some() || state.leftover_in_flight()
    }

    /// For a stream that left the ring: ready once the ring has sent everything it
    /// accepted (so that writes by readiness, and a shutdown, follow those bytes);
    /// `cx`'s waker kept (`shared`: beside the others) until then.
    pub(crate) fn poll_sent(&self, cx: Option<&Context<'_>>, shared: bool) -> Poll<io::Result<()>> {
        let mut state = lock(&self.state);
        if let Some(e) = state.take_send_error() {
            return Poll::Ready(Err(e));
        }
        if !state.sending || state.loop_gone {
            return Poll::Ready(Ok(()));
        }
        let displaced = state.writer.wait_if(cx.map(|cx| (cx, shared)));
        drop(state);
        wake_displaced(displaced);
        Poll::Pending
    }
}
