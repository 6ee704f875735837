//! [`ReadBuf`]: a byte buffer that may start out uninitialized, split into a filled
//! part, an initialized-but-unfilled part and an uninitialized tail.

use std::fmt;
use std::mem::MaybeUninit;

/// The buffer an [`AsyncRead`](crate::AsyncRead) reads into.
///
/// It borrows a slice of possibly uninitialized bytes and tracks two marks over it:
/// `filled` (the bytes a read has produced so far) and `initialized` (the bytes known
/// to hold a value, at least `filled`). Everything past `initialized` may be garbage and
/// is never exposed as `&[u8]`, so a reader can be handed memory that was never zeroed.
///
/// ```
/// use netloop_io::ReadBuf;
///
/// let mut storage = [0u8; 8];
/// let mut buf = ReadBuf::new(&mut storage);
/// buf.put_slice(b"abc");
/// assert_eq!(buf.filled(), b"abc");
/// assert_eq!(buf.remaining(), 5);
/// ```
pub struct ReadBuf<'a> {
    buf: &'a mut [MaybeUninit<u8>],
    filled: usize,
    initialized: usize,
}

impl<'a> ReadBuf<'a> {
    /// Wraps a fully initialized slice: nothing filled yet, everything initialized.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> ReadBuf<'a> {
        let initialized = buf.len();
        // SAFETY: `MaybeUninit<u8>` has the layout of `u8`, and every byte of `buf` is
        // initialized; the only way back to `&mut [u8]` for bytes past `initialized`
        // goes through `initialize_unfilled_to` (which writes them) and the unsafe
        // accessors, whose contract forbids de-initializing bytes.
        let buf = unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) };
        ReadBuf {
            buf,
            filled: 0,
            initialized,
        }
    }

    /// Wraps a slice of which nothing is assumed initialized.
    #[inline]
    pub fn uninit(buf: &'a mut [MaybeUninit<u8>]) -> ReadBuf<'a> {
        ReadBuf {
            buf,
            filled: 0,
            initialized: 0,
        }
    }

    /// The length of the whole underlying slice.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The bytes read so far.
    #[inline]
    pub fn filled(&self) -> &[u8] {
        // SAFETY: `filled <= initialized`, so the first `filled` bytes hold values.
        unsafe { assume_init(&self.buf[..self.filled]) }
    }

    /// The bytes read so far, mutably.
    #[inline]
    pub fn filled_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `filled`; writing initialized bytes keeps them initialized.
        unsafe { assume_init_mut(&mut self.buf[..self.filled]) }
    }

    /// A new `ReadBuf` over at most `n` bytes of this one's unfilled part, starting
    /// empty and uninitialized.
    ///
    /// What a reader puts into the returned buffer lands in this buffer's unfilled part;
    /// the caller then marks it with [`assume_init`](Self::assume_init) and
    /// [`advance`](Self::advance).
    #[inline]
    pub fn take(&mut self, n: usize) -> ReadBuf<'_> {
        let len = self.remaining().min(n);
        let tail = &mut self.buf[self.filled..self.filled + len];
        ReadBuf::uninit(tail)
    }

    /// The initialized part: the filled bytes and those after them known to be
    /// initialized.
    #[inline]
    pub fn initialized(&self) -> &[u8] {
        // SAFETY: the first `initialized` bytes hold values by the type's invariant.
        unsafe { assume_init(&self.buf[..self.initialized]) }
    }

    /// The initialized part, mutably.
    #[inline]
    pub fn initialized_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `initialized`.
        unsafe { assume_init_mut(&mut self.buf[..self.initialized]) }
    }

    /// The whole underlying slice, filled or not.
    ///
    /// # Safety
    ///
    /// The caller must not write uninitialized bytes (e.g. `MaybeUninit::uninit()`)
    /// into the part that is already initialized.
    #[inline]
    pub unsafe fn inner_mut(&mut self) -> &mut [MaybeUninit<u8>] {
        self.buf
    }

    /// The unfilled part of the slice, which may be partly uninitialized.
    ///
    /// # Safety
    ///
    /// The caller must not write uninitialized bytes into the part that is already
    /// initialized.
    #[inline]
    pub unsafe fn unfilled_mut(&mut self) -> &mut [MaybeUninit<u8>] {
        &mut self.buf[self.filled..]
    }

    /// The whole unfilled part as initialized bytes, zeroing whatever was not
    /// initialized yet.
    #[inline]
    pub fn initialize_unfilled(&mut self) -> &mut [u8] {
        self.initialize_unfilled_to(self.remaining())
    }

    /// The first `n` bytes of the unfilled part as initialized bytes, zeroing whatever
    /// of them was not initialized yet.
    ///
    /// # Panics
    ///
    /// If `n` is more than [`remaining`](Self::remaining).
    #[inline]
    #[track_caller]
    pub fn initialize_unfilled_to(&mut self, n: usize) -> &mut [u8] {
        assert!(self.remaining() >= n, "n overflows remaining");
        let end = self.filled + n;
        if self.initialized < end {
            for byte in &mut self.buf[self.initialized..end] {
                byte.write(0);
            }
            self.initialized = end;
        }
        // SAFETY: `end <= initialized` now, so `filled..end` holds values.
        unsafe { assume_init_mut(&mut self.buf[self.filled..end]) }
    }

    /// How many bytes can still be read into the buffer.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.filled
    }

    /// Forgets the filled bytes (they stay initialized).
    #[inline]
    pub fn clear(&mut self) {
        self.filled = 0;
    }

    /// Marks `n` more bytes as filled.
    ///
    /// # Panics
    ///
    /// If the filled part would pass the initialized part.
    #[inline]
    #[track_caller]
    pub fn advance(&mut self, n: usize) {
        let to = self.filled.checked_add(n).expect("filled overflow");
        self.set_filled(to);
    }

    /// Sets how many bytes are filled; shrinking it is allowed.
    ///
    /// # Panics
    ///
    /// If `n` passes the initialized part.
    #[inline]
    #[track_caller]
    pub fn set_filled(&mut self, n: usize) {
        assert!(n <= self.initialized, "filled must not become larger than initialized");
        self.filled = n;
    }

    /// Declares that the first `n` unfilled bytes have been initialized (never lowers
    /// the initialized mark).
    ///
    /// # Safety
    ///
    /// The first `n` bytes of the unfilled part must really hold values.
    #[inline]
    pub unsafe fn assume_init(&mut self, n: usize) {
        let end = self.filled + n;
        if end > self.initialized {
            self.initialized = end;
        }
    }

    /// Appends `buf` to the filled part.
    ///
    /// # Panics
    ///
    /// If `buf` is longer than [`remaining`](Self::remaining).
    #[inline]
    #[track_caller]
    pub fn put_slice(&mut self, buf: &[u8]) {
        assert!(
            self.remaining() >= buf.len(),
            "buf.len() must fit in remaining(); buf.len() = {}, remaining() = {}",
            buf.len(),
            self.remaining()
        );
        let end = self.filled + buf.len();
        // SAFETY: `&[u8]` and `&[MaybeUninit<u8>]` have the same layout, and copying
        // initialized bytes in only ever initializes memory.
        let src = unsafe { &*(buf as *const [u8] as *const [MaybeUninit<u8>]) };
        self.buf[self.filled..end].copy_from_slice(src);
        if end > self.initialized {
            self.initialized = end;
        }
        self.filled = end;
    }
}

// SAFETY: `chunk_mut` hands out exactly the unfilled part, and `advance_mut(cnt)` is
// only called (by contract of `BufMut`) after `cnt` bytes of it were written, so
// marking them initialized and filled is correct; `remaining_mut` is the length of
// that part.
unsafe impl bytes::BufMut for ReadBuf<'_> {
    fn remaining_mut(&self) -> usize {
        self.remaining()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller wrote `cnt` bytes of the unfilled part (BufMut's contract).
        unsafe { self.assume_init(cnt) };
        self.advance(cnt);
    }

    fn chunk_mut(&mut self) -> &mut bytes::buf::UninitSlice {
        // SAFETY: `UninitSlice` only lets safe code write initialized bytes, so no
        // initialized byte can be de-initialized through it.
        let tail = unsafe { self.unfilled_mut() };
        bytes::buf::UninitSlice::uninit(tail)
    }
}

impl fmt::Debug for ReadBuf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadBuf")
            .field("filled", &self.filled)
            .field("initialized", &self.initialized)
            .field("capacity", &self.capacity())
            .finish()
    }
}

/// # Safety
/// Every byte of `slice` must be initialized.
#[inline]
unsafe fn assume_init(slice: &[MaybeUninit<u8>]) -> &[u8] {
    // SAFETY: same layout; the caller vouches that every byte holds a value.
    unsafe { &*(slice as *const [MaybeUninit<u8>] as *const [u8]) }
}

/// # Safety
/// Every byte of `slice` must be initialized.
#[inline]
unsafe fn assume_init_mut(slice: &mut [MaybeUninit<u8>]) -> &mut [u8] {
    // SAFETY: same layout; the caller vouches that every byte holds a value, and a
    // `&mut [u8]` can only store initialized bytes back.
    unsafe { &mut *(slice as *mut [MaybeUninit<u8>] as *mut [u8]) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    #[test]
    fn new_is_initialized_and_empty() {
        let mut storage = [7u8; 4];
        let buf = ReadBuf::new(&mut storage);
        assert_eq!(buf.capacity(), 4);
        assert_eq!(buf.filled(), b"");
        assert_eq!(buf.initialized(), &[7, 7, 7, 7]);
        assert_eq!(buf.remaining(), 4);
    }

    #[test]
    fn uninit_exposes_nothing_until_written() {
        let mut storage = [MaybeUninit::<u8>::uninit(); 6];
        let mut buf = ReadBuf::uninit(&mut storage);
        assert_eq!(buf.initialized(), b"");
        buf.put_slice(b"ab");
        assert_eq!(buf.filled(), b"ab");
        assert_eq!(buf.initialized(), b"ab");
        assert_eq!(buf.initialize_unfilled_to(2), &[0, 0]);
        assert_eq!(buf.initialized().len(), 4);
        assert_eq!(buf.filled().len(), 2);
        buf.advance(2);
        assert_eq!(buf.filled(), b"ab\0\0");
        assert_eq!(buf.initialize_unfilled(), &[0, 0]);
        assert_eq!(buf.initialized().len(), 6);
    }

    #[test]
    #[should_panic(expected = "filled must not become larger than initialized")]
    fn advance_past_initialized_panics() {
        let mut storage = [MaybeUninit::<u8>::uninit(); 4];
        let mut buf = ReadBuf::uninit(&mut storage);
        buf.advance(1);
    }

    #[test]
    #[should_panic(expected = "n overflows remaining")]
    fn initialize_too_much_panics() {
        let mut storage = [0u8; 2];
        let mut buf = ReadBuf::new(&mut storage);
        buf.initialize_unfilled_to(3);
    }

    #[test]
    #[should_panic(expected = "buf.len() must fit in remaining(); buf.len() = 3, remaining() = 2")]
    fn put_slice_too_long_panics() {
        let mut storage = [0u8; 2];
        let mut buf = ReadBuf::new(&mut storage);
        buf.put_slice(b"abc");
    }

    #[test]
    fn take_writes_into_the_parent() {
        let mut storage = [MaybeUninit::<u8>::uninit(); 8];
        let mut buf = ReadBuf::uninit(&mut storage);
        buf.put_slice(b"x");
        let n = {
            let mut sub = buf.take(3);
            assert_eq!(sub.capacity(), 3);
            sub.put_slice(b"yz");
            sub.filled().len()
        };
        // SAFETY: the sub-buffer wrote `n` bytes at the start of the unfilled part.
        unsafe { buf.assume_init(n) };
        buf.advance(n);
        assert_eq!(buf.filled(), b"xyz");
        assert_eq!(buf.take(100).capacity(), 5);
    }

    #[test]
    fn set_filled_shrinks_and_clear_keeps_initialized() {
        let mut storage = [0u8; 4];
        let mut buf = ReadBuf::new(&mut storage);
        buf.put_slice(b"abcd");
        buf.set_filled(2);
        assert_eq!(buf.filled(), b"ab");
        buf.filled_mut()[0] = b'z';
        buf.clear();
        assert_eq!(buf.filled(), b"");
        assert_eq!(buf.initialized(), b"zbcd");
        buf.initialized_mut()[3] = b'!';
        assert_eq!(buf.initialized(), b"zbc!");
    }

    #[test]
    fn assume_init_never_lowers_the_mark() {
        let mut storage = [0u8; 4];
        let mut buf = ReadBuf::new(&mut storage);
        // SAFETY: zero bytes are claimed.
        unsafe { buf.assume_init(0) };
        assert_eq!(buf.initialized().len(), 4);
    }

    #[test]
    fn buf_mut_writes_and_advances() {
        let mut storage = [MaybeUninit::<u8>::uninit(); 8];
        let mut buf = ReadBuf::uninit(&mut storage);
        assert_eq!(buf.remaining_mut(), 8);
        buf.put_u16(0x0102);
        buf.put_bytes(9, 2);
        assert_eq!(buf.filled(), &[1, 2, 9, 9]);
        assert_eq!(buf.initialized().len(), 4);
        assert_eq!(format!("{buf:?}"), "ReadBuf { filled: 4, initialized: 4, capacity: 8 }");
    }
}
