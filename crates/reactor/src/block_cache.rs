//! Task blocks freed on a loop, kept for the next task of their size spawned onto it.
//!
//! A task spawned from another thread is allocated there and, once finished, usually
//! freed on the loop's thread. glibc (and other allocators with per-thread arenas)
//! hands such a free back to the arena the block came from, under that arena's lock,
//! while the spawning thread takes the same lock to allocate the next task: one
//! thread spawning onto busy loops contends for that lock at nearly every spawn.
//!
//! So a loop keeps the blocks of its remote-spawned tasks: the last reference to such
//! a task puts the block here instead of freeing it, and the next spawn onto this loop
//! from another thread takes it back. Both are one lock-free queue operation. Blocks
//! are grouped in size classes of [`CLASS_STEP`] bytes up to [`MAX_BLOCK`], each class
//! holding at most [`CLASS_BYTES`] worth of blocks; anything beyond goes back to the
//! allocator. The cache is emptied when the loop's shared state is dropped.
//!
//! Tasks spawned on the loop's own thread have a cache too, [`LocalBlocks`]: a plain
//! free list per size class that only the loop's thread touches, with no atomic
//! operation. The allocator serves one such spawn quickly from its per-thread cache,
//! but that cache is small (glibc's keeps 7 blocks of a size); a task that spawns a
//! thousand others, or a burst of a thousand short tasks, goes to the allocator's
//! slower shared bins for most of them. (`docs/BENCHMARKS.md`, "What the measurements
//! decided", has what both caches saved.)
//!
//! # Memory
//!
//! Each kind of cache holds at most [`CLASS_BYTES`] (1 MiB) per size class per loop,
//! and only classes a loop has spawned tasks of are used (most programs use a few).
//! The blocks stay with the loop until it is dropped, as an allocator's free lists
//! would keep them; the bound caps what a past burst of tasks leaves behind.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::cell::RefCell;
use std::ptr::NonNull;
use std::sync::OnceLock;

use concurrent_queue::ConcurrentQueue;

/// Size classes are multiples of this many bytes.
pub(crate) const CLASS_STEP: usize = 64;
/// Larger blocks are not cached.
pub(crate) const MAX_BLOCK: usize = 1024;
/// Alignment of every cached block; types needing more are not cached.
pub(crate) const BLOCK_ALIGN: usize = 16;
/// Bytes of blocks one class may hold, in each of the two caches.
///
/// One thread spawning onto two loops in a burst (tokio's `spawn_many_remote_idle`:
/// 10,000 tasks of 256 bytes, padding included) keeps up to 5,000 blocks per loop in
/// flight. At 128 KiB (512 blocks) most of them went through glibc's slow path, a
/// quarter of the spawning thread's time; at 1 MiB, about a fifth of them do.
const CLASS_BYTES: usize = 1024 * 1024;
const CLASSES: usize = MAX_BLOCK / CLASS_STEP;

/// A block of one size class, owned by whoever holds this value.
struct Block(NonNull<u8>);

// SAFETY: a `Block` is plain memory with no contents anyone refers to; whoever holds
// it owns it exclusively, on any thread.
unsafe impl Send for Block {}

/// The size class of a value with this layout, if blocks of it are cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SizeClass(usize);

impl SizeClass {
    /// The class that fits a `T`, or `None` if `T` is too big or too aligned.
    pub(crate) const fn of<T>() -> Option<SizeClass> {
        let size = size_of::<T>();
        if size == 0 || size > MAX_BLOCK || align_of::<T>() > BLOCK_ALIGN {
            None
        } else {
            Some(SizeClass(size.div_ceil(CLASS_STEP) - 1))
        }
    }

    /// How many blocks of this class either cache keeps at most ([`CLASS_BYTES`]
    /// worth, and at least one).
    const fn capacity(self) -> usize {
        let n = CLASS_BYTES / self.layout().size();
        if n == 0 { 1 } else { n }
    }

    /// The layout every block of this class is allocated and freed with.
    pub(crate) const fn layout(self) -> Layout {
        // SAFETY: the size is a non-zero multiple of 64, at most `MAX_BLOCK`, and the
        // alignment a power of two that divides it.
        unsafe { Layout::from_size_align_unchecked((self.0 + 1) * CLASS_STEP, BLOCK_ALIGN) }
    }
}

/// A cache of freed task blocks, by size class, that any thread may use: a loop
/// keeps one for the tasks spawned onto it from other threads (see the module docs).
/// Another [`Schedule`](crate::task::Schedule) may keep one too, and return it from
/// `remote_blocks`; the cached blocks go back to the allocator when it is dropped.
///
/// A class's queue is boxed and made on first use: a queue is a few cache lines of
/// its own, and most loops only ever see one or two classes.
pub struct BlockCache {
    classes: [OnceLock<Box<ConcurrentQueue<Block>>>; CLASSES],
}

impl Default for BlockCache {
    fn default() -> Self {
        BlockCache {
            classes: [const { OnceLock::new() }; CLASSES],
        }
    }
}

impl BlockCache {
    /// A block of `class`: a cached one, or a new one from the allocator. Its contents
    /// are unspecified; it is the caller's until given to [`put`](Self::put) or freed
    /// with `class.layout()`.
    pub(crate) fn take(&self, class: SizeClass) -> NonNull<u8> {
        if let Some(queue) = self.classes[class.0].get()
            && let Ok(Block(ptr)) = queue.pop()
        {
            return ptr;
        }
        alloc_block(class)
    }

    /// Keeps `block` for a later [`take`](Self::take) of `class`, or frees it if the
    /// class is full.
    ///
    /// # Safety
    /// `block` came from `take(class)` on any `BlockCache` (every cache allocates a
    /// class with the same layout), holds no live value, and is not used afterwards.
    pub(crate) unsafe fn put(&self, class: SizeClass, block: NonNull<u8>) {
        let queue = self.classes[class.0].get_or_init(|| Box::new(ConcurrentQueue::bounded(class.capacity())));
        if let Err(err) = queue.push(Block(block)) {
            // SAFETY: per the contract, allocated with this class's layout.
            unsafe { free_block(class, err.into_inner().0) };
        }
    }

    /// Blocks currently cached, over all classes.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn cached(&self) -> usize {
        self.classes
            .iter()
            .filter_map(OnceLock::get)
            .map(|queue| queue.len())
            .sum()
    }
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        for (index, queue) in self.classes.iter_mut().enumerate() {
            let Some(queue) = queue.get_mut() else { continue };
            while let Ok(Block(ptr)) = queue.pop() {
                // SAFETY: every cached block was allocated with its class's layout.
                unsafe { free_block(SizeClass(index), ptr) };
            }
        }
    }
}

/// A new block of `class` from the allocator. Its contents are unspecified.
pub(crate) fn alloc_block(class: SizeClass) -> NonNull<u8> {
    let layout = class.layout();
    // SAFETY: the layout's size is not zero.
    match NonNull::new(unsafe { alloc(layout) }) {
        Some(ptr) => ptr,
        None => handle_alloc_error(layout),
    }
}

/// Gives a block back to the allocator.
///
/// # Safety
/// `block` came from [`alloc_block`] (directly or through a cache) with `class`,
/// holds no live value, and is not used afterwards.
pub(crate) unsafe fn free_block(class: SizeClass, block: NonNull<u8>) {
    // SAFETY: per the contract, allocated with this class's layout.
    unsafe { dealloc(block.as_ptr(), class.layout()) };
}

/// One thread's own free lists of task blocks, for tasks spawned and freed on that
/// thread (see the module docs). Not `Sync`: a loop keeps it in its `Core`, which only
/// the loop's thread reaches; another [`Schedule`](crate::task::Schedule) may keep one
/// in its local half and return it from `local_blocks`.
pub struct LocalBlocks {
    /// Most recently freed last, so the next spawn reuses the block most likely to
    /// still be in this core's cache.
    classes: RefCell<[Vec<Block>; CLASSES]>,
}

impl Default for LocalBlocks {
    fn default() -> Self {
        LocalBlocks {
            classes: RefCell::new([const { Vec::new() }; CLASSES]),
        }
    }
}

impl LocalBlocks {
    /// A block of `class`: the one freed last, or a new one from the allocator. As
    /// [`BlockCache::take`].
    pub(crate) fn take(&self, class: SizeClass) -> NonNull<u8> {
        // The borrow cannot be taken already: neither method calls out while holding it.
        match self.classes.borrow_mut()[class.0].pop() {
            Some(Block(ptr)) => ptr,
            None => alloc_block(class),
        }
    }

    /// Keeps `block` for a later [`take`](Self::take) of `class`, or frees it if the
    /// class is full.
    ///
    /// # Safety
    /// As [`BlockCache::put`].
    pub(crate) unsafe fn put(&self, class: SizeClass, block: NonNull<u8>) {
        let mut classes = self.classes.borrow_mut();
        let list = &mut classes[class.0];
        if list.len() < class.capacity() {
            list.push(Block(block));
        } else {
            drop(classes);
            // SAFETY: per the contract.
            unsafe { free_block(class, block) };
        }
    }

    /// Blocks currently kept, over all classes.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn cached(&self) -> usize {
        self.classes.borrow().iter().map(Vec::len).sum()
    }
}

impl Drop for LocalBlocks {
    fn drop(&mut self) {
        for (index, list) in self.classes.get_mut().iter_mut().enumerate() {
            for Block(block) in list.drain(..) {
                // SAFETY: every kept block was allocated with its class's layout.
                unsafe { free_block(SizeClass(index), block) };
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn classes_round_up_to_the_step() {
        assert_eq!(SizeClass::of::<[u8; 1]>().unwrap().layout().size(), 64);
        assert_eq!(SizeClass::of::<[u8; 64]>().unwrap().layout().size(), 64);
        assert_eq!(SizeClass::of::<[u8; 65]>().unwrap().layout().size(), 128);
        assert_eq!(SizeClass::of::<[u8; MAX_BLOCK]>().unwrap().layout().size(), MAX_BLOCK);
        assert_eq!(SizeClass::of::<[u8; MAX_BLOCK + 1]>(), None);
        assert_eq!(SizeClass::of::<()>(), None);
        #[repr(align(32))]
        struct Aligned(#[allow(dead_code)] [u8; 32]);
        assert_eq!(SizeClass::of::<Aligned>(), None);
    }

    /// Takes two blocks of one class, puts `a` then `b` back through `put` and checks
    /// both are kept; then takes two again and returns `([a, b], [first, second])`,
    /// the second pair in the order `take` gave them. The blocks are put back at the
    /// end, for the cache's drop to free (miri reports a leak if it does not).
    fn put_two_back_and_take_them_again(
        take: impl Fn(SizeClass) -> NonNull<u8>,
        put: impl Fn(SizeClass, NonNull<u8>),
        cached: impl Fn() -> usize,
    ) -> ([NonNull<u8>; 2], [NonNull<u8>; 2]) {
        let class = SizeClass::of::<[u64; 20]>().unwrap();
        let (a, b) = (take(class), take(class));
        assert_ne!(a, b);
        put(class, a);
        put(class, b);
        assert_eq!(cached(), 2);
        let again = [take(class), take(class)];
        assert_eq!(cached(), 0);
        put(class, a);
        put(class, b);
        ([a, b], again)
    }

    #[test]
    fn a_block_put_back_is_taken_again() {
        let cache = BlockCache::default();
        let ([a, b], again) = put_two_back_and_take_them_again(
            |class| cache.take(class),
            // SAFETY: each block came from `take(class)` and is not used again until taken.
            |class, block| unsafe { cache.put(class, block) },
            || cache.cached(),
        );
        // First in, first out.
        assert_eq!(again, [a, b]);
    }

    /// Takes three blocks more of the largest class than a cache keeps and puts them all
    /// back through `put`; returns `(blocks the cache kept, its limit)`.
    fn fill_past_the_limit(
        take: impl Fn(SizeClass) -> NonNull<u8>,
        put: impl Fn(SizeClass, NonNull<u8>),
        cached: impl Fn() -> usize,
    ) -> (usize, usize) {
        let class = SizeClass::of::<[u8; MAX_BLOCK]>().unwrap();
        let limit = CLASS_BYTES / MAX_BLOCK;
        let blocks: Vec<_> = (0..limit + 3).map(|_| take(class)).collect();
        // Miri reports a leak if the three that do not fit are not freed.
        blocks.into_iter().for_each(|block| put(class, block));
        (cached(), limit)
    }

    #[test]
    fn a_full_class_frees_what_does_not_fit() {
        let cache = BlockCache::default();
        let (cached, limit) = fill_past_the_limit(
            |class| cache.take(class),
            // SAFETY: each block came from `take(class)` and is not used again.
            |class, block| unsafe { cache.put(class, block) },
            || cache.cached(),
        );
        assert_eq!(cached, limit);
    }

    #[test]
    fn the_local_list_gives_back_the_block_freed_last() {
        let local = LocalBlocks::default();
        let ([a, b], again) = put_two_back_and_take_them_again(
            |class| local.take(class),
            // SAFETY: each block came from `take(class)` and is not used again until taken.
            |class, block| unsafe { local.put(class, block) },
            || local.cached(),
        );
        // Last in, first out: the block most likely still in cache.
        assert_eq!(again, [b, a]);
    }

    #[test]
    fn a_full_local_class_frees_what_does_not_fit() {
        let local = LocalBlocks::default();
        let (cached, limit) = fill_past_the_limit(
            |class| local.take(class),
            // SAFETY: each block came from `take(class)` and is not used again.
            |class, block| unsafe { local.put(class, block) },
            || local.cached(),
        );
        assert_eq!(cached, limit);
    }
}
