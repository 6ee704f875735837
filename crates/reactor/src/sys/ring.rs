//! The io_uring boundary: one ring per loop, the pool of provided buffers its
//! multishot receives fill, and the memory of a one-shot `recvmsg`
//! ([`RecvMsgMemory`], owned by its operation until the completion).
//!
//! Ownership of memory the kernel may write: the pool's buffers are registered with
//! the ring as a buffer group. A buffer is the kernel's from the moment it is put in
//! the ring ([`BufPool::recycle`]) until a completion names it; then it is the
//! completion's owner's, who reads it and gives it back. The pool's memory is freed
//! only when no ring and no reader holds the pool (`Arc`), and a ring is dropped only
//! after every operation that could still pick a buffer has completed
//! (`io::completion`'s drain).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::ptr::NonNull;
use std::sync::Mutex;
use std::time::Duration;

use io_uring::types::{BufRingEntry, SubmitArgs, Timespec};
use io_uring::{IoUring, cqueue, squeue};

/// The one buffer group the pool registers.
pub(crate) const BUF_GROUP: u16 = 0;

/// A completion, copied out of the completion queue.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Completion {
    pub(crate) user_data: u64,
    pub(crate) result: i32,
    pub(crate) flags: u32,
}

impl Completion {
    /// True while a multishot operation stays armed after this completion.
    pub(crate) fn more(&self) -> bool {
        cqueue::more(self.flags)
    }

    /// The provided buffer this completion filled, if it took one.
    pub(crate) fn buffer(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
}

/// One loop's io_uring instance.
pub(crate) struct Ring {
    uring: IoUring,
}

impl Ring {
    /// A ring with `entries` submission slots, or the kernel's refusal (`ENOSYS` on a
    /// kernel without io_uring, `EPERM` under a seccomp profile or with
    /// `kernel.io_uring_disabled` set, `EINVAL` where an operation we need is missing).
    pub(crate) fn new(entries: u32) -> io::Result<Ring> {
        // Multishot receive (6.0) is not in the probe (its opcode is plain `recv`'s):
        // the kernel's version says.
        if kernel_version().is_some_and(|v| v < (6, 0)) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "io_uring's multishot receive needs Linux 6.0 or later",
            ));
        }
        // Completions may outnumber submissions (multishot): a completion queue four
        // times the submission queue, and the kernel keeps overflows. Completion work
        // runs when the loop enters the kernel (cooperative task running), not by
        // interrupting the loop's thread at each arrival: the loop enters once per turn
        // anyway, and the flag says when work waits (see `enter`).
        let uring = IoUring::builder()
            .setup_cqsize(entries * 4)
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .build(entries)
            .or_else(|_| IoUring::builder().setup_cqsize(entries * 4).build(entries))?;
        let mut probe = io_uring::Probe::new();
        uring.submitter().register_probe(&mut probe)?;
        let needed = [
            io_uring::opcode::RecvMulti::CODE,
            io_uring::opcode::RecvMsg::CODE,
            io_uring::opcode::Send::CODE,
            io_uring::opcode::AcceptMulti::CODE,
            io_uring::opcode::PollAdd::CODE,
            io_uring::opcode::AsyncCancel::CODE,
        ];
        if !needed.iter().all(|&op| probe.is_supported(op)) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel's io_uring lacks an operation netloop needs (recv, recvmsg, send, accept, poll, cancel)",
            ));
        }
        Ok(Ring { uring })
    }

    /// Queues `entry` for the next [`enter`](Self::enter); submits what is queued first
    /// if the submission queue is full.
    ///
    /// # Safety
    ///
    /// Every buffer and file descriptor `entry` names must stay valid until its
    /// completion arrives (or, for a multishot operation, its last completion).
    pub(crate) unsafe fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        // SAFETY: the caller keeps what the entry names alive until its completion.
        if unsafe { self.uring.submission().push(entry) }.is_ok() {
            return Ok(());
        }
        self.uring.submit()?;
        // SAFETY: as above.
        unsafe { self.uring.submission().push(entry) }
            .map_err(|_| io::Error::other("io_uring submission queue full after a submit"))
    }

    /// True if entries wait to be submitted.
    pub(crate) fn has_unsubmitted(&mut self) -> bool {
        !self.uring.submission().is_empty()
    }

    /// True if the kernel holds completion work that runs only when the loop enters it.
    fn work_waits(&mut self) -> bool {
        self.uring.submission().taskrun()
    }

    /// True if completions wait to be read.
    pub(crate) fn has_completions(&mut self) -> bool {
        !self.uring.completion().is_empty()
    }

    /// One `io_uring_enter`: submits what is queued and, unless `timeout` is zero,
    /// waits for a completion for up to `timeout` (`None`: until one arrives). Makes no
    /// system call when there is nothing to submit and nothing to wait for.
    pub(crate) fn enter(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let result = match timeout {
            // No wait: a call only to submit, or to run completion work the kernel
            // holds for the loop (the task-run flag).
            Some(Duration::ZERO) => {
                if !self.has_unsubmitted() && !self.work_waits() {
                    return Ok(());
                }
                self.uring.submit()
            }
            // Completions already wait: no wait either.
            _ if self.has_completions() => {
                if !self.has_unsubmitted() && !self.work_waits() {
                    return Ok(());
                }
                self.uring.submit()
            }
            None => self.uring.submit_and_wait(1),
            Some(t) => {
                let ts = Timespec::from(t);
                let args = SubmitArgs::new().timespec(&ts);
                self.uring.submitter().submit_with_args(1, &args)
            }
        };
        match result {
            Ok(_) => Ok(()),
            // A timed-out wait, or a signal: not failures of the loop.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Moves every waiting completion into `out`.
    pub(crate) fn take_completions(&mut self, out: &mut Vec<Completion>) {
        out.extend(self.uring.completion().map(|cqe| Completion {
            user_data: cqe.user_data(),
            result: cqe.result(),
            flags: cqe.flags(),
        }));
    }

    /// Cancels the operation with `user_data` at once (`IORING_REGISTER_SYNC_CANCEL`):
    /// when this returns, it takes no other buffer or byte. Its completion still
    /// arrives.
    pub(crate) fn cancel_now(&self, user_data: u64) -> io::Result<()> {
        let builder = io_uring::types::CancelBuilder::user_data(user_data);
        match self.uring.submitter().register_sync_cancel(None, builder) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            r => r,
        }
    }

    /// Registers `pool`'s ring of buffers as [`BUF_GROUP`].
    pub(crate) fn register_pool(&self, pool: &BufPool) -> io::Result<()> {
        // SAFETY: the ring memory is `pool.entries` entries, page-aligned, and lives as
        // long as the pool, which the loop keeps until after the ring is dropped.
        unsafe {
            self.uring
                .submitter()
                .register_buf_ring_with_flags(pool.ring as u64, pool.entries, BUF_GROUP, 0)
        }
    }
}

/// The running kernel's (major, minor) version, from `uname`.
fn kernel_version() -> Option<(u32, u32)> {
    // SAFETY: `utsname` is plain data; all zeros is a valid value.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uts` is a valid, writable `utsname`.
    if unsafe { libc::uname(&mut uts) } != 0 {
        return None;
    }
    // SAFETY: `release` is NUL-terminated by `uname`.
    let release = unsafe { std::ffi::CStr::from_ptr(uts.release.as_ptr()) }
        .to_str()
        .ok()?;
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").finish_non_exhaustive()
    }
}

/// A `recvmsg`'s memory: the header the kernel reads, the `iovec` it names, the
/// address and the buffer the kernel writes, in one heap allocation at a fixed address.
///
/// Held by a raw pointer, not a `Box`: moving a `Box` asserts that nothing else points
/// into it, while the header, its `iovec` and the kernel do (miri's Stacked Borrows
/// reports the `Box` form). Moving the handle (into the op table and back) moves none
/// of the memory; it is freed when the handle drops, which its owner does only once no
/// operation names it.
pub(crate) struct RecvMsgMemory {
    parts: NonNull<RecvMsgParts>,
}

struct RecvMsgParts {
    msg: libc::msghdr,
    iov: libc::iovec,
    addr: libc::sockaddr_storage,
    buf: Vec<u8>,
}

// SAFETY: the handle owns its allocation alone; the raw pointers inside point into that
// allocation (set by `prepare`) and are dereferenced only by the kernel while an
// operation owns the handle.
unsafe impl Send for RecvMsgMemory {}
// SAFETY: as above; `&self` methods only read plain data.
unsafe impl Sync for RecvMsgMemory {}

impl std::fmt::Debug for RecvMsgMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvMsgMemory")
            .field("capacity", &self.parts().buf.len())
            .finish_non_exhaustive()
    }
}

impl RecvMsgMemory {
    /// Memory for one receive of up to `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> RecvMsgMemory {
        let parts = Box::new(RecvMsgParts {
            // SAFETY: `msghdr`, `iovec` and `sockaddr_storage` are plain C data; all
            // zeros (null pointers, zero lengths) is a valid value of each.
            msg: unsafe { std::mem::zeroed() },
            // SAFETY: as above.
            iov: unsafe { std::mem::zeroed() },
            // SAFETY: as above.
            addr: unsafe { std::mem::zeroed() },
            buf: vec![0u8; capacity],
        });
        RecvMsgMemory {
            parts: NonNull::from(Box::leak(parts)),
        }
    }

    /// Points the header at this allocation's address, `iovec` and buffer, clears the
    /// address's family (so that nothing stale reads as a sender), and returns the
    /// header for a `recvmsg` entry. The pointers stay valid until the handle drops.
    pub(crate) fn prepare(&mut self) -> *mut libc::msghdr {
        let p = self.parts.as_ptr();
        // SAFETY: `p` is the handle's live allocation, which nothing else reaches now
        // (`&mut self`: no operation holds the handle). Every field is written through
        // `p`, and every pointer stored is derived from `p`, so each stays usable
        // however the handle moves.
        unsafe {
            (*p).addr.ss_family = 0;
            (*p).iov.iov_base = (*p).buf.as_mut_ptr().cast();
            (*p).iov.iov_len = (*p).buf.len();
            (*p).msg.msg_name = std::ptr::addr_of_mut!((*p).addr).cast();
            (*p).msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            (*p).msg.msg_iov = std::ptr::addr_of_mut!((*p).iov);
            (*p).msg.msg_iovlen = 1;
            (*p).msg.msg_control = std::ptr::null_mut();
            (*p).msg.msg_controllen = 0;
            (*p).msg.msg_flags = 0;
            std::ptr::addr_of_mut!((*p).msg)
        }
    }

    fn parts(&self) -> &RecvMsgParts {
        // SAFETY: the allocation lives until the handle drops; the caller of any
        // method holds the handle, so no operation (the kernel) writes it meanwhile.
        unsafe { self.parts.as_ref() }
    }

    /// The first `len` bytes received.
    pub(crate) fn bytes(&self, len: usize) -> &[u8] {
        let buf = &self.parts().buf;
        &buf[..len.min(buf.len())]
    }

    /// The sender the kernel wrote.
    pub(crate) fn sender(&self) -> io::Result<SocketAddr> {
        socket_addr(&self.parts().addr)
    }
}

impl Drop for RecvMsgMemory {
    fn drop(&mut self) {
        // SAFETY: made by `Box::leak` in `new`, freed once, here; no operation names it
        // any more (an operation owns the handle until its completion).
        drop(unsafe { Box::from_raw(self.parts.as_ptr()) });
    }
}

/// `addr` as the standard library's address: IPv4 or IPv6, else `InvalidInput`.
pub(crate) fn socket_addr(addr: &libc::sockaddr_storage) -> io::Result<SocketAddr> {
    match i32::from(addr.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a `sockaddr_in`;
            // `sockaddr_storage` is large and aligned enough for any address.
            let a = unsafe { &*std::ptr::from_ref(addr).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Ok(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a `sockaddr_in6`; as above.
            let a = unsafe { &*std::ptr::from_ref(addr).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            Ok(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a datagram's sender is not an IP address",
        )),
    }
}

/// The provided buffers of one loop's multishot receives: `entries` buffers of
/// `size` bytes, and the ring through which they go back to the kernel.
pub(crate) struct BufPool {
    /// The kernel-shared ring of `entries` [`BufRingEntry`]s, page-aligned.
    ring: *mut BufRingEntry,
    entries: u16,
    /// `entries * size` bytes: buffer `i` starts at `i * size`.
    data: *mut u8,
    size: usize,
    /// The ring's tail as this side last wrote it: the producer side is one writer at
    /// a time (readers give buffers back from any thread).
    tail: Mutex<u16>,
}

// SAFETY: the raw pointers name memory the pool owns; the ring's producer side is
// written under `tail`'s lock, and a buffer's bytes are read only by the one owner of
// the completion that named it (see the module's ownership rule).
unsafe impl Send for BufPool {}
// SAFETY: as above.
unsafe impl Sync for BufPool {}

const PAGE: usize = 4096;

/// The kernel's `struct io_uring_buf` (its ABI): an entry of the provided-buffer ring,
/// whose `resv` field in entry 0 is the ring's tail.
#[repr(C)]
struct RawBufEntry {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

const _: () = assert!(size_of::<RawBufEntry>() == size_of::<BufRingEntry>());

impl BufPool {
    /// `entries` (a power of two, at most 32,768) buffers of `size` bytes each, all
    /// in the ring.
    pub(crate) fn new(entries: u16, size: usize) -> io::Result<BufPool> {
        if !entries.is_power_of_two() || entries > 1 << 15 || size == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "bad provided-buffer pool size",
            ));
        }
        let ring_layout = Self::ring_layout(entries);
        let data_layout = Self::data_layout(entries, size);
        // SAFETY: both layouts have non-zero sizes.
        let (ring, data) = unsafe {
            (
                std::alloc::alloc_zeroed(ring_layout).cast::<BufRingEntry>(),
                std::alloc::alloc(data_layout),
            )
        };
        if ring.is_null() || data.is_null() {
            std::alloc::handle_alloc_error(ring_layout);
        }
        // Every page is touched now: the pool's resident size is what it will be.
        // SAFETY: `data` is `data_layout.size()` bytes, just allocated.
        unsafe { std::ptr::write_bytes(data, 0, data_layout.size()) };
        let pool = BufPool {
            ring,
            entries,
            data,
            size,
            tail: Mutex::new(0),
        };
        {
            let mut tail = pool.tail.lock().unwrap_or_else(|e| e.into_inner());
            for bid in 0..entries {
                pool.put(&mut tail, bid);
            }
            pool.publish(*tail);
        }
        Ok(pool)
    }

    fn ring_layout(entries: u16) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(usize::from(entries) * size_of::<BufRingEntry>(), PAGE)
            .expect("a ring of at most 32,768 entries fits")
    }

    fn data_layout(entries: u16, size: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(usize::from(entries) * size, PAGE).expect("the pool fits in memory")
    }

    /// The first `len` bytes of buffer `bid`.
    ///
    /// # Safety
    ///
    /// A completion handed `bid` to the caller, which has not given it back, and the
    /// kernel wrote at least `len` bytes into it.
    pub(crate) unsafe fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        debug_assert!(bid < self.entries && len <= self.size);
        // SAFETY: in bounds (above); the kernel is done with the buffer (the caller
        // owns it since its completion) and the completion is ordered before this.
        unsafe { std::slice::from_raw_parts(self.data.add(usize::from(bid) * self.size), len) }
    }

    /// Gives buffers back to the kernel.
    ///
    /// # Safety
    ///
    /// Each `bid` was handed out by a completion and is given back once, and its owner
    /// holds no slice of it any more.
    pub(crate) unsafe fn recycle(&self, bids: impl IntoIterator<Item = u16>) {
        let mut tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        let before = *tail;
        for bid in bids {
            self.put(&mut tail, bid);
        }
        if *tail != before {
            self.publish(*tail);
        }
    }

    /// Writes buffer `bid` into the ring's slot at `tail` (not yet visible to the kernel).
    fn put(&self, tail: &mut u16, bid: u16) {
        let slot = usize::from(*tail & (self.entries - 1));
        // SAFETY: `bid < entries`, so the address is inside `data`.
        let addr = unsafe { self.data.add(usize::from(bid) * self.size) } as u64;
        let len = u32::try_from(self.size).expect("a buffer is under 4 GiB");
        // SAFETY: `slot < entries`; slots past the published tail are the producer's,
        // and the producer is whoever holds `tail`'s lock. The fields are written
        // through the raw pointer, without a reference to the whole entry: entry 0's
        // last field is the tail the kernel reads.
        unsafe {
            let raw = self.ring.add(slot).cast::<RawBufEntry>();
            std::ptr::addr_of_mut!((*raw).addr).write(addr);
            std::ptr::addr_of_mut!((*raw).len).write(len);
            std::ptr::addr_of_mut!((*raw).bid).write(bid);
        }
        *tail = tail.wrapping_add(1);
    }

    /// Makes every slot before `tail` visible to the kernel.
    fn publish(&self, tail: u16) {
        // SAFETY: the tail field of the ring's first entry; the release store orders
        // the entries written before it (the kernel reads it with an acquire load).
        unsafe {
            let tail_ptr = BufRingEntry::tail(self.ring).cast_mut();
            std::sync::atomic::AtomicU16::from_ptr(tail_ptr).store(tail, std::sync::atomic::Ordering::Release);
        }
    }
}

impl Drop for BufPool {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with these layouts; no ring has it registered any
        // more and no completion's owner holds a buffer (they hold the pool).
        unsafe {
            std::alloc::dealloc(self.ring.cast(), Self::ring_layout(self.entries));
            std::alloc::dealloc(self.data, Self::data_layout(self.entries, self.size));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool's arithmetic and its ring, without a kernel (runs under miri): every
    /// buffer is in the ring, recycling advances the tail, and buffer bytes are where
    /// the entries point.
    #[test]
    fn a_pool_puts_every_buffer_in_its_ring() {
        let pool = BufPool::new(8, 64).unwrap();
        assert_eq!(*pool.tail.lock().unwrap(), 8);
        // SAFETY: reading the ring the test's own pool owns; no kernel shares it.
        let (first, last) = unsafe { (&*pool.ring, &*pool.ring.add(7)) };
        assert_eq!(first.bid(), 0);
        assert_eq!(last.bid(), 7);
        assert_eq!(last.addr() - first.addr(), 7 * 64);
        // SAFETY: no kernel holds the buffers; the test gives back two it "owns".
        unsafe { pool.recycle([3, 5]) };
        assert_eq!(*pool.tail.lock().unwrap(), 10);
        // SAFETY: buffer 3 is the test's; nothing writes it.
        assert_eq!(unsafe { pool.bytes(3, 64) }.len(), 64);
        assert!(BufPool::new(6, 64).is_err(), "not a power of two");
    }

    /// A ring either comes up or says why; when it does, a no-op submission completes.
    #[test]
    #[cfg_attr(miri, ignore = "miri has no io_uring")]
    fn a_ring_submits_and_completes() {
        let Ok(mut ring) = Ring::new(8) else { return };
        let nop = io_uring::opcode::Nop::new().build().user_data(42);
        // SAFETY: a no-op names no memory.
        unsafe { ring.push(&nop) }.unwrap();
        ring.enter(Some(Duration::from_secs(5))).unwrap();
        let mut out = Vec::new();
        ring.take_completions(&mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].user_data, 42);
        let pool = BufPool::new(8, 64).unwrap();
        ring.register_pool(&pool).unwrap();
        // The ring goes first: the pool's memory outlives every ring it is registered with.
        drop(ring);
        drop(pool);
    }

    /// The header points into its own allocation, wherever the handle is moved, and
    /// stays usable (as the kernel uses it) across reads through the handle; the
    /// sender's address reads back as written (runs under miri: no kernel).
    #[test]
    fn recvmsg_memory_points_into_itself_and_reads_its_sender() {
        let mut mem = RecvMsgMemory::new(16);
        let msg = mem.prepare();
        // Moved, and through a function (a `Box` would be retagged unique here).
        let moved = std::hint::black_box(mem);
        let parts = moved.parts.as_ptr();
        // SAFETY: `msg` points into `moved`'s allocation, alive and not borrowed; the
        // "kernel" writes a datagram and a family through the header's pointers.
        unsafe {
            let iov = (*msg).msg_iov;
            assert_eq!(iov.cast_const(), std::ptr::addr_of!((*parts).iov));
            assert_eq!((*msg).msg_name.cast_const(), std::ptr::addr_of!((*parts).addr).cast());
            assert_eq!((*iov).iov_len, 16);
            std::ptr::write_bytes((*iov).iov_base.cast::<u8>(), 7, 3);
        }
        assert_eq!(moved.bytes(3), [7, 7, 7]);
        assert!(moved.sender().is_err(), "no family: no sender");
        // SAFETY: as above, after a read through the handle.
        unsafe { (*(*msg).msg_name.cast::<libc::sockaddr_in>()).sin_family = libc::AF_INET as libc::sa_family_t };
        assert_eq!(moved.sender().unwrap(), "0.0.0.0:0".parse().unwrap());
        assert_eq!(moved.bytes(100).len(), 16, "cut to the buffer");

        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        {
            // SAFETY: a `sockaddr_in` fits in the storage, which the test owns.
            let v4 = unsafe { &mut *std::ptr::addr_of_mut!(storage).cast::<libc::sockaddr_in>() };
            v4.sin_family = libc::AF_INET as libc::sa_family_t;
            v4.sin_port = 5353u16.to_be();
            v4.sin_addr.s_addr = u32::from(Ipv4Addr::new(127, 0, 0, 1)).to_be();
        }
        assert_eq!(socket_addr(&storage).unwrap(), "127.0.0.1:5353".parse().unwrap());
        {
            // SAFETY: as above, for a `sockaddr_in6`.
            let v6 = unsafe { &mut *std::ptr::addr_of_mut!(storage).cast::<libc::sockaddr_in6>() };
            v6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            v6.sin6_port = 53u16.to_be();
            v6.sin6_addr.s6_addr = Ipv6Addr::LOCALHOST.octets();
            v6.sin6_flowinfo = 0;
            v6.sin6_scope_id = 0;
        }
        assert_eq!(socket_addr(&storage).unwrap(), "[::1]:53".parse().unwrap());
    }
}
