//! The timers of a thread parked in a multi-thread runtime's `block_on`.
//!
//! `#[main]`'s own code runs in the body of `block_on`, on a thread that drives no
//! loop. A `Sleep` polled there used to cross to a loop through its inbox (three
//! allocations and two inbox items per sleep, and the loop woken for each). Instead,
//! while `block_on` parks its thread, the thread keeps a timer store of its own:
//! a sleep polled on that thread files an entry here under an uncontended lock, and
//! `block_on` parks only until the earliest deadline, then fires what is due.
//!
//! Invariants:
//! - Only the thread whose `block_on` installed the store files new entries in it (it
//!   is found through a thread-local), so the deadline it parks until can only be
//!   changed by itself: an entry's deadline is otherwise only ever moved later
//!   (`postpone`), which the firing takes up lazily by filing the entry again.
//! - An entry leaves the store only when its `Sleep` takes it (a poll that finds it
//!   fired, a cancel, a drop); firing only marks it. Every heap item names an entry by
//!   index and generation, and items whose entry has gone are skipped.
//! - When `block_on` returns with entries still waiting, the store is handed to a loop
//!   of the runtime: one scheduled wake at the earliest deadline fires what is due and
//!   schedules itself again, so a sleep moved out of `block_on` still fires.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};
use std::time::Instant;

use netloop_reactor::EventLoopHandle;

use crate::sync::lock;

thread_local! {
    /// The store of the `block_on` parking this thread, if any.
    static CURRENT: RefCell<Option<Arc<ParkedTimers>>> = const { RefCell::new(None) };
}

/// One thread's timers while it is parked in `block_on` (see the module's invariants).
pub(crate) struct ParkedTimers {
    store: Mutex<Store>,
}

#[derive(Default)]
struct Store {
    entries: Vec<Entry>,
    /// Indexes of free entries.
    free: Vec<u32>,
    /// Waiting entries by deadline; may hold items of entries that have gone.
    heap: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    /// Entries in use (waiting or fired and not yet taken).
    live: usize,
    /// The loop that fires the entries once `block_on` has returned.
    handed_to: Option<EventLoopHandle>,
    /// No loop could take the entries over: each sleep files its timer anew.
    orphaned: bool,
}

struct Entry {
    generation: u32,
    deadline: Instant,
    state: State,
}

enum State {
    Free,
    Waiting(Waker),
    Fired,
}

/// A sleep's entry in a [`ParkedTimers`] store.
pub(crate) struct ParkedKey {
    timers: Arc<ParkedTimers>,
    index: u32,
    generation: u32,
}

/// What a poll of a parked entry found.
pub(crate) enum Polled {
    Waiting,
    Fired,
    /// Nothing will fire the entry: remove it and file the timer another way.
    Orphaned,
}

/// Files a timer for `deadline` in the store of the `block_on` parking this thread,
/// if there is one; `None` elsewhere.
pub(crate) fn register(deadline: Instant, waker: &Waker) -> Option<ParkedKey> {
    CURRENT
        .try_with(|current| {
            let current = current.borrow();
            let timers = current.as_ref()?;
            Some(timers.register(deadline, waker))
        })
        .ok()
        .flatten()
}

impl ParkedTimers {
    /// Installs a store for this thread until the returned guard is dropped.
    pub(crate) fn install() -> Installed {
        let timers = Arc::new(ParkedTimers {
            store: Mutex::new(Store::default()),
        });
        let previous = CURRENT.with(|c| c.replace(Some(timers.clone())));
        Installed { timers, previous }
    }

    fn register(self: &Arc<Self>, deadline: Instant, waker: &Waker) -> ParkedKey {
        let mut store = lock(&self.store);
        let (index, generation) = match store.free.pop() {
            Some(index) => {
                let entry = &mut store.entries[index as usize];
                entry.deadline = deadline;
                entry.state = State::Waiting(waker.clone());
                (index, entry.generation)
            }
            None => {
                let index = u32::try_from(store.entries.len()).expect("more than u32::MAX parked timers");
                store.entries.push(Entry {
                    generation: 0,
                    deadline,
                    state: State::Waiting(waker.clone()),
                });
                (index, 0)
            }
        };
        store.heap.push(Reverse((deadline, index, generation)));
        store.live += 1;
        ParkedKey {
            timers: self.clone(),
            index,
            generation,
        }
    }

    /// Fires every entry due by `now`; returns the earliest deadline still waiting.
    pub(crate) fn fire_due(&self, now: Instant) -> Option<Instant> {
        let mut due = Vec::new();
        let mut store = lock(&self.store);
        let next = store.take_due(now, &mut due);
        drop(store);
        for waker in due {
            waker.wake();
        }
        next
    }
}

impl Store {
    /// Marks the entries due by `now` fired, moving their wakers to `due`; returns the
    /// earliest deadline left (possibly of an entry that has gone: one spare wake).
    fn take_due(&mut self, now: Instant, due: &mut Vec<Waker>) -> Option<Instant> {
        while let Some(&Reverse((deadline, index, generation))) = self.heap.peek() {
            if deadline > now {
                return Some(deadline);
            }
            self.heap.pop();
            let entry = &mut self.entries[index as usize];
            if entry.generation != generation || !matches!(entry.state, State::Waiting(_)) {
                continue;
            }
            if entry.deadline > deadline {
                // Postponed since it was filed: file it for the new deadline.
                let later = entry.deadline;
                self.heap.push(Reverse((later, index, generation)));
                continue;
            }
            if let State::Waiting(waker) = std::mem::replace(&mut entry.state, State::Fired) {
                due.push(waker);
            }
        }
        None
    }

    fn entry(&mut self, key: &ParkedKey) -> Option<&mut Entry> {
        self.entries
            .get_mut(key.index as usize)
            .filter(|e| e.generation == key.generation && !matches!(e.state, State::Free))
    }

    fn free(&mut self, index: u32) {
        let entry = &mut self.entries[index as usize];
        entry.state = State::Free;
        entry.generation = entry.generation.wrapping_add(1);
        self.free.push(index);
        self.live -= 1;
        if self.live == 0 {
            // Nothing waits: every heap item is stale.
            self.heap.clear();
        } else if self.heap.len() > 2 * self.live + 64 {
            let entries = &self.entries;
            self.heap.retain(|Reverse((_, i, g))| {
                let e = &entries[*i as usize];
                e.generation == *g && matches!(e.state, State::Waiting(_))
            });
        }
    }
}

impl ParkedKey {
    /// Whether the entry has fired; if not, `waker` is the one it will wake.
    pub(crate) fn poll(&self, waker: &Waker) -> Polled {
        let mut store = lock(&self.timers.store);
        if store.orphaned {
            return Polled::Orphaned;
        }
        match store.entry(self).map(|e| &mut e.state) {
            Some(State::Waiting(w)) => {
                if !w.will_wake(waker) {
                    *w = waker.clone();
                }
                Polled::Waiting
            }
            _ => Polled::Fired,
        }
    }

    /// True once the entry has fired (false for an orphaned one, which never fires).
    pub(crate) fn has_fired(&self) -> bool {
        let mut store = lock(&self.timers.store);
        matches!(store.entry(self).map(|e| &e.state), Some(State::Fired))
    }

    /// Moves a waiting entry's deadline later; false if it has fired (file anew).
    pub(crate) fn postpone(&self, deadline: Instant) -> bool {
        let mut store = lock(&self.timers.store);
        match store.entry(self) {
            Some(entry) if matches!(entry.state, State::Waiting(_)) => {
                entry.deadline = entry.deadline.max(deadline);
                true
            }
            _ => false,
        }
    }

    /// Takes the entry out of the store (the sleep completed or was cancelled).
    pub(crate) fn remove(self) {
        let mut store = lock(&self.timers.store);
        if store.entry(&self).is_some() {
            store.free(self.index);
        }
    }
}

/// The store of one `block_on`, installed on its thread until dropped.
pub(crate) struct Installed {
    timers: Arc<ParkedTimers>,
    previous: Option<Arc<ParkedTimers>>,
}

impl Installed {
    pub(crate) fn timers(&self) -> &ParkedTimers {
        &self.timers
    }

    /// Uninstalls the store; entries still waiting are handed to `event_loop`, which
    /// fires them from now on.
    pub(crate) fn hand_over(self, event_loop: Option<EventLoopHandle>) {
        let timers = self.timers.clone();
        drop(self);
        let next = {
            let mut store = lock(&timers.store);
            if store.live == 0 {
                return;
            }
            store.handed_to = event_loop;
            store.heap.peek().map(|Reverse((d, _, _))| *d)
        };
        if let Some(next) = next {
            HandedOver(timers).schedule(next);
        }
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        let _ = CURRENT.try_with(|c| c.replace(previous));
    }
}

/// A store whose `block_on` has returned, fired by a scheduled wake on its loop.
struct HandedOver(Arc<ParkedTimers>);

impl HandedOver {
    fn schedule(self, at: Instant) {
        let event_loop = lock(&self.0.store).handed_to.clone();
        let timers = self.0.clone();
        let scheduled = event_loop.is_some_and(|l| l.schedule_wake(at, Waker::from(Arc::new(self))).is_ok());
        if !scheduled {
            // No loop will fire them: wake every waiter now, so that each polls and
            // files its timer anew (on a loop, or panicking with the shutdown message).
            let mut store = lock(&timers.store);
            store.orphaned = true;
            let wakers: Vec<Waker> = store
                .entries
                .iter()
                .filter_map(|e| match &e.state {
                    State::Waiting(w) => Some(w.clone()),
                    _ => None,
                })
                .collect();
            drop(store);
            wakers.into_iter().for_each(Waker::wake);
        }
    }
}

impl Wake for HandedOver {
    fn wake(self: Arc<Self>) {
        if let Some(next) = self.0.fire_due(Instant::now()) {
            HandedOver(self.0.clone()).schedule(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::time::Duration;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    fn counter() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    #[test]
    fn fires_in_deadline_order_and_only_when_due() {
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let (c, w) = counter();
        let late = register(t0 + Duration::from_secs(2), &w).unwrap();
        let early = register(t0 + Duration::from_secs(1), &w).unwrap();
        assert_eq!(installed.timers().fire_due(t0), Some(t0 + Duration::from_secs(1)));
        assert_eq!(c.0.load(SeqCst), 0);
        assert_eq!(
            installed.timers().fire_due(t0 + Duration::from_secs(1)),
            Some(t0 + Duration::from_secs(2))
        );
        assert!(early.has_fired() && !late.has_fired());
        assert_eq!(c.0.load(SeqCst), 1);
        early.remove();
        late.remove();
        assert_eq!(installed.timers().fire_due(t0 + Duration::from_secs(9)), None);
        assert_eq!(c.0.load(SeqCst), 1, "a removed entry never fires");
    }

    #[test]
    fn a_postponed_entry_fires_at_its_new_deadline() {
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let (c, w) = counter();
        let key = register(t0 + Duration::from_secs(1), &w).unwrap();
        assert!(key.postpone(t0 + Duration::from_secs(3)));
        assert_eq!(
            installed.timers().fire_due(t0 + Duration::from_secs(2)),
            Some(t0 + Duration::from_secs(3))
        );
        assert_eq!(c.0.load(SeqCst), 0);
        installed.timers().fire_due(t0 + Duration::from_secs(3));
        assert_eq!(c.0.load(SeqCst), 1);
        assert!(
            !key.postpone(t0 + Duration::from_secs(4)),
            "a fired entry is filed anew"
        );
        key.remove();
    }

    #[test]
    fn stale_items_do_not_pile_up() {
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let (_c, w) = counter();
        let keep = register(t0 + Duration::from_secs(60), &w).unwrap();
        for _ in 0..10_000 {
            register(t0 + Duration::from_secs(30), &w).unwrap().remove();
        }
        let store = lock(&installed.timers().store);
        assert!(
            store.heap.len() <= 2 * store.live + 65,
            "heap of {} items",
            store.heap.len()
        );
        assert_eq!(store.entries.len(), 2, "freed entries are reused");
        drop(store);
        keep.remove();
    }

    #[test]
    fn no_store_outside_block_on() {
        let (_c, w) = counter();
        assert!(register(Instant::now(), &w).is_none());
        let installed = ParkedTimers::install();
        let key = register(Instant::now(), &w).unwrap();
        key.remove();
        installed.hand_over(None);
        assert!(register(Instant::now(), &w).is_none());
    }

    #[test]
    fn waiters_left_without_a_loop_are_woken() {
        let installed = ParkedTimers::install();
        let (c, w) = counter();
        let key = register(Instant::now() + Duration::from_secs(3600), &w).unwrap();
        installed.hand_over(None);
        assert_eq!(c.0.load(SeqCst), 1);
        assert!(!key.has_fired(), "an orphaned entry never fires early");
        assert!(matches!(key.poll(&w), Polled::Orphaned));
        key.remove();
    }
}
