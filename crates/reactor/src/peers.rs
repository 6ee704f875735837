//! The loops of one group as each of them sees the others: which are parked with
//! nothing to do, and which are blocked in place, so that a busy loop can hand tasks
//! that have not started yet to an idle one (`share_work`).
//!
//! Only the first [`MAX_PEERS`] loops of a group take part (one bit each in a word);
//! the others keep every task they are given, as every loop did before.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Relaxed};
use std::sync::{Arc, Weak};

/// Loops of a group that can give and take work.
pub(crate) const MAX_PEERS: usize = 64;

/// One group's loops; `T` is a loop's shared half. Members are held weakly: each loop
/// holds this, so strong references would keep every loop alive forever.
pub(crate) struct Peers<T> {
    /// Bit i: loop i is parked (or not started yet) and takes work gladly. A loop
    /// sets its bit before it blocks in `select` and clears it as it wakes; a giver
    /// clears it as it picks the loop, so two givers do not both pick one sleeper.
    idle: AtomicU64,
    /// Bit i: loop i's thread is inside `block_in_place` and runs nothing until the
    /// closure returns: never a taker, and new work avoids it.
    blocked: AtomicU64,
    members: Box<[Weak<T>]>,
}

impl<T> Peers<T> {
    /// A group of `members`, all idle (none has started).
    pub(crate) fn new(members: Box<[Weak<T>]>) -> Peers<T> {
        let n = members.len().min(MAX_PEERS);
        let all = if n == MAX_PEERS { u64::MAX } else { (1u64 << n) - 1 };
        Peers {
            idle: AtomicU64::new(all),
            blocked: AtomicU64::new(0),
            members,
        }
    }

    fn bit(index: usize) -> u64 {
        if index < MAX_PEERS { 1 << index } else { 0 }
    }

    /// Loop `index` is about to block (`true`) or has woken (`false`).
    pub(crate) fn set_idle(&self, index: usize, idle: bool) {
        let bit = Self::bit(index);
        if idle {
            self.idle.fetch_or(bit, AcqRel);
        } else if self.idle.load(Relaxed) & bit != 0 {
            self.idle.fetch_and(!bit, AcqRel);
        }
    }

    /// Loop `index` enters (`true`) or leaves (`false`) `block_in_place`.
    pub(crate) fn set_blocked(&self, index: usize, blocked: bool) {
        let bit = Self::bit(index);
        if blocked {
            self.blocked.fetch_or(bit, AcqRel);
        } else {
            self.blocked.fetch_and(!bit, AcqRel);
        }
    }

    /// Whether loop `index` is blocked in place.
    pub(crate) fn is_blocked(&self, index: usize) -> bool {
        self.blocked.load(Relaxed) & Self::bit(index) != 0
    }

    /// True if every loop of the group is blocked in place.
    pub(crate) fn all_blocked(&self) -> bool {
        let n = self.len();
        let all = if n == MAX_PEERS { u64::MAX } else { (1u64 << n) - 1 };
        self.blocked.load(Relaxed) & all == all
    }

    /// True if some loop other than `me` is idle and not blocked: one relaxed load of
    /// each word, what a busy loop pays to ask.
    #[inline]
    pub(crate) fn any_idle_but(&self, me: usize) -> bool {
        self.idle.load(Relaxed) & !self.blocked.load(Relaxed) & !Self::bit(me) != 0
    }

    /// Picks an idle loop other than `me` that is not blocked, clearing its idle bit
    /// (the pick is this caller's alone), and returns it if it is still alive.
    pub(crate) fn claim_idle(&self, me: usize) -> Option<(usize, Arc<T>)> {
        loop {
            let candidates = self.idle.load(Relaxed) & !self.blocked.load(Relaxed) & !Self::bit(me);
            if candidates == 0 {
                return None;
            }
            let index = candidates.trailing_zeros() as usize;
            let bit = 1u64 << index;
            if self.idle.fetch_and(!bit, AcqRel) & bit == 0 {
                // Another giver picked it first, or it woke: look again.
                continue;
            }
            if let Some(member) = self.member(index) {
                return Some((index, member));
            }
        }
    }

    /// Loop `index`, if it is still alive.
    pub(crate) fn member(&self, index: usize) -> Option<Arc<T>> {
        self.members.get(index)?.upgrade()
    }

    /// How many loops take part.
    pub(crate) fn len(&self) -> usize {
        self.members.len().min(MAX_PEERS)
    }
}
