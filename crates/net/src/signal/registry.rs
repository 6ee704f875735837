//! The process-wide half of signal handling: one handler per signal number, the
//! self-pipe the handlers write to, and the listeners a delivery wakes.
//!
//! A handler only does what is async-signal-safe: it marks its signal pending and
//! writes one byte to the pipe. Each runtime's driver task (see `driver`) reads the pipe
//! on one of its loops and calls [`broadcast`], which turns every pending mark into one
//! delivery and wakes that signal's listeners, on whatever loops they wait.

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Mutex, OnceLock};
use std::task::Waker;

use netloop_scheduler::sync::lock;

/// What the process knows of one signal number.
pub(super) struct Slot {
    /// Set by the handler, taken by [`broadcast`].
    pending: AtomicBool,
    /// Deliveries so far. A listener has seen a delivery once its own count equals this.
    deliveries: AtomicU64,
    /// The handler, installed once and never removed (as in tokio: a process that
    /// listened for a signal once keeps handling it).
    installed: OnceLock<Result<(), Option<i32>>>,
    /// Wakers of the listeners waiting for the next delivery, by listener id.
    waiting: Mutex<HashMap<u64, Waker>>,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            pending: AtomicBool::new(false),
            deliveries: AtomicU64::new(0),
            installed: OnceLock::new(),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// Deliveries so far; a new listener starts from here (it sees none of the past).
    pub(super) fn deliveries(&self) -> u64 {
        self.deliveries.load(Acquire)
    }

    /// Registers `waker` for the next delivery after `seen`; returns the delivery count
    /// if one already happened, in which case nothing stays registered.
    ///
    /// Invariant: a broadcast either sees this waker (the delivery wakes it) or
    /// happened before the waker went in (the count read after the lock shows it).
    pub(super) fn wait(&self, id: u64, seen: u64, waker: &Waker) -> Option<u64> {
        {
            let mut waiting = lock(&self.waiting);
            match waiting.get_mut(&id) {
                Some(w) if w.will_wake(waker) => {}
                Some(w) => w.clone_from(waker),
                None => {
                    waiting.insert(id, waker.clone());
                }
            }
        }
        let now = self.deliveries();
        if now != seen {
            self.forget(id);
            Some(now)
        } else {
            None
        }
    }

    /// Drops listener `id`'s waker, if it has one.
    pub(super) fn forget(&self, id: u64) {
        lock(&self.waiting).remove(&id);
    }

    fn deliver(&self) {
        if !self.pending.swap(false, AcqRel) {
            return;
        }
        self.deliveries.fetch_add(1, Release);
        let woken = std::mem::take(&mut *lock(&self.waiting));
        for (_, waker) in woken {
            waker.wake();
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("deliveries", &self.deliveries())
            .finish_non_exhaustive()
    }
}

/// The self-pipe and one [`Slot`] per signal number the OS has.
pub(super) struct Globals {
    sender: UnixStream,
    receiver: UnixStream,
    slots: Box<[Slot]>,
}

impl Globals {
    /// The slot of signal number `signum`, if the OS has such a signal.
    pub(super) fn slot(&self, signum: i32) -> Option<&Slot> {
        usize::try_from(signum).ok().and_then(|i| self.slots.get(i))
    }

    /// A new descriptor of the pipe's read end, for one runtime's driver.
    pub(super) fn receiver(&self) -> io::Result<UnixStream> {
        self.receiver.try_clone()
    }
}

/// The process's signal state, created on first use.
pub(super) fn globals() -> &'static Globals {
    static GLOBALS: OnceLock<Globals> = OnceLock::new();
    GLOBALS.get_or_init(|| {
        let (sender, receiver) = UnixStream::pair().expect("failed to create the signal self-pipe");
        // Neither end may block: the handler must return at once even when the pipe is
        // full (the pending mark is enough then), and drivers drain it until empty.
        sender
            .set_nonblocking(true)
            .expect("failed to make the signal self-pipe nonblocking");
        receiver
            .set_nonblocking(true)
            .expect("failed to make the signal self-pipe nonblocking");
        let count = usize::try_from(max_signal()).unwrap_or(64) + 1;
        Globals {
            sender,
            receiver,
            slots: (0..count).map(|_| Slot::new()).collect(),
        }
    })
}

#[cfg(any(target_os = "linux", target_os = "android", target_os = "illumos"))]
fn max_signal() -> i32 {
    libc::SIGRTMAX()
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "illumos")))]
fn max_signal() -> i32 {
    // BSDs and macOS number their signals below 33.
    33
}

/// Installs the process-wide handler for `signum` (once; later calls return the first
/// outcome).
pub(super) fn install(globals: &'static Globals, signum: i32) -> io::Result<()> {
    let slot = globals
        .slot(signum)
        .ok_or_else(|| io::Error::other("signal too large"))?;
    slot.installed
        .get_or_init(|| {
            // SAFETY: the action only stores to an atomic and writes to a nonblocking
            // socket, both async-signal-safe; it allocates nothing and takes no lock.
            unsafe { signal_hook_registry::register(signum, move || on_signal(globals, signum)) }
                .map(drop)
                .map_err(|e| e.raw_os_error())
        })
        .map_err(|code| match code {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::other("registering signal handler failed"),
        })
}

/// The signal handler's whole body.
fn on_signal(globals: &'static Globals, signum: i32) {
    if let Some(slot) = globals.slot(signum) {
        slot.pending.store(true, SeqCst);
    }
    // A full pipe already guarantees a wakeup; nothing else can reasonably fail.
    let _ = (&globals.sender).write(&[1]);
}

/// Turns every pending signal into a delivery and wakes its listeners.
pub(super) fn broadcast() {
    for slot in globals().slots.iter() {
        slot.deliver();
    }
}

/// A process-unique listener id.
pub(super) fn next_listener_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicU64);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn a_delivery_wakes_every_waiting_listener_once_and_counts() {
        let slot = Slot::new();
        let count = Arc::new(Count(AtomicU64::new(0)));
        let waker = Waker::from(count.clone());
        let seen = slot.deliveries();
        assert_eq!(slot.wait(1, seen, &waker), None);
        assert_eq!(slot.wait(2, seen, &waker), None);
        // Without a pending mark nothing is delivered.
        slot.deliver();
        assert_eq!(count.0.load(SeqCst), 0);
        slot.pending.store(true, SeqCst);
        slot.deliver();
        assert_eq!(count.0.load(SeqCst), 2);
        assert_eq!(slot.deliveries(), seen + 1);
        // A listener that comes back after the delivery sees it without waiting.
        assert_eq!(slot.wait(1, seen, &waker), Some(seen + 1));
        assert!(slot.waiting.lock().unwrap().is_empty());
    }

    #[test]
    fn signals_recorded_before_a_broadcast_coalesce_into_one_delivery() {
        let slot = Slot::new();
        slot.pending.store(true, SeqCst);
        slot.pending.store(true, SeqCst);
        slot.deliver();
        slot.deliver();
        assert_eq!(slot.deliveries(), 1);
    }

    #[test]
    fn a_forgotten_listener_is_not_woken() {
        let slot = Slot::new();
        let count = Arc::new(Count(AtomicU64::new(0)));
        assert_eq!(slot.wait(7, 0, &Waker::from(count.clone())), None);
        slot.forget(7);
        slot.pending.store(true, SeqCst);
        slot.deliver();
        assert_eq!(count.0.load(SeqCst), 0);
    }
}
