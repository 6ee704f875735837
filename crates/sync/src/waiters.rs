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
            assert!(key != NIL, "more than u32::MAX - 1 waiters");
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

    /// Removes and returns the front value.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        (self.head != NIL).then(|| self.remove(WaiterKey(self.head)))
    }

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
        match prev {
            NIL => self.head = next,
            prev => self.set_next(prev, next),
        }
        match next {
            NIL => self.tail = prev,
            next => self.set_prev(next, prev),
        }
        self.len -= 1;
        if self.len == 0 {
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

    /// Removes every value, front first.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.pop_front())
    }

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
