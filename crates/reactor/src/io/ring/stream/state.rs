//! What a stream's ring socket knows, under its lock: its lifecycle, its receive side
//! and its send side.
//!
//! ```text
//!   lifecycle (its stream's hold on it):
//!
//!   OnRing ── detach (readiness asked for) ──▶ Left
//!     │                                          │
//!     └── release (stream dropped) ─▶ Released ◀─┘ release (`into_std`, or dropped
//!                                       │  { left, lingering }      after leaving)
//!                                       └── abort (TCP reset) ─▶ Aborted { left }
//! ```
//!
//! Beside the lifecycle, `loop_gone` is the loop's fate, which can come in any of them:
//! once set, every operation fails and nothing more is submitted.

use std::collections::VecDeque;
use std::io;

use super::super::seam::RingState;
use super::super::waiters::Waiters;

/// Received bytes not yet read: part of one provided buffer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Chunk {
    pub(super) bid: u16,
    pub(super) start: u32,
    pub(super) end: u32,
}

/// Where the socket stands between its stream and the ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Lifecycle {
    /// Its stream reads and writes through the ring.
    #[default]
    OnRing,
    /// The stream left the ring (`into_std`, readiness): nothing new is submitted; its
    /// reads take what the ring received first.
    Left,
    /// The stream is gone (`left`: it had left the ring first): what it accepted is
    /// sent, nothing is received. `lingering`: its entry among the loop's lingering
    /// targets while its sends finish.
    Released { left: bool, lingering: Option<usize> },
    /// The released stream's connection is being reset (`SO_LINGER` 0 set, nothing
    /// more is sent, every operation cancelled): the last close sends the reset.
    Aborted { left: bool },
}

impl Lifecycle {
    /// The stream left the ring (nothing new is submitted for it).
    pub(super) fn left_ring(self) -> bool {
        matches!(
            self,
            Lifecycle::Left | Lifecycle::Released { left: true, .. } | Lifecycle::Aborted { left: true }
        )
    }

    /// The stream is gone.
    pub(super) fn released(self) -> bool {
        matches!(self, Lifecycle::Released { .. } | Lifecycle::Aborted { .. })
    }

    pub(super) fn aborted(self) -> bool {
        matches!(self, Lifecycle::Aborted { .. })
    }

    /// The stream leaves the ring.
    pub(super) fn leave(&mut self) {
        *self = match *self {
            Lifecycle::OnRing => Lifecycle::Left,
            Lifecycle::Released { lingering, .. } => Lifecycle::Released { left: true, lingering },
            Lifecycle::Aborted { .. } => Lifecycle::Aborted { left: true },
            Lifecycle::Left => Lifecycle::Left,
        }
    }

    /// The stream is gone.
    pub(super) fn release(&mut self) {
        if let Lifecycle::OnRing | Lifecycle::Left = *self {
            *self = Lifecycle::Released {
                left: self.left_ring(),
                lingering: None,
            };
        }
    }

    /// The connection is being reset; returns the lingering entry it had, to remove.
    pub(super) fn abort(&mut self) -> Option<usize> {
        let lingering = self.take_lingering();
        *self = Lifecycle::Aborted { left: self.left_ring() };
        lingering
    }

    /// The released stream's lingering entry.
    pub(super) fn lingering(self) -> Option<usize> {
        match self {
            Lifecycle::Released { lingering, .. } => lingering,
            _ => None,
        }
    }

    /// Notes the released stream's lingering entry.
    pub(super) fn linger(&mut self, key: usize) {
        if let Lifecycle::Released { lingering, .. } = self {
            *lingering = Some(key);
        }
    }

    /// The released stream's lingering entry, taken: it lingers no more.
    pub(super) fn take_lingering(&mut self) -> Option<usize> {
        match self {
            Lifecycle::Released { lingering, .. } => lingering.take(),
            _ => None,
        }
    }
}

/// The write direction's shutdown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Shutdown {
    #[default]
    Open,
    /// `shutdown(SHUT_WR)` once everything accepted has been sent.
    Requested,
    /// Shut.
    Done,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(super) lifecycle: Lifecycle,
    /// The loop shut down: every operation fails from now on.
    pub(super) loop_gone: bool,

    // ---- the receive side (`receive.rs`) ----
    /// Readable as tokio counts it: set by arriving bytes (and at first, for an
    /// accepted socket, assumed readable), cleared only when a read finds nothing.
    pub(super) readable: bool,
    pub(super) chunks: VecDeque<Chunk>,
    /// The receive (or readiness poll) in flight: its op key.
    pub(super) recv: Option<usize>,
    /// The receive was paused at `MAX_CHUNKS`: re-armed when the reader catches up.
    pub(super) throttled: bool,
    /// End of stream seen (after the chunks).
    pub(super) eof: bool,
    /// A receive error for the next read (then end of stream).
    pub(super) read_error: Option<i32>,
    /// The receive saw the peer's reset (`ECONNRESET`), reported or not: a write fails
    /// at once, as the kernel's would.
    pub(super) peer_reset: bool,
    pub(super) reader: Waiters,

    // ---- the send side (`send.rs`) ----
    /// Writable as tokio counts it: cleared only when a write finds the send window
    /// full, set again when a send makes room (or fails).
    pub(super) writable: bool,
    /// Accepted, not yet handed to a send.
    pub(super) pending: Vec<u8>,
    /// A send is in flight or queued for submission.
    pub(super) sending: bool,
    /// The send in flight: its op key.
    pub(super) send: Option<usize>,
    /// The last send failed: the next write, flush or shutdown reports it.
    pub(super) write_error: Option<i32>,
    /// A send failed, or a write reported the peer's reset: as the kernel's socket,
    /// every later write fails (`EPIPE` once the first failure is reported).
    pub(super) write_failed: bool,
    /// The loop ended with accepted bytes unsent (they are lost): the next flush or
    /// shutdown reports it.
    pub(super) lost_to_loop_end: bool,
    pub(super) shutdown: Shutdown,
    pub(super) writer: Waiters,
    /// Spare allocation for the next send's bytes.
    pub(super) spare: Vec<u8>,
}

impl RingState for State {
    /// Accepted bytes still unsent are lost: the next flush or shutdown reports it.
    fn lose_loop(&mut self) -> [Waiters; 2] {
        self.loop_gone = true;
        if self.sending {
            self.lost_to_loop_end = true;
        }
        self.sending = false;
        self.pending.clear();
        [self.reader.take(), self.writer.take()]
    }
}

impl State {
    pub(super) fn read_would_not_wait(&self) -> bool {
        self.readable || !self.chunks.is_empty() || self.eof || self.read_error.is_some()
    }

    /// A receive is in flight that may still bring bytes: after a detach, those come
    /// before anything the socket holds now (a gone loop completes nothing more).
    pub(super) fn leftover_in_flight(&self) -> bool {
        self.recv.is_some() && !self.loop_gone
    }

    /// What a flush or shutdown reports, once: a failed send no write reported (every
    /// later write fails), or accepted bytes lost with the loop.
    pub(super) fn unreported_write_failure(&mut self) -> Option<io::Error> {
        self.take_send_error()
            .or_else(|| std::mem::take(&mut self.lost_to_loop_end).then(crate::error::LoopShutDown::io_error))
    }

    /// A failed send's error, not reported yet; from then on the socket counts as
    /// failed for writes.
    pub(super) fn take_send_error(&mut self) -> Option<io::Error> {
        let errno = self.write_error.take()?;
        self.write_failed = true;
        Some(io::Error::from_raw_os_error(errno))
    }
}
