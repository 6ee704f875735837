//! A socket's place between readiness and its loop's ring: chosen at its first use,
//! and left for good.
//!
//! ```text
//!   undecided ─┬─ first use on the thread of an io_uring loop (not registered for
//!              │  readiness, its loop on io_uring, the ring socket made) ─▶ on the ring
//!              └─ any other first use ─▶ on readiness, for good
//!   on the ring ── leave (readiness asked for itself) ─▶ left: readiness from now on,
//!                  the ring socket kept for what it still holds (its leftovers)
//! ```
//!
//! The choice is written once (`OnceLock`) and the leave is one flag set once
//! (`Release`, read with `Acquire`), so every thread sees one place at a time and none
//! goes back.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Arc, OnceLock};

use mio::event::Source;

use crate::context;
use crate::core::Core;
use crate::io::poll_evented::PollEvented;

/// Where a socket's I/O goes: `T` is its ring socket.
pub(crate) struct FirstUse<T> {
    /// `Some` once the socket went on its loop's ring; `None` once it is on readiness.
    chosen: OnceLock<Option<Arc<T>>>,
    /// Set when a socket on the ring was asked for readiness and left the ring.
    left: AtomicBool,
}

impl<T> FirstUse<T> {
    /// Not chosen yet: the first use decides.
    pub(crate) fn undecided() -> Self {
        FirstUse {
            chosen: OnceLock::new(),
            left: AtomicBool::new(false),
        }
    }

    /// On readiness for good.
    pub(crate) fn readiness() -> Self {
        FirstUse {
            chosen: OnceLock::from(None),
            left: AtomicBool::new(false),
        }
    }

    /// The ring socket while the socket is on the ring; at the first call, `choose`
    /// decides (`None`: readiness).
    #[inline]
    pub(crate) fn on_ring(&self, choose: impl FnOnce() -> Option<Arc<T>>) -> Option<&Arc<T>> {
        let ring = self.chosen.get_or_init(choose).as_ref()?;
        if self.left.load(Acquire) { None } else { Some(ring) }
    }

    /// The ring socket if the socket went on the ring, whether it left since or not;
    /// decides nothing.
    pub(crate) fn chosen(&self) -> Option<&Arc<T>> {
        self.chosen.get().and_then(Option::as_ref)
    }

    /// The ring socket of a socket that left the ring.
    pub(crate) fn left(&self) -> Option<&Arc<T>> {
        let ring = self.chosen()?;
        self.left.load(Acquire).then_some(ring)
    }

    /// The socket leaves the ring for good.
    pub(crate) fn leave(&self) {
        self.left.store(true, Release);
    }

    /// The ring socket, if one was chosen, taken out (the socket is dropping).
    pub(crate) fn take(&mut self) -> Option<Arc<T>> {
        self.chosen.take().flatten()
    }

    /// The ring socket, if one was chosen.
    pub(crate) fn into_inner(self) -> Option<Arc<T>> {
        self.chosen.into_inner().flatten()
    }
}

/// The first use's choice for a socket not registered yet (`evented`, placed at its
/// first use): on the ring, with the ring socket `make` makes, if this thread drives
/// an io_uring loop and the socket's own loop runs on io_uring; readiness (`None`)
/// otherwise, or if `make` gives none.
pub(crate) fn choose<S: Source, T>(
    evented: &PollEvented<S>,
    make: impl FnOnce(&Core) -> Option<Arc<T>>,
) -> Option<Arc<T>> {
    if evented.is_registered() {
        return None;
    }
    let fallback = evented.deferred_fallback()?;
    if !fallback.shared.on_ring.load(Relaxed) {
        return None;
    }
    context::with_core(|core| {
        let core = core.filter(|c| c.shared.on_ring.load(Relaxed))?;
        make(core)
    })
}
