//! The lock-free queue under every mpsc channel: a linked list of fixed-size blocks.
//!
//! Senders claim a slot with one `fetch_add` on `tail_pos`, find (or link) the block
//! that holds it, write the value and set the slot's ready bit. The one receiver walks
//! the list in slot order. A block whose slots have all been read goes back to the end
//! of the list to be used again, so a channel in steady state allocates nothing.
//!
//! Invariants the `unsafe` below relies on:
//! 1. A slot index is claimed by exactly one push (or by the closing marker); only that
//!    sender writes its cell, once, and then sets its ready bit with `Release`.
//! 2. The receiver reads a cell only after seeing its ready bit with `Acquire`, and
//!    reads each ready cell once (it advances `index` past it).
//! 3. `tail_block` only moves forward, and only past a block whose slots are all
//!    written. The sender that moves it then stamps the block with the claim counter's
//!    value (`observed_tail`) and sets `RELEASED`. Every sender that could still be
//!    looking at that block claimed a slot below the stamp (a later claim synchronizes
//!    with the stamping `fetch_add(0, Release)` and so sees the new `tail_block`).
//! 4. The receiver reuses or frees a released block only when its own `index` has
//!    reached the stamp: every slot below it has been read, so every sender that could
//!    hold a pointer to the block is done with it. Blocks from `tail_block` on are never
//!    released, so walking from `tail_block` is safe for anyone holding the channel.
//! 5. Blocks are freed only by the receiver (reclaim that finds no place) or by the
//!    channel's drop, when no sender or receiver is left.

use std::fmt;
use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};

use super::cell::{AtomicPtr, UnsafeCell, spin_yield};
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

/// Slots per block: a power of two smaller than `usize::BITS - 1`. Tiny under loom, so
/// that a model crosses block boundaries in a few steps.
#[cfg(not(loom))]
pub(crate) const BLOCK_CAP: usize = 32;
#[cfg(loom)]
pub(crate) const BLOCK_CAP: usize = 2;

const SLOT_MASK: usize = BLOCK_CAP - 1;
/// Every slot's ready bit.
const ALL_READY: usize = (1 << BLOCK_CAP) - 1;
/// Set (after `observed_tail`) when the senders have moved `tail_block` past the block.
const RELEASED: usize = 1 << BLOCK_CAP;
/// Set in the block of the slot claimed by the last sender's drop: the list ends there.
const TX_CLOSED: usize = 1 << (BLOCK_CAP + 1);

fn block_start(index: usize) -> usize {
    index & !SLOT_MASK
}

fn slot_of(index: usize) -> usize {
    index & SLOT_MASK
}

/// What the receiver finds at its index.
pub(crate) enum Read<T> {
    /// The next value.
    Value(T),
    /// Every sender is gone and every value was read.
    Closed,
}

struct Block<T> {
    /// Index of the block's first slot. Written only while the block is unpublished.
    start: AtomicUsize,
    next: AtomicPtr<Block<T>>,
    /// Ready bits (one per slot), `RELEASED` and `TX_CLOSED`.
    state: AtomicUsize,
    /// The claim counter when the block was released; valid once `RELEASED` is seen.
    observed_tail: AtomicUsize,
    slots: [UnsafeCell<MaybeUninit<T>>; BLOCK_CAP],
}

impl<T> Block<T> {
    /// A fresh block on the heap, built in place: a block of large values never sits on
    /// the stack.
    fn alloc(start: usize) -> NonNull<Block<T>> {
        #[cfg(not(loom))]
        {
            let mut boxed = Box::<Block<T>>::new_uninit();
            let p = boxed.as_mut_ptr();
            // SAFETY: `p` points to an allocation for a `Block<T>`; each header field is
            // written once through a raw place, and the slots (cells of `MaybeUninit`)
            // are valid uninitialized, so the whole block is initialized after these.
            let block = unsafe {
                ptr::addr_of_mut!((*p).start).write(AtomicUsize::new(start));
                ptr::addr_of_mut!((*p).next).write(AtomicPtr::new(ptr::null_mut()));
                ptr::addr_of_mut!((*p).state).write(AtomicUsize::new(0));
                ptr::addr_of_mut!((*p).observed_tail).write(AtomicUsize::new(0));
                boxed.assume_init()
            };
            NonNull::from(Box::leak(block))
        }
        #[cfg(loom)]
        {
            let block = Box::new(Block {
                start: AtomicUsize::new(start),
                next: AtomicPtr::new(ptr::null_mut()),
                state: AtomicUsize::new(0),
                observed_tail: AtomicUsize::new(0),
                slots: std::array::from_fn(|_| UnsafeCell::new(MaybeUninit::uninit())),
            });
            NonNull::from(Box::leak(block))
        }
    }

    fn start(&self) -> usize {
        self.start.load(Relaxed)
    }

    fn all_ready(&self) -> bool {
        self.state.load(Acquire) & ALL_READY == ALL_READY
    }

    /// The stamp of a released block, `None` while the senders may still use it.
    fn released_at(&self) -> Option<usize> {
        (self.state.load(Acquire) & RELEASED != 0).then(|| self.observed_tail.load(Relaxed))
    }

    fn has_value(&self, index: usize) -> bool {
        self.start() == block_start(index) && self.state.load(Acquire) & (1 << slot_of(index)) != 0
    }

    /// Links `block` (owned by the caller, unpublished) right after `self` if `self` is
    /// last; otherwise hands back the block that is.
    ///
    /// # Safety
    ///
    /// `block` must be a live block that no other thread can reach.
    unsafe fn try_link(&self, block: NonNull<Block<T>>) -> Result<(), NonNull<Block<T>>> {
        // SAFETY: the caller owns `block`; nobody else reads it until the CAS below
        // publishes it (with `Release`, so its start is seen with it).
        unsafe { block.as_ref() }
            .start
            .store(self.start().wrapping_add(BLOCK_CAP), Relaxed);
        match self
            .next
            .compare_exchange(ptr::null_mut(), block.as_ptr(), AcqRel, Acquire)
        {
            Ok(_) => Ok(()),
            // SAFETY: a non-null `next` always points to a linked, live block.
            Err(next) => Err(unsafe { NonNull::new_unchecked(next) }),
        }
    }

    /// The block after `self`, allocating and linking one if there is none yet.
    fn next_or_grow(&self) -> NonNull<Block<T>> {
        if let Some(next) = NonNull::new(self.next.load(Acquire)) {
            return next;
        }
        let fresh = Block::alloc(self.start().wrapping_add(BLOCK_CAP));
        // SAFETY: `fresh` was just allocated and is unpublished.
        let next = match unsafe { self.try_link(fresh) } {
            Ok(()) => return fresh,
            Err(next) => next,
        };
        // Another sender linked first: put our block further down the list rather than
        // freeing it, someone will need it soon.
        let mut at = next;
        loop {
            // SAFETY: `at` is linked after a block at or past `tail_block` (invariant 3),
            // so it is live; `fresh` is still ours.
            match unsafe { at.as_ref().try_link(fresh) } {
                Ok(()) => return next,
                Err(further) => at = further,
            }
            spin_yield();
        }
    }
}

/// The senders' half of the list.
pub(crate) struct ListTx<T> {
    tail_block: AtomicPtr<Block<T>>,
    tail_pos: AtomicUsize,
}

/// The receiver's half of the list.
pub(crate) struct ListRx<T> {
    /// The block that holds `index` (or an earlier one, advanced lazily).
    head: NonNull<Block<T>>,
    /// The next slot to read.
    index: usize,
    /// The oldest block still owned by the list: blocks from here to `head` wait for
    /// reclaiming.
    free_head: NonNull<Block<T>>,
}

// SAFETY: `ListRx` owns values of type `T` (sent between threads, hence `T: Send`) and
// block pointers it shares with the senders through atomics only. Its `&self` methods
// read atomics and never touch a `T`, so sharing it needs no more than `T: Send`.
unsafe impl<T: Send> Send for ListRx<T> {}
// SAFETY: see above.
unsafe impl<T: Send> Sync for ListRx<T> {}

// The list's state is consistent between any two steps of its code (no user code runs
// in the middle of one), so a panic elsewhere leaves nothing half-done to observe.
impl<T> std::panic::UnwindSafe for ListRx<T> {}
impl<T> std::panic::RefUnwindSafe for ListRx<T> {}

/// An empty list starting at slot `start` (a block boundary).
pub(crate) fn list<T>(start: usize) -> (ListTx<T>, ListRx<T>) {
    debug_assert_eq!(slot_of(start), 0);
    let first = Block::<T>::alloc(start);
    let tx = ListTx {
        tail_block: AtomicPtr::new(first.as_ptr()),
        tail_pos: AtomicUsize::new(start),
    };
    let rx = ListRx {
        head: first,
        index: start,
        free_head: first,
    };
    (tx, rx)
}

impl<T> ListTx<T> {
    /// Appends `value`.
    pub(crate) fn push(&self, value: T) {
        let index = self.tail_pos.fetch_add(1, Acquire);
        let block = self.block_for(index);
        // SAFETY: the block is live (invariant 3: it is at or after the tail we read
        // after claiming), and `index` is ours alone (invariant 1).
        let block = unsafe { block.as_ref() };
        let slot = slot_of(index);
        // SAFETY: invariant 1: no one else touches this cell until its ready bit is set.
        block.slots[slot].with_mut(|p| unsafe { (*p).write(value) });
        block.state.fetch_or(1 << slot, Release);
    }

    /// Marks the end of the list: called once, after the last sender is gone.
    pub(crate) fn close(&self) {
        let index = self.tail_pos.fetch_add(1, Acquire);
        let block = self.block_for(index);
        // SAFETY: as in `push`.
        unsafe { block.as_ref() }.state.fetch_or(TX_CLOSED, Release);
    }

    fn block_for(&self, index: usize) -> NonNull<Block<T>> {
        let start = block_start(index);
        let mut at = self.tail_block.load(Acquire);
        // Only a sender far enough ahead tries to move the tail: usually the first
        // claimer of a block, which keeps the CAS on `tail_block` uncontended.
        // SAFETY: `tail_block` is always live (invariant 3).
        let distance = start.wrapping_sub(unsafe { (*at).start() }) / BLOCK_CAP;
        let mut move_tail = distance > slot_of(index);
        loop {
            // SAFETY: `at` is `tail_block` or linked after it: live (invariant 3).
            let block = unsafe { &*at };
            if block.start() == start {
                // SAFETY: non-null, it came from `tail_block` or a `next` link.
                return unsafe { NonNull::new_unchecked(at) };
            }
            let next = block.next_or_grow();
            move_tail &= block.all_ready();
            if move_tail {
                if self
                    .tail_block
                    .compare_exchange(at, next.as_ptr(), Release, Relaxed)
                    .is_ok()
                {
                    // The stamp: every later claim sees the moved tail (invariant 3).
                    let stamp = self.tail_pos.fetch_add(0, Release);
                    block.observed_tail.store(stamp, Relaxed);
                    block.state.fetch_or(RELEASED, Release);
                } else {
                    move_tail = false;
                }
            }
            at = next.as_ptr();
            spin_yield();
        }
    }

    /// Puts a block that the receiver has emptied back at the end of the list, or frees
    /// it if the end keeps moving.
    ///
    /// # Safety
    ///
    /// `block` must be released, fully read and unreachable by any sender (invariant 4).
    unsafe fn recycle(&self, block: NonNull<Block<T>>) {
        {
            // SAFETY: the caller gives us the only access to `block`.
            let b = unsafe { block.as_ref() };
            b.next.store(ptr::null_mut(), Relaxed);
            b.state.store(0, Relaxed);
            b.observed_tail.store(0, Relaxed);
        }
        let mut at = self.tail_block.load(Acquire);
        for _ in 0..3 {
            // SAFETY: `at` is the tail or after it: live (invariant 3); `block` is ours.
            match unsafe { (*at).try_link(block) } {
                Ok(()) => return,
                Err(next) => at = next.as_ptr(),
            }
        }
        // SAFETY: `block` is unpublished and ours: nobody else can reach it.
        drop(unsafe { Box::from_raw(block.as_ptr()) });
    }
}

impl<T> ListRx<T> {
    /// Takes the next value, or says the list is closed; `None` if the next slot is
    /// not written yet.
    pub(crate) fn pop(&mut self, tx: &ListTx<T>) -> Option<Read<T>> {
        if !self.advance_head() {
            return None;
        }
        self.reclaim(tx);
        // SAFETY: `head` is owned by the list until the receiver reclaims it.
        let block = unsafe { self.head.as_ref() };
        let slot = slot_of(self.index);
        let state = block.state.load(Acquire);
        if state & (1 << slot) != 0 {
            // SAFETY: the ready bit was seen with `Acquire`: the cell holds a value
            // (invariant 1) and is read once (invariant 2).
            let value = block.slots[slot].with(|p| unsafe { (*p).assume_init_read() });
            self.index = self.index.wrapping_add(1);
            Some(Read::Value(value))
        } else if state & TX_CLOSED != 0 {
            Some(Read::Closed)
        } else {
            None
        }
    }

    /// Like [`pop`](Self::pop), telling an empty list from a write in progress.
    pub(crate) fn try_pop(&mut self, tx: &ListTx<T>) -> TryPop<T> {
        let tail = tx.tail_pos.load(Acquire);
        match self.pop(tx) {
            Some(Read::Value(v)) => TryPop::Value(v),
            Some(Read::Closed) => TryPop::Closed,
            None if tail == self.index => TryPop::Empty,
            None => TryPop::Busy,
        }
    }

    /// Moves `head` to the block holding `index`; false if that block is not linked yet.
    fn advance_head(&mut self) -> bool {
        let start = block_start(self.index);
        loop {
            // SAFETY: `head` is live (owned by the list, invariant 4).
            let block = unsafe { self.head.as_ref() };
            if block.start() == start {
                return true;
            }
            match NonNull::new(block.next.load(Acquire)) {
                Some(next) => self.head = next,
                None => return false,
            }
            spin_yield();
        }
    }

    fn reclaim(&mut self, tx: &ListTx<T>) {
        while self.free_head != self.head {
            // SAFETY: blocks from `free_head` to `head` are live and behind `head`.
            let block = unsafe { self.free_head.as_ref() };
            let Some(stamp) = block.released_at() else { return };
            if stamp.wrapping_sub(self.index) as isize > 0 {
                return;
            }
            let next = block.next.load(Acquire);
            let old = self.free_head;
            // SAFETY: `head` is after this block, so its `next` is set.
            self.free_head = unsafe { NonNull::new_unchecked(next) };
            // SAFETY: released and read up to the stamp: invariant 4.
            unsafe { tx.recycle(old) };
            spin_yield();
        }
    }

    /// The number of values sent and not yet received (a write in progress at the very
    /// end is not counted; nor is the closing marker).
    pub(crate) fn len(&self, tx: &ListTx<T>) -> usize {
        let tail = tx.tail_pos.load(Acquire);
        let len = tail.wrapping_sub(self.index);
        if len == 0 {
            return 0;
        }
        if self.slot_written(tx, tail.wrapping_sub(1)) {
            len
        } else {
            len - 1
        }
    }

    /// True if nothing is ready to receive.
    pub(crate) fn is_empty(&self, tx: &ListTx<T>) -> bool {
        // SAFETY: `head` is live.
        if unsafe { self.head.as_ref() }.has_value(self.index) {
            return false;
        }
        self.len(tx) == 0
    }

    fn slot_written(&self, tx: &ListTx<T>, index: usize) -> bool {
        // SAFETY: `tail_block` is live (invariant 3).
        let tail = unsafe { &*tx.tail_block.load(Acquire) };
        if tail.start() == block_start(index) {
            return tail.has_value(index);
        }
        let mut at = Some(self.head);
        while let Some(block) = at {
            // SAFETY: from `head` on, blocks are live (owned by the list).
            let block = unsafe { block.as_ref() };
            if block.start() == block_start(index) {
                return block.has_value(index);
            }
            at = NonNull::new(block.next.load(Acquire));
        }
        false
    }

    /// A second handle on the same list, for the channel to free it once the receiver
    /// is gone. The original must not be used afterwards.
    pub(crate) fn detach(&self) -> ListRx<T> {
        ListRx {
            head: self.head,
            index: self.index,
            free_head: self.free_head,
        }
    }

    /// Drops every value left and frees every block.
    ///
    /// # Safety
    ///
    /// No sender may push any more, and `self` is not used afterwards.
    pub(crate) unsafe fn free_all(&mut self, tx: &ListTx<T>) {
        while let Some(Read::Value(_)) = self.pop(tx) {}
        let mut at = Some(self.free_head);
        while let Some(block) = at {
            // SAFETY: nobody else is left to reach the blocks; each is freed once.
            at = NonNull::new(unsafe { block.as_ref() }.next.load(Acquire));
            drop(unsafe { Box::from_raw(block.as_ptr()) });
        }
    }
}

/// The answer of [`ListRx::try_pop`].
pub(crate) enum TryPop<T> {
    Value(T),
    Closed,
    Empty,
    /// A sender has claimed the next slot and is writing it.
    Busy,
}

impl<T> fmt::Debug for ListTx<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tx")
            .field("block_tail", &self.tail_block.load(Relaxed))
            .field("tail_position", &self.tail_pos.load(Relaxed))
            .finish()
    }
}

impl<T> fmt::Debug for ListRx<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rx")
            .field("head", &self.head)
            .field("index", &self.index)
            .field("free_head", &self.free_head)
            .finish()
    }
}
