//! The loop's live I/O registrations, and when their memory may be freed.
//!
//! A registration's mio token is the address of its [`Readiness`], so the loop turns
//! an event into its registration without a lookup or a lock (tokio does the same).
//! That address must stay valid for as long as an event can name it:
//!
//! 1. While registered, the set holds an `Arc` of the `Readiness`.
//! 2. Dropping a registration first deregisters its source from the `Poll`
//!    (`epoll_ctl(DEL)`), so no later `select` can return its token. A `select` that
//!    was already collecting events may still have returned it, and the loop processes
//!    those events after `select` returns.
//! 3. So [`remove`](RegistrationSet::remove) does not free: it moves the `Arc` to a
//!    release list. The loop frees that list only at the start of an iteration, before
//!    its `select`, when no event of an earlier `select` is left to process
//!    ([`release_pending`](RegistrationSet::release_pending)).
//!
//! Registering and removing take the set's lock, from any thread; they happen once per
//! connection. Dispatching an event, once per wake-up, takes no lock.
//!
//! # How the loop sees a registration made on another thread
//!
//! The registering thread writes the `Readiness` (in [`insert`](RegistrationSet::insert))
//! and then adds its source to the loop's epoll instance (`epoll_ctl`); the loop reads
//! the `Readiness` only after an `epoll_wait` returned its token. The kernel orders the
//! two calls (both take the epoll instance's lock, and the wait returns an event the
//! addition made), so the writes happen before the reads, with no lock or atomic of
//! ours in between.
//!
//! ThreadSanitizer models this edge only between calls on the same descriptor number,
//! and the loop's `Registry` is a duplicate of the `Poll`'s descriptor
//! (`Registry::try_clone`, an `fcntl(F_DUPFD_CLOEXEC)` that it does not track): it
//! would report the loop's first reads of each such registration as races. Under
//! `--cfg netloop_tsan` (the TSan CI step) an atomic of the set stands in for the
//! kernel: `insert` releases it, and the loop acquires it after every select that
//! returned events ([`events_arrived`](RegistrationSet::events_arrived)). That is
//! TSan's own model of epoll (any addition happens before any wait that returns
//! events), on a word it can follow.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::{Arc, Mutex, MutexGuard};

use slab::Slab;

use super::readiness::Readiness;

/// The registrations of one loop; see the module docs.
#[derive(Default)]
pub(crate) struct RegistrationSet {
    inner: Mutex<Inner>,
    /// Set when `inner.released` is not empty: the loop looks here, not at the lock.
    release_pending: AtomicBool,
    /// The kernel's edge from `epoll_ctl` to `epoll_wait`, made visible to
    /// ThreadSanitizer (module docs).
    #[cfg(netloop_tsan)]
    kernel_edge: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct Inner {
    /// Live registrations, by the key each `Readiness` keeps.
    live: Slab<Arc<Readiness>>,
    /// Removed registrations whose memory waits for the loop's next iteration.
    released: Vec<Arc<Readiness>>,
    /// After the loop shut down: no new registrations.
    closed: bool,
}

impl RegistrationSet {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    /// Allocates a registration; `None` after the loop shut down. Its token is
    /// [`Readiness::token`].
    pub(crate) fn insert(&self) -> Option<Arc<Readiness>> {
        let mut inner = self.lock();
        if inner.closed {
            return None;
        }
        let entry = inner.live.vacant_entry();
        let io = Arc::new(Readiness::new(entry.key()));
        entry.insert(io.clone());
        #[cfg(netloop_tsan)]
        self.kernel_edge.fetch_add(1, Release);
        Some(io)
    }

    /// Loop side, after a select that returned events and before any of them is read:
    /// the acquire half of the kernel's edge under `--cfg netloop_tsan` (module docs);
    /// nothing otherwise.
    #[inline]
    pub(crate) fn events_arrived(&self) {
        #[cfg(netloop_tsan)]
        self.kernel_edge.load(Acquire);
    }

    /// Forgets `io`, whose source the caller has deregistered (or never registered).
    /// Its memory lives on until the loop's next [`release_pending`](Self::release_pending).
    pub(crate) fn remove(&self, io: &Readiness) {
        let mut inner = self.lock();
        if inner.live.get(io.key).is_some_and(|live| std::ptr::eq(&**live, io)) {
            let io = inner.live.remove(io.key);
            inner.released.push(io);
            self.release_pending.store(true, Release);
        }
    }

    /// Loop side, at the start of an iteration (no event of an earlier `select` is
    /// left): frees the registrations removed since the last call. One load when there
    /// are none.
    #[inline]
    pub(crate) fn release_pending(&self) {
        if self.release_pending.load(Acquire) {
            self.release();
        }
    }

    #[inline(never)]
    fn release(&self) {
        let released = {
            let mut inner = self.lock();
            self.release_pending.store(false, Release);
            std::mem::take(&mut inner.released)
        };
        drop(released);
    }

    /// Loop side, at termination (no `select` follows): refuses new registrations and
    /// hands back every live one, to be shut down. Frees the release list too.
    pub(crate) fn close(&self) -> Vec<Arc<Readiness>> {
        let mut inner = self.lock();
        inner.closed = true;
        inner.released.clear();
        self.release_pending.store(false, Release);
        inner.live.drain().collect()
    }

    /// How many registrations are live.
    pub(crate) fn len(&self) -> usize {
        self.lock().live.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A removed registration stays valid until the loop releases it, and only then.
    #[test]
    fn removed_registrations_live_until_the_loop_releases_them() {
        let set = RegistrationSet::default();
        let io = set.insert().expect("open");
        let token = io.token();
        let watch = Arc::downgrade(&io);
        set.remove(&io);
        drop(io);
        assert_eq!(set.len(), 0);
        // An event returned before the deregistration may still name the token, and
        // the loop turns it back into the registration (miri checks this access).
        assert!(watch.upgrade().is_some(), "freed before the loop released it");
        // SAFETY: the registration is in the release list, not yet freed.
        let named = unsafe { Readiness::from_token(token) };
        assert_eq!(named.key, 0);
        assert!(named.ready_now(crate::io::Direction::Read).is_none());
        set.release_pending();
        assert!(watch.upgrade().is_none(), "released at the loop's next iteration");
    }

    /// Removing twice, or removing a registration of another set, changes nothing.
    #[test]
    fn remove_only_forgets_its_own_registration_once() {
        let (a, b) = (RegistrationSet::default(), RegistrationSet::default());
        let io_a = a.insert().unwrap();
        let io_b = b.insert().unwrap();
        assert_eq!(io_a.key, io_b.key, "both took key 0");
        a.remove(&io_b);
        assert_eq!(a.len(), 1, "a registration of another set is not removed");
        a.remove(&io_a);
        a.remove(&io_a);
        assert_eq!((a.len(), b.len()), (0, 1));
        a.release_pending();
        assert_eq!(Arc::strong_count(&io_a), 1);
    }

    /// After `close` the set refuses registrations and holds nothing.
    #[test]
    fn close_hands_back_live_registrations_and_refuses_new_ones() {
        let set = RegistrationSet::default();
        let live = set.insert().unwrap();
        let removed = set.insert().unwrap();
        set.remove(&removed);
        let closed = set.close();
        assert_eq!(closed.len(), 1);
        assert!(Arc::ptr_eq(&closed[0], &live));
        assert_eq!(Arc::strong_count(&removed), 1, "the release list was freed");
        assert!(set.insert().is_none());
    }
}
