//! `Buf`: the bytes between a `File`'s task and the blocking pool.

use std::io::{self, IoSlice, Read, Write};

use netloop_io::ReadBuf;

use crate::io::read_to_vec;

/// Bytes between the task and the pool: read ahead but not yet consumed, or to write.
#[derive(Default)]
pub(super) struct Buf {
    bytes: Vec<u8>,
    /// Bytes before this were consumed.
    pos: usize,
}

impl Buf {
    pub(super) fn len(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.pos = 0;
    }

    /// Copies as much as fits into `dst`.
    pub(super) fn copy_to(&mut self, dst: &mut ReadBuf<'_>) -> usize {
        let n = self.len().min(dst.remaining());
        dst.put_slice(&self.bytes[self.pos..self.pos + n]);
        self.pos += n;
        if self.pos == self.bytes.len() {
            self.clear();
        }
        n
    }

    /// Takes up to `max` bytes of `src` to write; the buffer must be empty.
    pub(super) fn copy_from(&mut self, src: &[u8], max: usize) -> usize {
        debug_assert!(self.is_empty());
        let n = src.len().min(max);
        self.bytes.extend_from_slice(&src[..n]);
        n
    }

    /// Takes up to `max` bytes of `bufs`, in order, to write.
    pub(super) fn copy_from_bufs(&mut self, bufs: &[IoSlice<'_>], max: usize) -> usize {
        debug_assert!(self.is_empty());
        for src in bufs {
            let room = max - self.bytes.len();
            if room == 0 {
                break;
            }
            self.bytes.extend_from_slice(&src[..src.len().min(room)]);
        }
        self.bytes.len()
    }

    /// Drops the unread bytes; returns how far to seek back to stand before them.
    pub(super) fn discard_read(&mut self) -> i64 {
        let back = -i64::try_from(self.len()).unwrap_or(i64::MAX);
        self.clear();
        back
    }

    /// Reads up to `len` bytes from `rd` into the (empty) buffer.
    pub(super) fn read_from(&mut self, rd: &mut impl Read, len: usize) -> io::Result<usize> {
        debug_assert!(self.is_empty());
        self.pos = 0;
        read_to_vec(rd, &mut self.bytes, len)
    }

    /// Writes the whole buffer to `wr`, leaving it empty whatever happens.
    pub(super) fn write_to(&mut self, wr: &mut impl Write) -> io::Result<()> {
        debug_assert_eq!(self.pos, 0);
        let result = wr.write_all(&self.bytes);
        self.clear();
        result
    }
}
