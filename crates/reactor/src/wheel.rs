//! A hierarchical timing wheel: O(1) insert and remove, exact firing order.
//!
//! Netty files I/O timeouts in a hashed wheel and tokio its timers in a hierarchical
//! one, because a connection's timeouts are inserted, reset and cancelled far more often
//! than they fire. This wheel has [`LEVELS`] levels of [`SLOTS`] slots. A slot of level
//! `l` spans `64^l` ticks of [`TICK`] nanoseconds, so level 0 holds what is due within
//! 64 ms, level 1 within about 4 s, and level 5 within about 795 days. Each slot is a
//! doubly-linked list threaded through one slab, so an entry is filed and unfiled in
//! constant time, and a bit per slot says which lists are non-empty.
//!
//! Invariants:
//! - `elapsed` (a tick) never decreases. Every entry whose tick is below it sits in
//!   `due`; every other entry sits in the wheel at the level of the highest base-64
//!   digit in which its (clamped) tick differs from `elapsed`, so entries of a lower
//!   level are always earlier than entries of a higher one.
//! - When the earliest non-empty slot's time comes, its entries are filed again
//!   against the new `elapsed`: they drop to a lower level, or into `due`.
//! - `due` is a small binary heap ordered by (deadline, sequence number), so entries
//!   leave in exact deadline order, never before their deadline, and the wheel's
//!   granularity decides only when an entry reaches `due`, not when it fires.
//! - An entry's deadline may move later while it is filed ([`WheelItem::refresh`]):
//!   it is filed anew when its old slot comes, or when it leaves `due`, without waking
//!   anyone.
//!
//! Each loop files its timers here (`scheduled`); the scheduler files the timers of a
//! thread parked in `block_on` in one too. Deadlines are nanoseconds on the owner's own
//! timeline, and only the owner's thread (or its lock) touches a wheel.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use slab::Slab;

/// Nanoseconds per tick: the width of a level-0 slot.
pub const TICK: u64 = 1_000_000;
const LEVEL_BITS: u32 = 6;
/// Slots per level.
pub const SLOTS: usize = 1 << LEVEL_BITS;
/// Levels of the wheel.
pub const LEVELS: usize = 6;
/// Ticks spanned by the whole wheel; later ticks wait in the last slot of the top
/// level's current block and are filed again from there.
const RANGE: u64 = 1 << (LEVEL_BITS as usize * LEVELS);
/// The end of a slot's list. Links are 32 bits, so a wheel holds fewer than
/// `u32::MAX` entries (`link_of` enforces it).
const NIL: u32 = u32::MAX;

/// What the wheel stores: something with a deadline and a tie-breaking sequence number.
pub trait WheelItem {
    /// The deadline in nanoseconds on the loop's timeline.
    fn deadline(&self) -> u64;
    /// Orders items with equal deadlines (first submitted, first out).
    fn seq(&self) -> u64;
    /// Takes up a later deadline set since the item was filed. True if it moved.
    fn refresh(&mut self) -> bool;
}

fn tick_of(deadline: u64) -> u64 {
    deadline / TICK
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Wheel { level: u8, slot: u8 },
    Due,
}

struct Node<T> {
    item: T,
    prev: u32,
    next: u32,
    place: Place,
}

#[derive(Clone, Copy)]
struct Level {
    /// Bit `s` is set when slot `s` holds at least one entry.
    occupied: u64,
    heads: [u32; SLOTS],
}

impl Default for Level {
    fn default() -> Self {
        Level {
            occupied: 0,
            heads: [NIL; SLOTS],
        }
    }
}

/// A due entry: its order key inline, and its slab key.
type DueKey = Reverse<(u64, u64, usize)>;

/// The wheel. Keys returned by [`insert`](Self::insert) stay valid until the entry
/// leaves (popped, removed or drained); a slab key may then be reused.
pub struct TimerWheel<T> {
    nodes: Slab<Node<T>>,
    levels: Box<[Level; LEVELS]>,
    due: BinaryHeap<DueKey>,
    elapsed: u64,
}

impl<T> Default for TimerWheel<T> {
    fn default() -> Self {
        TimerWheel {
            nodes: Slab::new(),
            levels: Box::new([Level::default(); LEVELS]),
            due: BinaryHeap::new(),
            elapsed: 0,
        }
    }
}

impl<T: WheelItem> TimerWheel<T> {
    /// Entries held, wherever they are.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True if no entry is held.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The entry under `key`, if any.
    pub fn get(&self, key: usize) -> Option<&T> {
        self.nodes.get(key).map(|n| &n.item)
    }

    /// The entry under `key`, to change anything but its deadline (see
    /// [`WheelItem::refresh`] for that).
    pub fn get_mut(&mut self, key: usize) -> Option<&mut T> {
        self.nodes.get_mut(key).map(|n| &mut n.item)
    }

    /// Files `item` and returns its key.
    pub fn insert(&mut self, item: T) -> usize {
        let key = self.nodes.insert(Node {
            item,
            prev: NIL,
            next: NIL,
            place: Place::Due,
        });
        self.file(key);
        key
    }

    /// Unfiles and returns the entry under `key`.
    pub fn remove(&mut self, key: usize) -> Option<T> {
        let place = self.nodes.get(key)?.place;
        match place {
            Place::Wheel { level, slot } => self.unlink(key, level as usize, slot as usize),
            // Its heap slot goes stale; `trim_due` drops stale slots from the top, so the
            // top is always live and `peek_deadline` exact.
            Place::Due => {}
        }
        let node = self.nodes.remove(key);
        self.trim_due();
        Some(node.item)
    }

    /// Moves the entry under `key` to the deadline `set` gives it, earlier or later,
    /// keeping its key: `set` changes the item's deadline (and nothing of its order
    /// otherwise). False if there is no such entry.
    ///
    /// An entry in a wheel slot that moves later stays in its slot: a slot holds
    /// entries due at or after its start, and when it expires each of its entries is
    /// filed again for the deadline it has then. So pushing back an idle timeout
    /// touches only its own node (no neighbour in the slot's list), however often it is
    /// done. Any other move is filed at once.
    pub fn reschedule(&mut self, key: usize, set: impl FnOnce(&mut T)) -> bool {
        let Some(node) = self.nodes.get_mut(key) else {
            return false;
        };
        let (place, before) = (node.place, node.item.deadline());
        set(&mut node.item);
        match place {
            Place::Wheel { .. } if node.item.deadline() >= before => return true,
            Place::Wheel { level, slot } => self.unlink(key, level as usize, slot as usize),
            // A heap slot whose deadline differs from its item's is stale; `trim_due`
            // drops stale slots at the top, and `file` pushes one for the new deadline.
            Place::Due => {}
        }
        self.file(key);
        self.trim_due();
        true
    }

    /// The earliest time at which [`pop_due`](Self::pop_due) may return something: the
    /// exact deadline of the first due entry, or else the start of the earliest
    /// non-empty slot (a lower bound of its entries' deadlines).
    pub fn peek_deadline(&self) -> Option<u64> {
        if self.nodes.is_empty() {
            return None;
        }
        if let Some(Reverse((deadline, _, _))) = self.due.peek() {
            return Some(*deadline);
        }
        self.next_expiration()
            .map(|(_, _, start)| start.saturating_mul(TICK).max(1))
    }

    /// Removes and returns the earliest entry whose deadline is at or before `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<T> {
        loop {
            if let Some(&Reverse((deadline, _, key))) = self.due.peek() {
                if deadline > now {
                    return None;
                }
                self.due.pop();
                if self.nodes[key].item.refresh() {
                    self.file(key);
                    self.trim_due();
                    continue;
                }
                let node = self.nodes.remove(key);
                self.trim_due();
                return Some(node.item);
            }
            if self.nodes.is_empty() {
                return None;
            }
            let now_tick = tick_of(now);
            match self.next_expiration() {
                Some((level, slot, start)) if start <= now_tick => self.expire(level, slot, start),
                // Nothing is filed for a tick up to `now`: every filed tick is later.
                _ => {
                    self.elapsed = self.elapsed.max(now_tick);
                    return None;
                }
            }
        }
    }

    /// Removes every entry, in no particular order.
    pub fn drain(&mut self) -> Vec<T> {
        self.due.clear();
        *self.levels = [Level::default(); LEVELS];
        self.nodes.drain().map(|n| n.item).collect()
    }

    /// Puts the entry under `key` where its deadline belongs: `due` if its tick has
    /// passed, else its slot.
    fn file(&mut self, key: usize) {
        let node = &mut self.nodes[key];
        let (deadline, seq) = (node.item.deadline(), node.item.seq());
        let tick = tick_of(deadline);
        if tick < self.elapsed {
            node.place = Place::Due;
            self.due.push(Reverse((deadline, seq, key)));
            return;
        }
        // Beyond the wheel's span: wait at the end of the top level's current block.
        let placed = tick.min(self.elapsed | (RANGE - 1));
        let level = level_for(self.elapsed, placed);
        let slot = ((placed >> (level as u32 * LEVEL_BITS)) as usize) & (SLOTS - 1);
        let head = self.levels[level].heads[slot];
        node.place = Place::Wheel {
            level: level as u8,
            slot: slot as u8,
        };
        node.prev = NIL;
        node.next = head;
        let link = link_of(key);
        if head != NIL {
            self.nodes[head as usize].prev = link;
        }
        let lvl = &mut self.levels[level];
        lvl.heads[slot] = link;
        lvl.occupied |= 1 << slot;
    }

    fn unlink(&mut self, key: usize, level: usize, slot: usize) {
        let (prev, next) = {
            let n = &self.nodes[key];
            (n.prev, n.next)
        };
        if prev == NIL {
            self.levels[level].heads[slot] = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        }
        if self.levels[level].heads[slot] == NIL {
            self.levels[level].occupied &= !(1 << slot);
        }
    }

    /// Drops stale slots (entries removed while due) from the top of `due`.
    fn trim_due(&mut self) {
        while let Some(&Reverse((deadline, seq, key))) = self.due.peek() {
            let live = self
                .nodes
                .get(key)
                .is_some_and(|n| n.place == Place::Due && n.item.seq() == seq && n.item.deadline() == deadline);
            if live {
                return;
            }
            self.due.pop();
        }
    }

    /// The earliest non-empty slot: (level, slot, first tick it covers), the higher
    /// level first among slots that start at the same tick.
    ///
    /// Every level is looked at: a lower level does not always hold the earlier ticks.
    /// Taking a level-0 slot moves `elapsed` one tick past it, into the next block of
    /// a higher level when it was the block's last tick; the slot of that higher level
    /// covering the new block still holds the entries filed for it before, while new
    /// entries for the same block go to level 0. The higher slot, which starts first,
    /// must be expired (its entries filed down) before any of them.
    fn next_expiration(&self) -> Option<(usize, usize, u64)> {
        let mut earliest: Option<(usize, usize, u64)> = None;
        for (level, lvl) in self.levels.iter().enumerate() {
            if lvl.occupied == 0 {
                continue;
            }
            let shift = level as u32 * LEVEL_BITS;
            let pos = ((self.elapsed >> shift) as usize) & (SLOTS - 1);
            // Slots before `pos` are empty at this level (their ticks have passed: the
            // earliest slot of all is always expired first), so the first set bit at or
            // after `pos` is this level's earliest slot.
            let slot = pos + (lvl.occupied >> pos).trailing_zeros() as usize;
            debug_assert!(slot < SLOTS, "an occupied slot behind the wheel's position");
            let block = !((1u64 << (shift + LEVEL_BITS)) - 1);
            let start = (self.elapsed & block) + ((slot as u64) << shift);
            if earliest.is_none_or(|(_, _, first)| start <= first) {
                earliest = Some((level, slot, start));
            }
        }
        earliest
    }

    /// The time of slot (`level`, `slot`), starting at tick `start`, has come: advance
    /// `elapsed` to it and file its entries again.
    fn expire(&mut self, level: usize, slot: usize, start: u64) {
        // A level-0 slot is one tick: once it is taken, that tick has passed.
        let reached = if level == 0 { start + 1 } else { start };
        self.elapsed = self.elapsed.max(reached);
        let mut key = std::mem::replace(&mut self.levels[level].heads[slot], NIL);
        self.levels[level].occupied &= !(1 << slot);
        while key != NIL {
            let next = self.nodes[key as usize].next;
            self.nodes[key as usize].item.refresh();
            self.file(key as usize);
            key = next;
        }
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        let mut counted = 0;
        for (level, lvl) in self.levels.iter().enumerate() {
            for slot in 0..SLOTS {
                let mut key = lvl.heads[slot];
                assert_eq!(
                    key != NIL,
                    lvl.occupied & (1 << slot) != 0,
                    "occupied bit of {level}/{slot}"
                );
                let mut prev = NIL;
                while key != NIL {
                    let n = &self.nodes[key as usize];
                    assert_eq!(n.prev, prev);
                    assert_eq!(
                        n.place,
                        Place::Wheel {
                            level: level as u8,
                            slot: slot as u8
                        }
                    );
                    assert!(tick_of(n.item.deadline()) >= self.elapsed, "a passed tick in the wheel");
                    counted += 1;
                    prev = key;
                    key = n.next;
                }
            }
        }
        let due = self.nodes.iter().filter(|(_, n)| n.place == Place::Due).count();
        assert_eq!(counted + due, self.nodes.len());
    }
}

/// The bytes one entry holding a `T` takes in the wheel's slab, which stores
/// `enum Entry<T> { Vacant(usize), Occupied(T) }` (mirrored here, as it is private).
#[cfg(test)]
pub(crate) fn node_size<T>() -> usize {
    #[allow(dead_code)]
    enum SlabEntry<N> {
        Vacant(usize),
        Occupied(N),
    }
    std::mem::size_of::<SlabEntry<Node<T>>>()
}

/// A slab key as a list link.
fn link_of(key: usize) -> u32 {
    u32::try_from(key)
        .ok()
        .filter(|&k| k != NIL)
        .expect("a timing wheel holds fewer than 4 billion entries")
}

/// The level at which a tick `placed` (not before `elapsed`, within the wheel's span of
/// `elapsed`'s top-level block) is filed: the highest base-64 digit in which they differ.
fn level_for(elapsed: u64, placed: u64) -> usize {
    // The low digit's bits are set so that equal ticks land on level 0.
    let differ = (elapsed ^ placed) | (SLOTS as u64 - 1);
    let top_bit = 63 - differ.leading_zeros();
    (top_bit / LEVEL_BITS) as usize
}

#[cfg(test)]
mod tests;
