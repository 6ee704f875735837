//! The timers of a thread parked in a multi-thread runtime's `block_on`.
//!
//! `#[main]`'s own code runs in the body of `block_on`, on a thread that drives no
//! loop. A `Sleep` polled there would otherwise cross to a loop through its inbox (three
//! allocations and two inbox items per sleep, and the loop woken for each). Instead,
//! while `block_on` parks its thread, the thread keeps a timer store of its own:
//! a sleep polled on that thread files an entry here under an uncontended lock, and
//! `block_on` parks only until the earliest deadline, then fires what is due.
//!
//! Invariants:
//! - The waiting entries are filed in a timing wheel (the loops' own, `netloop_reactor::
//!   wheel`): filing, moving and removing one is constant time, however many wait.
//! - Only the thread whose `block_on` installed the store files new entries in it (it
//!   is found through a thread-local), so the deadline it parks until can only be
//!   changed by itself: an entry's deadline is otherwise only ever moved later
//!   (`postpone`), which leaves the entry where it waits until its old slot comes.
//! - An entry leaves the wheel when it fires, or when its `Sleep` removes it (a cancel,
//!   a drop). A key names its entry by wheel key and sequence number, so an entry that
//!   is gone, or whose key was reused, has fired: its `Sleep` never removed it.
//! - A waker is never dropped under the store's lock: dropping one may run any code,
//!   including a `Sleep`'s drop, which takes the lock.
//! - When `block_on` returns with entries still waiting, the store is handed to a loop
//!   of the runtime: one scheduled wake at the earliest deadline fires what is due and
//!   schedules itself again, so a sleep moved out of `block_on` still fires.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

use netloop_reactor::EventLoopHandle;
use netloop_reactor::wheel::{TimerWheel, WheelItem};

use crate::sync::lock;

thread_local! {
    /// The store of the `block_on` parking this thread, if any.
    static CURRENT: RefCell<Option<Arc<ParkedTimers>>> = const { RefCell::new(None) };
    /// The wheel of this thread's last `block_on` that returned with nothing waiting,
    /// with the origin of its timeline: the next `block_on` files into it, as a loop
    /// keeps its own wheel (and its capacity) from one iteration to the next.
    static SPARE: RefCell<Option<(Instant, TimerWheel<Entry>)>> = const { RefCell::new(None) };
}

/// One thread's timers while it is parked in `block_on` (see the module's invariants).
pub(crate) struct ParkedTimers {
    store: Mutex<Store>,
    /// The origin of the wheel's timeline: a deadline is filed as the nanoseconds
    /// after it (an earlier one as 1, due at once).
    base: Instant,
}

#[derive(Default)]
struct Store {
    /// The waiting entries; made at the first registration, since most `block_on`s
    /// never poll a sleep in their own body.
    wheel: Option<TimerWheel<Entry>>,
    /// The sequence number of the last entry filed.
    last_seq: u64,
    /// The loop that fires the entries once `block_on` has returned.
    handed_to: Option<EventLoopHandle>,
    /// No loop could take the entries over: each sleep files its timer anew.
    orphaned: bool,
    /// The sequence numbers of the entries still waiting when the store was orphaned,
    /// sorted: any other entry that left the wheel had fired.
    orphans: Vec<u64>,
}

/// A waiting timer: its deadline on the store's timeline, and the waker it wakes.
struct Entry {
    deadline: u64,
    seq: u64,
    waker: Waker,
}

impl WheelItem for Entry {
    fn deadline(&self) -> u64 {
        self.deadline
    }

    fn seq(&self) -> u64 {
        self.seq
    }

    /// A postponed entry's deadline is moved in the wheel itself (`reschedule`).
    fn refresh(&mut self) -> bool {
        false
    }
}

/// A sleep's entry in a [`ParkedTimers`] store.
pub(crate) struct ParkedKey {
    timers: Arc<ParkedTimers>,
    key: u32,
    seq: u64,
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
        let (base, wheel) = match SPARE.try_with(|spare| spare.borrow_mut().take()) {
            Ok(Some((base, wheel))) => (base, Some(wheel)),
            _ => (Instant::now(), None),
        };
        let timers = Arc::new(ParkedTimers {
            store: Mutex::new(Store {
                wheel,
                ..Store::default()
            }),
            base,
        });
        let previous = CURRENT.with(|c| c.replace(Some(timers.clone())));
        Installed { timers, previous }
    }

    /// `at` on the wheel's timeline.
    fn nanos(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.base);
        since
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(since.subsec_nanos()))
            .max(1)
    }

    /// A deadline of the wheel's timeline as an `Instant`.
    fn instant(&self, nanos: u64) -> Instant {
        self.base + Duration::from_nanos(nanos)
    }

    fn register(self: &Arc<Self>, deadline: Instant, waker: &Waker) -> ParkedKey {
        let deadline = self.nanos(deadline);
        // Cloned before the lock is taken: a clone may run any code.
        let waker = waker.clone();
        let mut store = lock(&self.store);
        store.last_seq += 1;
        let seq = store.last_seq;
        let key = store
            .wheel
            .get_or_insert_with(TimerWheel::default)
            .insert(Entry { deadline, seq, waker });
        ParkedKey {
            timers: self.clone(),
            key: u32::try_from(key).expect("a timing wheel's keys are 32-bit"),
            seq,
        }
    }

    /// Fires every entry due by `now`; returns the earliest time at which another
    /// may be due (a lower bound: waking then and finding nothing due is harmless).
    pub(crate) fn fire_due(&self, now: Instant) -> Option<Instant> {
        let now = self.nanos(now);
        let mut due = Vec::new();
        let mut store = lock(&self.store);
        let wheel = store.wheel.as_mut()?;
        while let Some(entry) = wheel.pop_due(now) {
            due.push(entry.waker);
        }
        let next = wheel.peek_deadline();
        drop(store);
        for waker in due {
            waker.wake();
        }
        next.map(|n| self.instant(n))
    }
}

impl Store {
    /// True if `key`'s entry was waiting when the store was orphaned.
    fn orphaned_entry(&self, key: &ParkedKey) -> bool {
        self.orphaned && self.orphans.binary_search(&key.seq).is_ok()
    }

    /// The waiting entry `key` names, if it has not fired.
    fn entry(&mut self, key: &ParkedKey) -> Option<&mut Entry> {
        self.wheel
            .as_mut()?
            .get_mut(key.key as usize)
            .filter(|e| e.seq == key.seq)
    }
}

impl ParkedKey {
    /// Whether the entry has fired; if not, `waker` is the one it will wake.
    pub(crate) fn poll(&self, waker: &Waker) -> Polled {
        let mut store = lock(&self.timers.store);
        if store.orphaned_entry(self) {
            return Polled::Orphaned;
        }
        // Handed to a loop that ended before firing it: it never will.
        let ended = store.handed_to.as_ref().is_some_and(EventLoopHandle::is_terminated);
        match store.entry(self) {
            Some(_) if ended => return Polled::Orphaned,
            Some(entry) if entry.waker.will_wake(waker) => return Polled::Waiting,
            Some(_) => {}
            None => return Polled::Fired,
        }
        drop(store);
        // Cloned outside the lock (a clone may run any code); the entry may fire meanwhile.
        let mut new = Some(waker.clone());
        let mut store = lock(&self.timers.store);
        let polled = match store.entry(self) {
            Some(entry) => {
                new = Some(std::mem::replace(&mut entry.waker, new.take().unwrap()));
                Polled::Waiting
            }
            None => Polled::Fired,
        };
        drop(store);
        drop(new);
        polled
    }

    /// True once the entry has fired (false for an orphaned one, which never fires).
    pub(crate) fn has_fired(&self) -> bool {
        let mut store = lock(&self.timers.store);
        !store.orphaned_entry(self) && store.entry(self).is_none()
    }

    /// Moves a waiting entry's deadline later; false if it has fired (file anew).
    pub(crate) fn postpone(&self, deadline: Instant) -> bool {
        let deadline = self.timers.nanos(deadline);
        let mut store = lock(&self.timers.store);
        if store.orphaned || store.entry(self).is_none() {
            return false;
        }
        store
            .wheel
            .as_mut()
            .is_some_and(|wheel| wheel.reschedule(self.key as usize, |e| e.deadline = e.deadline.max(deadline)))
    }

    /// Takes the entry out of the store (the sleep completed or was cancelled).
    pub(crate) fn remove(self) {
        let mut store = lock(&self.timers.store);
        let removed = match store.entry(&self) {
            Some(_) => store.wheel.as_mut().and_then(|wheel| wheel.remove(self.key as usize)),
            None => None,
        };
        drop(store);
        drop(removed);
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
            let Some(next) = store.wheel.as_ref().and_then(TimerWheel::peek_deadline) else {
                // Nothing waits, and only this thread could file more: keep the wheel.
                if let Some(wheel) = store.wheel.take() {
                    let _ = SPARE.try_with(|spare| *spare.borrow_mut() = Some((timers.base, wheel)));
                }
                return;
            };
            store.handed_to = event_loop;
            next
        };
        let at = timers.instant(next);
        HandedOver(timers).schedule(at);
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
            let entries = store.wheel.as_mut().map(TimerWheel::drain).unwrap_or_default();
            let mut orphans: Vec<u64> = entries.iter().map(|e| e.seq).collect();
            orphans.sort_unstable();
            store.orphans = orphans;
            drop(store);
            entries.into_iter().for_each(|e| e.waker.wake());
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

    /// Fires `timers` at `now`, and checks that what it says comes next is no later
    /// than `next` (a lower bound: waking early is allowed, late is not).
    fn fire_at(timers: &ParkedTimers, now: Instant, next: Option<Instant>) {
        let said = timers.fire_due(now);
        match next {
            Some(next) => assert!(said.is_some_and(|s| s <= next), "next {said:?}, want at most {next:?}"),
            None => assert_eq!(said, None),
        }
    }

    #[test]
    fn fires_in_deadline_order_and_only_when_due() {
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let (c, w) = counter();
        let late = register(t0 + Duration::from_secs(2), &w).unwrap();
        let early = register(t0 + Duration::from_secs(1), &w).unwrap();
        fire_at(installed.timers(), t0, Some(t0 + Duration::from_secs(1)));
        assert_eq!(c.0.load(SeqCst), 0);
        fire_at(
            installed.timers(),
            t0 + Duration::from_secs(1),
            Some(t0 + Duration::from_secs(2)),
        );
        assert!(early.has_fired() && !late.has_fired());
        assert_eq!(c.0.load(SeqCst), 1);
        early.remove();
        late.remove();
        fire_at(installed.timers(), t0 + Duration::from_secs(9), None);
        assert_eq!(c.0.load(SeqCst), 1, "a removed entry never fires");
    }

    #[test]
    fn many_spread_deadlines_fire_in_order_never_early() {
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let counters: Vec<_> = (0..2_000u64).map(|_| counter()).collect();
        // Deadlines over 1,000 distinct milliseconds to 1,000 seconds, interleaved.
        let deadline =
            |i: u64| t0 + Duration::from_millis(1 + (i * 7_919) % 1_000) * if i.is_multiple_of(2) { 1 } else { 1_000 };
        let keys: Vec<_> = (0..2_000u64)
            .map(|i| register(deadline(i), &counters[i as usize].1).unwrap())
            .collect();
        let mut now = t0;
        let mut steps = 0;
        while let Some(next) = installed.timers().fire_due(now) {
            for (i, (c, _)) in counters.iter().enumerate() {
                let fired = c.0.load(SeqCst);
                assert!(fired <= 1);
                assert_eq!(fired == 1, deadline(i as u64) <= now, "timer {i} at {:?}", now - t0);
            }
            assert!(next > now || steps == 0, "the next wake moves forward");
            now = next.max(now + Duration::from_micros(1));
            steps += 1;
            assert!(steps < 100_000, "too many wakes");
        }
        assert!(keys.iter().all(ParkedKey::has_fired));
        keys.into_iter().for_each(ParkedKey::remove);
    }

    #[test]
    fn a_postponed_entry_fires_at_its_new_deadline() {
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let (c, w) = counter();
        let key = register(t0 + Duration::from_secs(1), &w).unwrap();
        assert!(key.postpone(t0 + Duration::from_secs(3)));
        fire_at(
            installed.timers(),
            t0 + Duration::from_secs(2),
            Some(t0 + Duration::from_secs(3)),
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
    fn removed_entries_leave_the_store() {
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let (_c, w) = counter();
        let keep = register(t0 + Duration::from_secs(60), &w).unwrap();
        for _ in 0..10_000 {
            register(t0 + Duration::from_secs(30), &w).unwrap().remove();
        }
        let store = lock(&installed.timers().store);
        assert_eq!(store.wheel.as_ref().map(TimerWheel::len), Some(1));
        drop(store);
        keep.remove();
    }

    /// A waker whose last drop removes another entry of the same store.
    struct RemoveOnDrop(Mutex<Option<ParkedKey>>);
    impl Wake for RemoveOnDrop {
        fn wake(self: Arc<Self>) {}
    }
    impl Drop for RemoveOnDrop {
        fn drop(&mut self) {
            if let Some(key) = self.0.lock().unwrap().take() {
                key.remove();
            }
        }
    }

    /// Runs `body` on a thread of its own and fails if it has not finished in 10 s
    /// (a waker dropped under the store's lock deadlocks).
    fn within_10s(body: fn()) {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            body();
            let _ = done.send(());
        });
        finished
            .recv_timeout(Duration::from_secs(10))
            .expect("finished within 10 s (a deadlock on the store's lock?)");
    }

    #[test]
    fn a_waker_is_dropped_outside_the_lock() {
        within_10s(waker_dropped_outside_the_lock);
    }

    fn waker_dropped_outside_the_lock() {
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let (_c, w) = counter();
        let other = register(t0 + Duration::from_secs(5), &w).unwrap();
        let hook = Waker::from(Arc::new(RemoveOnDrop(Mutex::new(Some(other)))));
        let key = register(t0 + Duration::from_secs(5), &hook).unwrap();
        drop(hook);
        // The entry's waker is the hook's last reference: replacing it drops the hook,
        // which takes the store's lock again.
        assert!(matches!(key.poll(&w), Polled::Waiting));
        let store = lock(&installed.timers().store);
        assert_eq!(
            store.wheel.as_ref().map(TimerWheel::len),
            Some(1),
            "the hook removed the other entry"
        );
        drop(store);
        let hook = Waker::from(Arc::new(RemoveOnDrop(Mutex::new(Some(key)))));
        let last = register(t0 + Duration::from_secs(5), &hook).unwrap();
        drop(hook);
        last.remove();
        let store = lock(&installed.timers().store);
        assert_eq!(store.wheel.as_ref().map(TimerWheel::len), Some(0));
    }

    #[test]
    fn the_next_block_on_files_into_the_last_ones_wheel() {
        let first = ParkedTimers::install();
        let (c, w) = counter();
        let t0 = Instant::now();
        register(t0 + Duration::from_secs(1), &w).unwrap().remove();
        let base = first.timers().base;
        first.hand_over(None);
        let second = ParkedTimers::install();
        assert_eq!(second.timers().base, base, "the same timeline");
        assert!(lock(&second.timers().store).wheel.is_some(), "the wheel is kept");
        let key = register(t0 + Duration::from_secs(2), &w).unwrap();
        fire_at(
            second.timers(),
            t0 + Duration::from_secs(1),
            Some(t0 + Duration::from_secs(2)),
        );
        assert!(!key.has_fired(), "never early");
        fire_at(second.timers(), t0 + Duration::from_secs(2), None);
        assert!(key.has_fired());
        assert_eq!(c.0.load(SeqCst), 1);
        key.remove();
        second.hand_over(None);
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

    /// An entry that fired before its store was orphaned has fired (its sleep's
    /// `is_elapsed` stays true); only the entries still waiting are orphaned.
    #[test]
    fn an_entry_fired_before_the_orphaning_stays_fired() {
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let (c, w) = counter();
        let fired = register(t0, &w).unwrap();
        let waiting = register(t0 + Duration::from_secs(3600), &w).unwrap();
        installed.timers().fire_due(t0);
        assert_eq!(c.0.load(SeqCst), 1);
        assert!(fired.has_fired());
        installed.hand_over(None);
        assert!(!waiting.has_fired(), "the orphaned one never fired");
        assert!(fired.has_fired(), "the one that fired before the orphaning");
    }

    /// A waker's clone may run any code, including a look at the same store: `poll`
    /// clones the new waker outside the store's lock.
    #[test]
    fn a_waker_is_cloned_outside_the_lock() {
        within_10s(waker_cloned_outside_the_lock);
    }

    fn waker_cloned_outside_the_lock() {
        use std::task::{RawWaker, RawWakerVTable};
        thread_local! {
            static PROBE: RefCell<Option<ParkedKey>> = const { RefCell::new(None) };
        }
        fn clone(_: *const ()) -> RawWaker {
            // A clone that looks at a timer of the same store (a tracing waker, say).
            PROBE.with(|p| p.borrow().as_ref().map(ParkedKey::has_fired));
            RawWaker::new(std::ptr::null(), &VTABLE)
        }
        fn noop(_: *const ()) {}
        static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
        let installed = ParkedTimers::install();
        let t0 = Instant::now();
        let (_c, w) = counter();
        PROBE.with(|p| *p.borrow_mut() = register(t0 + Duration::from_secs(5), &w));
        let key = register(t0 + Duration::from_secs(5), &w).unwrap();
        // SAFETY: the vtable's functions ignore the data pointer.
        let probing = unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) };
        assert!(matches!(key.poll(&probing), Polled::Waiting));
        key.remove();
        PROBE.with(|p| p.borrow_mut().take().map(ParkedKey::remove));
        installed.hand_over(None);
    }

    /// Random registrations, removals, postponements and fires over several
    /// `block_on`s of one thread (the spare wheel and its timeline reused, its
    /// `elapsed` left years behind), against a model: never early, never lost, and a
    /// key never names another entry.
    #[test]
    fn random_ops_across_spare_reuse_match_a_model() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut rnd = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let t0 = Instant::now();
        let mut now = t0;
        for round in 0..200 {
            // Some rounds start years after the last: the spare's `elapsed` is stale.
            if round % 50 == 9 {
                now += Duration::from_secs(86_400 * (365 + rnd(800)));
            }
            let installed = ParkedTimers::install();
            let mut live: Vec<(ParkedKey, Instant, Arc<Count>)> = Vec::new();
            for _ in 0..400 {
                match rnd(10) {
                    0..=3 => {
                        let span = [2u64, 70, 5_000, 300_000, 90_000_000_000][rnd(5) as usize];
                        let at = now + Duration::from_millis(rnd(span)) - Duration::from_millis(1).min(now - t0);
                        let (c, w) = counter();
                        live.push((register(at, &w).unwrap(), at, c));
                    }
                    4 if !live.is_empty() => {
                        let (key, _, _) = live.swap_remove(rnd(live.len() as u64) as usize);
                        key.remove();
                    }
                    5 if !live.is_empty() => {
                        let i = rnd(live.len() as u64) as usize;
                        let later = live[i].1 + Duration::from_millis(rnd(100_000));
                        let fired = live[i].2.0.load(SeqCst) == 1;
                        assert_eq!(live[i].0.postpone(later), !fired, "postpone of a fired entry");
                        if !fired {
                            live[i].1 = later;
                        }
                    }
                    _ => {
                        let step = [0u64, 1, 3, 64, 5_000, 4_000_000][rnd(6) as usize];
                        now += Duration::from_micros(rnd(step * 1000 + 1));
                        let mut next = installed.timers().fire_due(now);
                        // Follow the lower bounds it gives up to `now` (a parked thread
                        // woken late does the same with one call).
                        while let Some(n) = next.filter(|n| *n <= now) {
                            let again = installed.timers().fire_due(now);
                            assert!(again.is_none_or(|a| a > now || a > n), "no progress at {n:?}");
                            next = again;
                        }
                        for (key, at, c) in &live {
                            let fired = c.0.load(SeqCst);
                            assert!(fired <= 1);
                            assert_eq!(fired == 1, *at <= now, "deadline {:?} at {:?}", *at - t0, now - t0);
                            assert_eq!(key.has_fired(), fired == 1);
                        }
                        if let Some(n) = next {
                            let first = live.iter().filter(|(_, _, c)| c.0.load(SeqCst) == 0).map(|e| e.1).min();
                            assert!(first.is_some_and(|f| n <= f), "next {n:?} after the first deadline");
                        }
                    }
                }
            }
            // Half the rounds end with everything removed: the wheel becomes the spare.
            if round % 2 == 0 {
                live.drain(..).for_each(|(k, _, _)| k.remove());
            }
            installed.hand_over(None);
            for (key, at, c) in live {
                let fired = c.0.load(SeqCst) == 1;
                assert!(fired, "an orphaned entry is woken");
                let _ = at;
                key.remove();
            }
        }
    }
}
