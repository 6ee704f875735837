//! A `Vec<u8>` read into through its spare capacity, remembering across reads how much
//! of that capacity is already initialized (so it is never zeroed twice).

use crate::ReadBuf;
use std::mem::MaybeUninit;

/// How much `read_to_end` asks for at a time, and the size of its probe buffer.
pub(super) const PROBE: usize = 32;

/// A vector, owned or borrowed, that `read_to_end` fills.
pub(super) trait ByteVec {
    fn vec(&self) -> &Vec<u8>;
    fn vec_mut(&mut self) -> &mut Vec<u8>;
}

impl ByteVec for Vec<u8> {
    fn vec(&self) -> &Vec<u8> {
        self
    }
    fn vec_mut(&mut self) -> &mut Vec<u8> {
        self
    }
}

impl ByteVec for &mut Vec<u8> {
    fn vec(&self) -> &Vec<u8> {
        self
    }
    fn vec_mut(&mut self) -> &mut Vec<u8> {
        self
    }
}

#[derive(Debug)]
pub(super) struct VecBuf<V> {
    vec: V,
    /// Bytes from the start of the allocation known to be initialized (`>= len`).
    init: usize,
    /// The capacity the caller handed in; as long as it is unchanged, a read that would
    /// only just fit goes through a small stack buffer first, so a vector that was
    /// sized exactly for the data is never grown to find out that the stream ended.
    start_cap: usize,
}

impl VecBuf<Vec<u8>> {
    /// Takes the owned vector out, leaving an empty one.
    pub(super) fn take_vec(&mut self) -> Vec<u8> {
        self.init = 0;
        std::mem::take(&mut self.vec)
    }
}

impl<V: ByteVec> VecBuf<V> {
    pub(super) fn new(vec: V) -> Self {
        let v = vec.vec();
        VecBuf {
            init: v.len(),
            start_cap: v.capacity(),
            vec,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.vec.vec().is_empty()
    }

    /// Spare capacity past the length.
    pub(super) fn spare(&self) -> usize {
        let v = self.vec.vec();
        v.capacity() - v.len()
    }

    /// Makes room for `n` more bytes; a reallocation forgets what was initialized past
    /// the length (the new memory is not).
    pub(super) fn reserve(&mut self, n: usize) {
        let v = self.vec.vec_mut();
        if v.capacity() - v.len() < n {
            self.init = v.len();
            v.reserve(n);
        }
    }

    /// Whether the next read should probe with a small stack buffer first.
    pub(super) fn probe_first(&self) -> bool {
        let v = self.vec.vec();
        v.capacity() - v.len() < PROBE && v.capacity() == self.start_cap && self.start_cap >= PROBE
    }

    /// Runs `f` with a `ReadBuf` over the whole allocation (filled up to the length,
    /// initialized as far as known), then takes the new length and initialized mark
    /// from it.
    pub(super) fn with_read_buf<R>(&mut self, f: impl FnOnce(&mut ReadBuf<'_>) -> R) -> R {
        let init = self.init;
        let v = self.vec.vec_mut();
        let (len, cap, ptr) = (v.len(), v.capacity(), v.as_mut_ptr());
        // SAFETY: `ptr..ptr+cap` is the vector's allocation, valid for writes and not
        // otherwise borrowed while `slice` lives (the vector is only touched again
        // below, after `slice` and the ReadBuf are gone). Viewing it as
        // `MaybeUninit<u8>` makes no claim about its contents.
        let slice = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<MaybeUninit<u8>>(), cap) };
        let (out, new_len, new_init, still_ours) = {
            let mut rb = ReadBuf::uninit(slice);
            // SAFETY: the first `init` bytes of the allocation are initialized: the
            // vector's `len` bytes, and whatever earlier reads initialized past them
            // (tracked in `self.init`, reset to `len` on reallocation).
            unsafe { rb.assume_init(init) };
            rb.set_filled(len);
            let out = f(&mut rb);
            let still_ours = rb.filled().as_ptr() == ptr.cast_const();
            (out, rb.filled().len(), rb.initialized().len(), still_ours)
        };
        assert!(still_ours, "the reader swapped the buffer out");
        // SAFETY: the ReadBuf's filled part is the first `new_len` bytes of the
        // allocation, all initialized, and `new_len <= cap`.
        unsafe { v.set_len(new_len) };
        self.init = new_init;
        out
    }

    /// Appends `bytes`, which must fit in the spare capacity.
    pub(super) fn push_slice(&mut self, bytes: &[u8]) {
        let v = self.vec.vec_mut();
        debug_assert!(v.capacity() - v.len() >= bytes.len());
        v.extend_from_slice(bytes);
        self.init = self.init.max(v.len());
    }
}
