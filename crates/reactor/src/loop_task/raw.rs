//! The task allocation: header, stage, vtables, and the reference count.
//!
//! A task is one heap block, `TaskCell<F, P>`: a type-erased [`Header`] followed by
//! the future's [`Stage`], then padding `P` for tasks spawned from another thread.
//! Everything outside this file reaches it through `NonNull<Header>` and the header's
//! [`Vtable`], so `Runnable`, `Task<T>` and the waker carry no future type.
//!
//! # Two halves of the state
//!
//! - `local` (`Cell<u8>`: [`SCHEDULED`], [`RUNNING`], [`DONE`]) is read and written only
//!   by the thread that owns the task: the thread driving its loop, or, before the task
//!   is first handed over, the thread that created it. Wakes, yields and runs on the
//!   loop's thread touch only this half, with plain loads and stores.
//! - `state` (`AtomicUsize`) holds what other threads need: the reference count, the
//!   outcome ([`COMPLETE`] / [`CLOSED`]), the join handle's handshake ([`HANDLE`],
//!   [`JOIN_WAKER`]), a pending remote wake ([`NOTIFIED`]) and a cancel request
//!   ([`CANCEL`]). It changes a handful of times per task life, plus once per waker
//!   clone or drop and once per wake from another thread.
//!
//! # References
//!
//! Each `Waker`, the `Task<T>` handle, and each remote-wake runnable count one
//! reference. The loop itself holds one more from spawn until the task is [`DONE`]
//! (its future completed or dropped): the runnable in the run queue borrows that one,
//! which is why scheduling and running a task never touch the count. The block is
//! freed when the count reaches zero, which can only happen after `DONE`, so a future
//! is never dropped by a reference release on some other thread.

use crate::sync::{AtomicUsize, fence};
use std::cell::{Cell, UnsafeCell};
use std::future::Future;
use std::mem::{self, MaybeUninit};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::thread;

use super::TaskMeta;
use crate::block_cache::{SizeClass, free_block};
use crate::context;
use crate::shared::Shared;

// Bits of `Header::state`.
/// The output (or the panic) is stored in the stage.
pub(super) const COMPLETE: usize = 1 << 0;
/// The future was dropped without an output (cancelled, or its loop terminated).
pub(super) const CLOSED: usize = 1 << 1;
/// A `Task<T>` handle exists and may still take the output.
pub(super) const HANDLE: usize = 1 << 2;
/// The handle's waker is in `join_waker`; while set, only the task side reads it.
pub(super) const JOIN_WAKER: usize = 1 << 3;
/// A wake from another thread is on its way through the inbox.
pub(super) const NOTIFIED: usize = 1 << 4;
/// The handle was dropped without `detach`: drop the future at the next turn.
pub(super) const CANCEL: usize = 1 << 5;
/// One reference.
pub(super) const REF_ONE: usize = 1 << 6;
/// Either outcome: nothing will run again.
pub(super) const FINAL: usize = COMPLETE | CLOSED;

// Bits of `Header::local`.
/// A runnable for the task is in the run queue, or it is running and was woken.
pub(super) const SCHEDULED: u8 = 1;
/// The future is being polled.
pub(super) const RUNNING: u8 = 2;
/// The future is gone (completed or dropped); the loop's reference is released.
pub(super) const DONE: u8 = 4;

/// The type-erased part at the start of every task.
#[repr(C)]
pub(super) struct Header {
    pub(super) state: AtomicUsize,
    /// Owner thread only, see the module docs.
    pub(super) local: Cell<u8>,
    pub(super) vtable: &'static Vtable,
    pub(super) meta: TaskMeta,
    /// The `Task<T>` handle's waker; see `JOIN_WAKER` for who may touch it.
    pub(super) join_waker: UnsafeCell<Option<Waker>>,
}

/// The operations that need the future's type.
pub(super) struct Vtable {
    /// Polls the future; on `Ready` (or a panic) stores the outcome and returns true.
    pub(super) poll: unsafe fn(NonNull<Header>, &mut Context<'_>) -> bool,
    /// Drops whatever the stage holds (the future or an untaken output). Returns true
    /// when it was the future and its destructor panicked: the panic is then stored
    /// as the task's outcome.
    pub(super) drop_stage: unsafe fn(NonNull<Header>) -> bool,
    /// Moves the outcome into `*(out as *mut Option<thread::Result<T>>)`.
    pub(super) take_output: unsafe fn(NonNull<Header>, *mut ()),
    /// Frees the block.
    pub(super) dealloc: unsafe fn(NonNull<Header>),
}

enum Stage<F: Future> {
    Running(F),
    Finished(thread::Result<F::Output>),
    Consumed,
}

/// The header and the stage: the part of a task every vtable function but `dealloc`
/// sees, whatever padding follows it.
#[repr(C)]
struct Head<F: Future> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
}

/// A task's heap block: [`Head`], then `P`, either [`CachePad`] or nothing.
///
/// Tasks spawned from another thread end with 128 bytes of padding. Such tasks,
/// spawned back to back by one thread, sit side by side in memory but usually run on
/// different loops, and every turn writes the header (at the start) and the future (at
/// the end). Without the padding, neighbours on two loops share a line and every yield
/// bounces it between cores (measured: 2 loops, 100 yielding tasks each, 94–120 ns per
/// yield against 71 ns on one loop; `yield_many` took 2.5x as long). A task spawned on
/// its loop's own thread sits among that thread's allocations, which that loop uses:
/// padding it only made memory bigger (`spawn_many_local_in_task` took 1.6x as long
/// padded). tokio aligns every task cell to 128 bytes instead; an over-aligned `Box`
/// takes glibc's slow `memalign` path, which cost more on every spawn than padding.
#[repr(C)]
struct TaskCell<F: Future, P> {
    head: Head<F>,
    _pad: P,
}

/// Two lines' worth of bytes that nothing reads or writes (two, because the x86
/// prefetcher pulls lines in pairs). Left uninitialized: zeroing them cost two line
/// writes per spawn for bytes no one reads.
pub(super) struct CachePad(#[allow(dead_code)] MaybeUninit<[u8; 128]>);

/// What follows a task's [`Head`]: [`CachePad`], or `()` for none.
pub(super) trait Padding: Sized + 'static {
    /// Which of the loop's block caches (`crate::block_cache`) the block comes from
    /// and goes back to. True for tasks spawned from another thread (the padded ones):
    /// allocated on one thread and usually freed on the loop's, they use the loop's
    /// shared cache. False for tasks spawned on the loop's thread, which use that
    /// thread's own free lists.
    const REMOTE: bool;
    fn new() -> Self;
}

impl Padding for CachePad {
    const REMOTE: bool = true;
    fn new() -> Self {
        CachePad(MaybeUninit::uninit())
    }
}

impl Padding for () {
    const REMOTE: bool = false;
    fn new() -> Self {}
}

impl<F: Future, P: Padding> TaskCell<F, P> {
    const VTABLE: Vtable = Vtable {
        poll: poll::<F>,
        drop_stage: drop_stage::<F>,
        take_output: take_output::<F>,
        dealloc: dealloc::<F, P>,
    };

    /// The block caches' size class for this cell; `None` if it is too big or too
    /// aligned to be cached (then it is a plain `Box`).
    const CLASS: Option<SizeClass> = SizeClass::of::<Self>();
}

/// Gives back a block that `allocate::<_, P>` took for a task of the loop `shared`: to
/// the loop's shared cache for a remote spawn, else to its thread's free list. A local
/// task's block freed on another thread (its last reference was dropped there) goes
/// to the allocator.
///
/// # Safety
/// As `BlockCache::put`.
unsafe fn put_block<P: Padding>(shared: &Shared, class: SizeClass, block: NonNull<u8>) {
    if P::REMOTE {
        // SAFETY: per the contract.
        unsafe { shared.blocks.put(class, block) };
    } else if context::with_own_core(shared, |core| {
        // SAFETY: per the contract.
        unsafe { core.local.blocks.put(class, block) }
    })
    .is_none()
    {
        // SAFETY: per the contract.
        unsafe { free_block(class, block) };
    }
}

/// Allocates a task holding `future`, followed by padding `P`, scheduled (its runnable
/// is about to be queued), with a handle. Returns the header; the caller makes the
/// runnable and the handle. `take_block` gives a block of a size class: from the
/// loop's shared cache if `P::REMOTE`, else from the loop thread's free list (where
/// `dealloc` puts it back).
pub(super) fn allocate<F: Future, P: Padding>(
    meta: TaskMeta,
    future: F,
    take_block: impl FnOnce(SizeClass) -> NonNull<u8>,
) -> NonNull<Header> {
    let block = TaskCell::<F, P>::CLASS.map(take_block);
    let cell = TaskCell {
        head: Head {
            header: Header {
                // The loop's reference and the handle's.
                state: AtomicUsize::new(HANDLE | (2 * REF_ONE)),
                local: Cell::new(SCHEDULED),
                vtable: &TaskCell::<F, P>::VTABLE,
                meta,
                join_waker: UnsafeCell::new(None),
            },
            stage: UnsafeCell::new(Stage::Running(future)),
        },
        _pad: P::new(),
    };
    // `TaskCell` and `Head` are `repr(C)` with the header first, so the casts give the
    // header.
    match block {
        Some(block) => {
            let block = block.cast::<TaskCell<F, P>>();
            // SAFETY: the block's class fits a `TaskCell<F, P>` in size and alignment
            // (that is how `CLASS` was chosen), and it holds no live value.
            unsafe { block.as_ptr().write(cell) };
            block.cast::<Header>()
        }
        None => NonNull::from(Box::leak(Box::new(cell))).cast::<Header>(),
    }
}

/// The stage of the task at `ptr`.
///
/// # Safety
/// `ptr` is a live task of type `F`, and the caller has exclusive access to the stage
/// (the owner thread while the task is not `DONE`, or the handle after `COMPLETE`).
unsafe fn stage<'a, F: Future>(ptr: NonNull<Header>) -> &'a mut Stage<F> {
    // SAFETY: per the contract, the block is a `TaskCell<F, _>`, which starts with a
    // `Head<F>` whatever its padding, and nobody else is in the stage.
    unsafe { &mut *ptr.cast::<Head<F>>().as_ref().stage.get() }
}

/// Drops the stage's value where it lies and leaves `Consumed` there: a future is
/// pinned, so its destructor must run at the address it was polled at (moving it out
/// first would break futures that link their own address into a list). Returns the
/// panic of a destructor that panicked; unwinding still dropped the rest of the value.
fn clear_stage<F: Future>(stage: &mut Stage<F>) -> Option<Box<dyn std::any::Any + Send>> {
    let place: *mut Stage<F> = stage;
    // SAFETY: `place` comes from a live `&mut`, and the value is dropped once, here.
    let dropped = catch_unwind(AssertUnwindSafe(|| unsafe { std::ptr::drop_in_place(place) }));
    // SAFETY: the place now holds a dropped value (also after a panic), which `write`
    // overwrites without reading or dropping it.
    unsafe { std::ptr::write(place, Stage::Consumed) };
    dropped.err()
}

unsafe fn poll<F: Future>(ptr: NonNull<Header>, cx: &mut Context<'_>) -> bool {
    // SAFETY: called by `Runnable::run` on the owner thread of a task not yet DONE.
    let stage = unsafe { stage::<F>(ptr) };
    if !matches!(stage, Stage::Running(_)) {
        return true;
    }
    let place: *mut Stage<F> = stage;
    let polled = catch_unwind(AssertUnwindSafe(|| {
        // A future that panics is dropped while the panic unwinds, as tokio drops it:
        // its destructor sees `thread::panicking()`.
        let on_unwind = DropStageOnUnwind(place);
        // SAFETY: the stage is `Running` (checked above) and nothing else touches it
        // during the poll. The future lives in the heap block until the stage is
        // replaced, and is never moved out of it: it is pinned.
        let future = unsafe {
            match &mut *place {
                Stage::Running(future) => Pin::new_unchecked(future),
                _ => unreachable!("checked to be Running"),
            }
        };
        let polled = future.poll(cx);
        mem::forget(on_unwind);
        polled
    }));
    // SAFETY: the poll is over; the stage is this thread's again.
    let stage = unsafe { &mut *place };
    let outcome = match polled {
        Ok(Poll::Pending) => return false,
        Ok(Poll::Ready(output)) => {
            // The outcome is decided: a panic from the finished future's destructor
            // only goes to the log (as tokio ignores it).
            if clear_stage(stage).is_some() {
                tracing::warn!(target: "netloop::reactor", "a task's future panicked while being dropped");
            }
            Ok(output)
        }
        // The guard already dropped the future and left `Consumed`.
        Err(payload) => Err(payload),
    };
    *stage = Stage::Finished(outcome);
    true
}

/// Drops the stage in place if dropped itself, which only happens while a poll
/// unwinds (it is forgotten otherwise).
struct DropStageOnUnwind<F: Future>(*mut Stage<F>);

impl<F: Future> Drop for DropStageOnUnwind<F> {
    fn drop(&mut self) {
        // SAFETY: the pointer is the stage of the task being polled, which the poll no
        // longer uses (it is unwinding). The value is dropped once, then overwritten
        // without being read. A panic from the destructor here, during unwinding,
        // aborts the process, as any double panic does.
        unsafe {
            std::ptr::drop_in_place(self.0);
            std::ptr::write(self.0, Stage::Consumed);
        }
    }
}

unsafe fn drop_stage<F: Future>(ptr: NonNull<Header>) -> bool {
    // SAFETY: the caller has exclusive access to the stage (see `stage`).
    let stage = unsafe { stage::<F>(ptr) };
    let was_running = matches!(stage, Stage::Running(_));
    match clear_stage(stage) {
        // A future that panics while being cancelled: the panic is the outcome the
        // handle reports (tokio's `JoinError::Panic`), not a cancellation.
        Some(payload) if was_running => {
            *stage = Stage::Finished(Err(payload));
            true
        }
        Some(_) => {
            tracing::warn!(target: "netloop::reactor", "a task's output panicked while being dropped");
            false
        }
        None => false,
    }
}

unsafe fn take_output<F: Future>(ptr: NonNull<Header>, out: *mut ()) {
    // SAFETY: the handle calls this after seeing COMPLETE, when the stage is its own.
    let stage = unsafe { stage::<F>(ptr) };
    if let Stage::Finished(outcome) = mem::replace(stage, Stage::Consumed) {
        // SAFETY: `out` points at the handle's `Option<thread::Result<F::Output>>`.
        unsafe { *out.cast::<Option<thread::Result<F::Output>>>() = Some(outcome) };
    }
}

unsafe fn dealloc<F: Future, P: Padding>(ptr: NonNull<Header>) {
    let cell = ptr.cast::<TaskCell<F, P>>().as_ptr();
    let Some(class) = TaskCell::<F, P>::CLASS else {
        // SAFETY: the last reference is gone; the block came from `Box::new` in
        // `allocate`.
        drop(unsafe { Box::from_raw(cell) });
        return;
    };
    // SAFETY: the last reference is gone, so the cell is ours. Every field with a
    // destructor is dropped once: the loop's `Arc` is moved out first (the cache lives
    // in it and this may be its last reference), then the others in place; the padding
    // has none. A field added to `Header` or `Head` must be added here.
    let meta = unsafe {
        let meta = (&raw const (*cell).head.header.meta).read();
        (&raw mut (*cell).head.header.state).drop_in_place();
        (&raw mut (*cell).head.header.join_waker).drop_in_place();
        (&raw mut (*cell).head.stage).drop_in_place();
        meta
    };
    // SAFETY: the block came from `allocate`'s `take_block(class)` and holds nothing
    // now.
    unsafe { put_block::<P>(&meta.shared, class, ptr.cast()) };
}

/// The header at `ptr`.
///
/// # Safety
/// The caller holds (or borrows) a reference to the task.
pub(super) unsafe fn header<'a>(ptr: NonNull<Header>) -> &'a Header {
    // SAFETY: a held reference keeps the block alive.
    unsafe { ptr.as_ref() }
}

/// The references counted in a `state` value.
pub(super) fn ref_count(state: usize) -> usize {
    state / REF_ONE
}

/// Adds a reference.
///
/// # Safety
/// The caller holds a reference to the task.
pub(super) unsafe fn ref_inc(ptr: NonNull<Header>) {
    // SAFETY: per the contract.
    let prev = unsafe { header(ptr) }.state.fetch_add(REF_ONE, Relaxed);
    if prev > usize::MAX / 2 {
        // Millions of wakers leaked: stop before the count wraps (as `Arc` does).
        std::process::abort();
    }
}

/// Releases a reference, freeing the task with the last one.
///
/// # Safety
/// The caller gives up a reference it holds; `ptr` must not be used afterwards.
pub(super) unsafe fn ref_dec(ptr: NonNull<Header>) {
    // SAFETY: per the contract.
    unsafe { ref_dec_setting(ptr, 0) };
}

/// [`ref_dec`] that also sets `bits` in the same read-modify-write (so another thread
/// sees them published with the release).
///
/// # Safety
/// As [`ref_dec`]; every bit of `bits` is clear before, and no other thread sets any
/// of them meanwhile (adding them must set them).
pub(super) unsafe fn ref_dec_setting(ptr: NonNull<Header>, bits: usize) {
    // SAFETY: the reference being released keeps the block alive until here.
    let h = unsafe { header(ptr) };
    let prev = h.state.fetch_add(bits.wrapping_sub(REF_ONE), Release);
    debug_assert!(prev >= REF_ONE, "task reference count underflow");
    debug_assert!(prev & bits == 0, "bits set by ref_dec_setting were already set");
    if ref_count(prev) == 1 {
        // Every other release happened before this one (they are `Release`, this fence
        // acquires them), so nothing touches the block any more.
        fence(Acquire);
        // SAFETY: that was the last reference.
        unsafe { (h.vtable.dealloc)(ptr) };
    }
}

/// Wakes the handle's waker if the task side owns it (`prev` is the state before the
/// outcome was published).
///
/// # Safety
/// The outcome bit is now set, so the handle no longer writes `join_waker`.
pub(super) unsafe fn wake_join_waker(h: &Header, prev: usize) {
    if prev & JOIN_WAKER != 0 {
        // SAFETY: JOIN_WAKER was set when the outcome was published: the slot holds
        // the handle's waker and the handle can no longer change it.
        if let Some(waker) = unsafe { &*h.join_waker.get() } {
            waker.wake_by_ref();
        }
    }
}

/// The one waker vtable of every loop task.
pub(super) static WAKER_VTABLE: RawWakerVTable = RawWakerVTable::new(clone_waker, wake, wake_by_ref, drop_waker);

/// A waker for the task at `ptr` that borrows a reference (do not drop it).
pub(super) fn raw_waker(ptr: NonNull<Header>) -> RawWaker {
    RawWaker::new(ptr.as_ptr().cast_const().cast(), &WAKER_VTABLE)
}

pub(super) fn from_waker_data(data: *const ()) -> NonNull<Header> {
    // SAFETY: every `RawWaker` with this vtable was made by `raw_waker` from a
    // non-null header pointer.
    unsafe { NonNull::new_unchecked(data.cast_mut().cast()) }
}

unsafe fn clone_waker(data: *const ()) -> RawWaker {
    let ptr = from_waker_data(data);
    // SAFETY: the waker being cloned holds a reference.
    unsafe { ref_inc(ptr) };
    raw_waker(ptr)
}

unsafe fn wake(data: *const ()) {
    // SAFETY: the waker's reference is handed over.
    unsafe { super::schedule::wake(from_waker_data(data), true) };
}

unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: the waker holds a reference for the whole call.
    unsafe { super::schedule::wake(from_waker_data(data), false) };
}

unsafe fn drop_waker(data: *const ()) {
    // SAFETY: the waker's reference is released.
    unsafe { ref_dec(from_waker_data(data)) };
}
