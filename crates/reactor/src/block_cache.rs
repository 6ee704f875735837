//! Task blocks freed on a loop, kept for the next task spawned onto it from elsewhere.
//!
//! A task spawned from another thread is allocated there and, once finished, usually
//! freed on the loop's thread. glibc (and other allocators with per-thread arenas)
//! hands such a free back to the arena the block came from, under that arena's lock,
//! while the spawning thread takes the same lock to allocate the next task: one
//! thread spawning onto busy loops made a `futex` call for nearly every spawn
//! (measured: about 9,000 per 10,000 spawns in `spawn_many_local`), and the shape took
//! twice as long as it does with this cache.
//!
//! So a loop keeps the blocks of its remote-spawned tasks: the last reference to such
//! a task puts the block here instead of freeing it, and the next spawn onto this loop
//! from another thread takes it back. Both are one lock-free queue operation. Blocks
//! are grouped in size classes of [`CLASS_STEP`] bytes up to [`MAX_BLOCK`], each class
//! holding at most [`CLASS_BYTES`] worth of blocks, so a loop keeps at most a few
//! hundred KiB this way; anything beyond goes back to the allocator. The cache is
//! emptied when the loop's shared state is dropped.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ptr::NonNull;
use std::sync::OnceLock;

use concurrent_queue::ConcurrentQueue;

/// Size classes are multiples of this many bytes.
pub(crate) const CLASS_STEP: usize = 64;
/// Larger blocks are not cached.
pub(crate) const MAX_BLOCK: usize = 1024;
/// Alignment of every cached block; types needing more are not cached.
pub(crate) const BLOCK_ALIGN: usize = 16;
/// Bytes of blocks one class may hold.
const CLASS_BYTES: usize = 128 * 1024;
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

    /// The layout every block of this class is allocated and freed with.
    pub(crate) const fn layout(self) -> Layout {
        // SAFETY: the size is a non-zero multiple of 64, at most `MAX_BLOCK`, and the
        // alignment a power of two that divides it.
        unsafe { Layout::from_size_align_unchecked((self.0 + 1) * CLASS_STEP, BLOCK_ALIGN) }
    }
}

/// Per-loop cache of freed task blocks, by size class; see the module docs.
///
/// A class's queue is boxed and made on first use: a queue is a few cache lines of
/// its own, and most loops only ever see one or two classes.
pub(crate) struct BlockCache {
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
        let layout = class.layout();
        // SAFETY: the layout's size is not zero.
        match NonNull::new(unsafe { alloc(layout) }) {
            Some(ptr) => ptr,
            None => handle_alloc_error(layout),
        }
    }

    /// Keeps `block` for a later [`take`](Self::take) of `class`, or frees it if the
    /// class is full.
    ///
    /// # Safety
    /// `block` came from `take(class)` on any `BlockCache` (every cache allocates a
    /// class with the same layout), holds no live value, and is not used afterwards.
    pub(crate) unsafe fn put(&self, class: SizeClass, block: NonNull<u8>) {
        let queue = self.classes[class.0]
            .get_or_init(|| Box::new(ConcurrentQueue::bounded((CLASS_BYTES / class.layout().size()).max(1))));
        if let Err(err) = queue.push(Block(block)) {
            // SAFETY: per the contract, allocated with this class's layout.
            unsafe { dealloc(err.into_inner().0.as_ptr(), class.layout()) };
        }
    }

    /// Blocks currently cached, over all classes.
    #[cfg(test)]
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
            let layout = SizeClass(index).layout();
            while let Ok(Block(ptr)) = queue.pop() {
                // SAFETY: every cached block was allocated with its class's layout.
                unsafe { dealloc(ptr.as_ptr(), layout) };
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

    #[test]
    fn a_block_put_back_is_taken_again() {
        let cache = BlockCache::default();
        let class = SizeClass::of::<[u64; 20]>().unwrap();
        let a = cache.take(class);
        let b = cache.take(class);
        assert_ne!(a, b);
        // SAFETY: both came from `take(class)` and are not used again.
        unsafe {
            cache.put(class, a);
            cache.put(class, b);
        }
        assert_eq!(cache.cached(), 2);
        // First in, first out.
        assert_eq!(cache.take(class), a);
        assert_eq!(cache.take(class), b);
        assert_eq!(cache.cached(), 0);
        // SAFETY: as above; dropping the cache frees them.
        unsafe {
            cache.put(class, a);
            cache.put(class, b);
        }
    }

    #[test]
    fn a_full_class_frees_what_does_not_fit() {
        let cache = BlockCache::default();
        let class = SizeClass::of::<[u8; MAX_BLOCK]>().unwrap();
        let limit = CLASS_BYTES / MAX_BLOCK;
        let blocks: Vec<_> = (0..limit + 3).map(|_| cache.take(class)).collect();
        for block in blocks {
            // SAFETY: each came from `take(class)`; miri reports a leak if the three
            // that do not fit are not freed.
            unsafe { cache.put(class, block) };
        }
        assert_eq!(cache.cached(), limit);
    }
}
