//! A FIFO list of waiters with O(1) removal by key: the wait queue under each
//! primitive's lock.
//!
//! Nodes live in one `Vec`, linked by index; a freed slot joins a free list and is
//! reused, so a list that has reached its peak size allocates no more. A waiting
//! future keeps the [`WaiterKey`] of its node and removes it when dropped, which is
//! what makes every wait cancel safe. Invariant: `head`/`tail` and each node's
//! `prev`/`next` describe one chain through exactly the occupied slots, and `len`
//! counts them.

/// Where a waiter sits in its [`WaitList`]. Valid until the node is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WaiterKey(u32);

const NIL: u32 = u32::MAX;
/// The `prev`/`next` of a node taken out of the chain but still owned by its waiter.
const DETACHED: u32 = u32::MAX - 1;

#[derive(Debug)]
enum Slot<T> {
    Occupied { value: T, prev: u32, next: u32 },
    Free { next_free: u32 },
}

/// A FIFO queue of `T` with removal from anywhere by key.
#[derive(Debug)]
pub(crate) struct WaitList<T> {
    slots: Vec<Slot<T>>,
    head: u32,
    tail: u32,
    free: u32,
    len: usize,
    /// Occupied slots outside the chain (see [`WaitList::detach_front`]).
    detached: usize,
}

impl<T> Default for WaitList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> WaitList<T> {
    /// An empty list; allocates nothing until the first push.
    pub(crate) const fn new() -> Self {
        WaitList {
            slots: Vec::new(),
            head: NIL,
            tail: NIL,
            free: NIL,
            len: 0,
            detached: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `value` at the back (the last to be served).
    pub(crate) fn push_back(&mut self, value: T) -> WaiterKey {
        let node = Slot::Occupied {
            value,
            prev: self.tail,
            next: NIL,
        };
        let key = if self.free != NIL {
            let key = self.free;
            let Slot::Free { next_free } = self.slots[key as usize] else {
                unreachable!("the free list holds only free slots")
            };
            self.free = next_free;
            self.slots[key as usize] = node;
            key
        } else {
            let key = u32::try_from(self.slots.len()).expect("more than u32::MAX - 1 waiters");
            assert!(key < DETACHED, "more than u32::MAX - 2 waiters");
            self.slots.push(node);
            key
        };
        match self.tail {
            NIL => self.head = key,
            tail => self.set_next(tail, key),
        }
        self.tail = key;
        self.len += 1;
        WaiterKey(key)
    }

    #[cfg(test)]
    /// The value at the front (the first to be served), if any.
    pub(crate) fn front(&self) -> Option<&T> {
        self.get_index(self.head)
    }

    /// The value at the front, mutably.
    pub(crate) fn front_mut(&mut self) -> Option<&mut T> {
        self.get_index_mut(self.head)
    }

    /// The key of the front node.
    pub(crate) fn front_key(&self) -> Option<WaiterKey> {
        (self.head != NIL).then_some(WaiterKey(self.head))
    }

    /// The key of the node after `key` (front to back), if any: a walk that changes
    /// nodes in place goes `front_key`, `next_key`, ...
    ///
    /// # Panics
    ///
    /// If `key` was removed.
    pub(crate) fn next_key(&self, key: WaiterKey) -> Option<WaiterKey> {
        match self.slots.get(key.0 as usize) {
            Some(Slot::Occupied { next, .. }) => (*next != NIL).then_some(WaiterKey(*next)),
            _ => panic!("a waiter key outlived its node"),
        }
    }

    /// Removes and returns the front value.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        (self.head != NIL).then(|| self.remove(WaiterKey(self.head)))
    }

    #[cfg(test)]
    /// The value behind `key`.
    ///
    /// # Panics
    ///
    /// If `key` was removed (a bug in the primitive that owns the list).
    pub(crate) fn get(&self, key: WaiterKey) -> &T {
        self.get_index(key.0).expect("a waiter key outlived its node")
    }

    /// The value behind `key`, mutably.
    pub(crate) fn get_mut(&mut self, key: WaiterKey) -> &mut T {
        self.get_index_mut(key.0).expect("a waiter key outlived its node")
    }

    /// The value behind `key`, or `None` if that slot is free or out of range. The
    /// slot may have been reused by a later push: callers that need to tell their own
    /// node from a newer one keep an identity in the value.
    pub(crate) fn try_get(&self, key: WaiterKey) -> Option<&T> {
        self.get_index(key.0)
    }

    /// Like [`WaitList::try_get`], mutably.
    pub(crate) fn try_get_mut(&mut self, key: WaiterKey) -> Option<&mut T> {
        self.get_index_mut(key.0)
    }

    /// Every value, mutably, in slot order (not queue order).
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        self.slots.iter_mut().filter_map(|slot| match slot {
            Slot::Occupied { value, .. } => Some(value),
            Slot::Free { .. } => None,
        })
    }

    /// Unlinks the node behind `key` and returns its value.
    ///
    /// # Panics
    ///
    /// If `key` was removed already.
    pub(crate) fn remove(&mut self, key: WaiterKey) -> T {
        let slot = std::mem::replace(&mut self.slots[key.0 as usize], Slot::Free { next_free: self.free });
        let Slot::Occupied { value, prev, next } = slot else {
            panic!("a waiter key outlived its node")
        };
        self.free = key.0;
        if prev == DETACHED {
            self.detached -= 1;
        } else {
            self.unlink(prev, next);
        }
        if self.len == 0 && self.detached == 0 {
            // Nothing waits: give back the memory of a burst of waiters.
            if self.slots.capacity() > 64 {
                self.slots = Vec::new();
            } else {
                self.slots.clear();
            }
            self.free = NIL;
        }
        value
    }

    #[cfg(test)]
    /// Removes and returns the back value.
    pub(crate) fn pop_back(&mut self) -> Option<T> {
        (self.tail != NIL).then(|| self.remove(WaiterKey(self.tail)))
    }

    /// Takes the front node out of the chain but keeps its slot, so that its key stays
    /// valid: the waiter that owns the key later reads what was left in the value
    /// ([`get`](Self::get)/[`get_mut`](Self::get_mut)) and frees the slot with
    /// [`remove`](Self::remove). A detached node is no longer counted by `len`, served
    /// by `front`/`pop_front`, or visited by `iter`/`drain`.
    pub(crate) fn detach_front(&mut self) -> Option<(WaiterKey, &mut T)> {
        let key = self.head;
        (key != NIL).then(|| self.detach(key))
    }

    /// Like [`detach_front`](Self::detach_front), from the back.
    pub(crate) fn detach_back(&mut self) -> Option<(WaiterKey, &mut T)> {
        let key = self.tail;
        (key != NIL).then(|| self.detach(key))
    }

    #[cfg(test)]
    /// True while the node behind `key` is in the chain (not detached).
    pub(crate) fn is_linked(&self, key: WaiterKey) -> bool {
        matches!(self.slots.get(key.0 as usize), Some(Slot::Occupied { prev, .. }) if *prev != DETACHED)
    }

    fn detach(&mut self, key: u32) -> (WaiterKey, &mut T) {
        let Slot::Occupied { prev, next, .. } = &mut self.slots[key as usize] else {
            unreachable!("the chain holds only occupied slots")
        };
        let (p, n) = (std::mem::replace(prev, DETACHED), std::mem::replace(next, DETACHED));
        self.unlink(p, n);
        self.detached += 1;
        let Slot::Occupied { value, .. } = &mut self.slots[key as usize] else {
            unreachable!()
        };
        (WaiterKey(key), value)
    }

    /// Joins a node's neighbours around it; the node itself is left as it is.
    fn unlink(&mut self, prev: u32, next: u32) {
        match prev {
            NIL => self.head = next,
            prev => self.set_next(prev, next),
        }
        match next {
            NIL => self.tail = prev,
            next => self.set_prev(next, prev),
        }
        self.len -= 1;
    }

    /// Removes every value, front first.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.pop_front())
    }

    #[cfg(test)]
    /// The values front to back.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        let mut at = self.head;
        std::iter::from_fn(move || {
            let Slot::Occupied { value, next, .. } = self.slots.get(at as usize)? else {
                return None;
            };
            at = *next;
            Some(value)
        })
    }

    fn get_index(&self, i: u32) -> Option<&T> {
        match self.slots.get(i as usize)? {
            Slot::Occupied { value, .. } => Some(value),
            Slot::Free { .. } => None,
        }
    }

    fn get_index_mut(&mut self, i: u32) -> Option<&mut T> {
        match self.slots.get_mut(i as usize)? {
            Slot::Occupied { value, .. } => Some(value),
            Slot::Free { .. } => None,
        }
    }

    fn set_next(&mut self, at: u32, to: u32) {
        if let Slot::Occupied { next, .. } = &mut self.slots[at as usize] {
            *next = to;
        }
    }

    fn set_prev(&mut self, at: u32, to: u32) {
        if let Slot::Occupied { prev, .. } = &mut self.slots[at as usize] {
            *prev = to;
        }
    }
}

/// Where a registered waker sits in a [`WakerQueue`]: the node's key and the queue's
/// round when it was pushed. A round ends each time the queue is emptied by
/// [`WakerQueue::take_all`], so a stale entry is recognized without touching the list.
pub(crate) type WakerEntry = (WaiterKey, usize);

/// The wakers of tasks that all wait for the same event and are all woken when it
/// happens (a value sent, a channel closed): a [`WaitList`] plus a round counter.
///
/// A waiting future keeps an `Option<WakerEntry>`. While its round is the queue's
/// current round its node is still linked and the key is valid; once
/// [`take_all`](Self::take_all) has run the round has moved on and the entry only says
/// "you were woken". Lives under the primitive's lock.
#[derive(Debug, Default)]
pub(crate) struct WakerQueue {
    list: WaitList<std::task::Waker>,
    round: usize,
}

impl WakerQueue {
    /// An empty queue.
    pub(crate) const fn new() -> Self {
        WakerQueue {
            list: WaitList::new(),
            round: 0,
        }
    }

    /// The current round: it changes exactly when [`take_all`](Self::take_all) takes
    /// at least one waker.
    pub(crate) fn round(&self) -> usize {
        self.round
    }

    /// True if no waker is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// True if `entry` is still linked (no `take_all` since it was pushed).
    pub(crate) fn is_linked(&self, entry: &Option<WakerEntry>) -> bool {
        matches!(entry, Some((_, round)) if *round == self.round)
    }

    /// Registers `waker` for the next [`take_all`](Self::take_all). If `entry` is
    /// still linked its waker is replaced when it would wake another task; the
    /// replaced waker is returned so the caller drops it after releasing its lock.
    pub(crate) fn register(
        &mut self,
        entry: &mut Option<WakerEntry>,
        waker: &std::task::Waker,
    ) -> Option<std::task::Waker> {
        if let Some((key, round)) = *entry
            && round == self.round
        {
            let slot = self.list.get_mut(key);
            if slot.will_wake(waker) {
                return None;
            }
            return Some(std::mem::replace(slot, waker.clone()));
        }
        *entry = Some((self.list.push_back(waker.clone()), self.round));
        None
    }

    /// Unlinks `entry` if it is still linked and clears it; returns its waker, to be
    /// dropped after the lock is released.
    pub(crate) fn unregister(&mut self, entry: &mut Option<WakerEntry>) -> Option<std::task::Waker> {
        let linked = self.is_linked(entry);
        let (key, _) = entry.take()?;
        linked.then(|| self.list.remove(key))
    }

    /// Moves every waker into `batch` (front first) and starts a new round, which
    /// makes every entry handed out so far stale.
    pub(crate) fn take_all(&mut self, batch: &mut WakeBatch) {
        if self.list.is_empty() {
            return;
        }
        self.round = self.round.wrapping_add(1);
        for waker in self.list.drain() {
            batch.push(waker);
        }
    }
}

/// Wakers collected under a lock and woken after it is released. Holds up to
/// `INLINE` wakers without allocating.
pub(crate) struct WakeBatch {
    inline: [Option<std::task::Waker>; WakeBatch::INLINE],
    len: usize,
    spill: Vec<std::task::Waker>,
}

impl WakeBatch {
    const INLINE: usize = 32;

    /// An empty batch.
    pub(crate) fn new() -> Self {
        WakeBatch {
            inline: [const { None }; Self::INLINE],
            len: 0,
            spill: Vec::new(),
        }
    }

    /// Adds one waker.
    pub(crate) fn push(&mut self, waker: std::task::Waker) {
        if self.len < Self::INLINE {
            self.inline[self.len] = Some(waker);
            self.len += 1;
        } else {
            self.spill.push(waker);
        }
    }

    /// Wakes every waker, in the order they were pushed. Call with no lock held.
    pub(crate) fn wake_all(mut self) {
        for waker in self.inline[..self.len].iter_mut().filter_map(Option::take) {
            waker.wake();
        }
        for waker in std::mem::take(&mut self.spill) {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_with_removal_from_the_middle() {
        let mut l = WaitList::new();
        let a = l.push_back('a');
        let b = l.push_back('b');
        let c = l.push_back('c');
        assert_eq!(l.remove(b), 'b');
        assert_eq!(l.iter().copied().collect::<String>(), "ac");
        let d = l.push_back('d');
        assert_eq!(d, b, "a freed slot is reused");
        assert_eq!(l.remove(a), 'a');
        assert_eq!(l.front(), Some(&'c'));
        assert_eq!(l.pop_front(), Some('c'));
        assert_eq!(l.remove(d), 'd');
        assert!(l.is_empty());
        assert_eq!(l.pop_front(), None);
        let _ = c;
    }

    #[test]
    fn detached_nodes_keep_their_keys() {
        let mut l = WaitList::new();
        let a = l.push_back('a');
        let b = l.push_back('b');
        let c = l.push_back('c');
        let (k, v) = l.detach_front().unwrap();
        assert_eq!((k, *v), (a, 'a'));
        *v = 'A';
        let (k, _) = l.detach_back().unwrap();
        assert_eq!(k, c);
        assert!(!l.is_linked(a) && l.is_linked(b) && !l.is_linked(c));
        assert_eq!(l.len(), 1);
        assert_eq!(l.iter().copied().collect::<String>(), "b");
        assert_eq!(l.remove(b), 'b');
        assert!(l.is_empty());
        assert_eq!(*l.get(a), 'A', "slots of detached nodes survive the list emptying");
        assert_eq!(l.remove(a), 'A');
        let d = l.push_back('d');
        assert_eq!(l.remove(c), 'c');
        assert_eq!(l.pop_back(), Some('d'));
        let _ = d;
    }

    #[test]
    fn matches_a_model_under_random_operations() {
        let mut l = WaitList::new();
        let mut model: Vec<(WaiterKey, u32)> = Vec::new();
        let mut x = 0x2545_f491_u32;
        for i in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            match x % 3 {
                0 | 1 if model.len() < 100 => model.push((l.push_back(i), i)),
                1 if !model.is_empty() => {
                    let (k, v) = model.remove((x as usize / 3) % model.len());
                    assert_eq!(l.remove(k), v);
                }
                _ => assert_eq!(l.pop_front(), (!model.is_empty()).then(|| model.remove(0).1)),
            }
            assert_eq!(l.len(), model.len());
            assert!(l.iter().copied().eq(model.iter().map(|e| e.1)));
        }
    }
}
