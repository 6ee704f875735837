//! The task's heap block: allocation, the future's stage, and deallocation.
//!
//! A task is one block, `TaskCell<F, S, P>`: a type-erased [`Header`] and the loop's
//! scheduler value (together a [`Prefix`]), then the future's [`Stage`], then padding
//! `P` for tasks spawned from another thread. This file is the only one that knows
//! the future's type; everything else goes through the header's [`Vtable`].

use std::cell::{Cell, UnsafeCell};
use std::future::Future;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};
use std::thread;

use super::header::{self, Header, Prefix, Vtable};
use super::runnable::Schedule;
use super::state::{INITIAL, INITIAL_LOCAL};
use crate::block_cache::{SizeClass, free_block};
use crate::sync::AtomicUsize;

enum Stage<F: Future> {
    Running(F),
    Finished(thread::Result<F::Output>),
    Consumed,
}

/// The prefix and the stage: the part of a task every vtable function but `dealloc`
/// sees, whatever padding follows it.
#[repr(C)]
struct Head<F: Future, S> {
    prefix: Prefix<S>,
    stage: UnsafeCell<Stage<F>>,
}

/// A task's heap block: [`Head`], then `P`, either [`CachePad`] or nothing.
///
/// Tasks spawned from another thread end with 64 bytes of padding: such tasks,
/// spawned back to back by one thread, sit side by side in memory but usually run on
/// different loops, and every turn writes the header (at the start) and the future (at
/// the end), so without the padding neighbours on two loops would share a cache line.
/// A task spawned on its loop's own thread sits among that thread's allocations, which
/// that loop uses, and is not padded. (tokio aligns every task cell to 128 bytes
/// instead; an over-aligned `Box` takes the allocator's slow aligned path on every
/// spawn.) `docs/BENCHMARKS.md`, "What the measurements decided", has the measurements
/// behind both choices.
#[repr(C)]
struct TaskCell<F: Future, S, P> {
    head: Head<F, S>,
    _pad: P,
}

/// A cache line's worth of bytes that nothing reads or writes: the last byte a task's
/// turns write (its future's) and the first of the next block (its header, behind the
/// allocator's own header) are at least a line apart, so they never share one. Two
/// lines (the x86 prefetcher pulls lines in pairs) cost a parked task 64 bytes more,
/// a size class up, for no gain measured beyond noise. Left uninitialized: nothing
/// reads them.
pub(super) struct CachePad(#[allow(dead_code)] MaybeUninit<[u8; 64]>);

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

impl<F: Future, S: Schedule, P: Padding> TaskCell<F, S, P> {
    const VTABLE: Vtable = Vtable {
        poll: poll::<F, S>,
        drop_stage: drop_stage::<F, S>,
        take_output: take_output::<F, S>,
        wake: super::runnable::wake::<S>,
        dealloc: dealloc::<F, S, P>,
        scheduler_type: std::any::TypeId::of::<S>,
    };

    /// The block caches' size class for this cell; `None` if it is too big or too
    /// aligned to be cached (then it is a plain `Box`).
    const CLASS: Option<SizeClass> = SizeClass::of::<Self>();
}

/// Gives back a block that `allocate::<_, S, P>` took for a task of `scheduler`: to
/// its shared cache for a padded (remote) spawn, else to its owner thread's free list
/// if this is that thread; to the allocator when the scheduler keeps no such cache, or
/// a local task's block is freed on another thread (its last reference was dropped
/// there).
///
/// # Safety
/// As `BlockCache::put`.
unsafe fn put_block<S: Schedule, P: Padding>(scheduler: &S, class: SizeClass, block: NonNull<u8>) {
    // SAFETY (both closures): per the contract; the block is given to one place only.
    let kept = if P::REMOTE {
        scheduler
            .remote_blocks()
            .map(|cache| unsafe { cache.put(class, block) })
    } else {
        scheduler
            .with_local(|local| S::local_blocks(local).map(|cache| unsafe { cache.put(class, block) }))
            .flatten()
    };
    if kept.is_none() {
        // SAFETY: per the contract.
        unsafe { free_block(class, block) };
    }
}

/// Allocates a task holding `future`, followed by padding `P`, scheduled (its runnable
/// is about to be queued), with a handle. Returns the header; the caller makes the
/// runnable and the handle. `take_block` gives a block of a size class: from the
/// loop's shared cache if `P::REMOTE`, else from the loop thread's free list (where
/// `dealloc` puts it back).
pub(super) fn allocate<F: Future, S: Schedule, P: Padding>(
    scheduler: S,
    future: F,
    id: u64,
    take_block: impl FnOnce(SizeClass) -> NonNull<u8>,
) -> NonNull<Header> {
    let block = TaskCell::<F, S, P>::CLASS.map(take_block);
    let cell = TaskCell {
        head: Head {
            prefix: Prefix {
                header: Header {
                    state: AtomicUsize::new(INITIAL),
                    id,
                    local: Cell::new(INITIAL_LOCAL),
                    vtable: &TaskCell::<F, S, P>::VTABLE,
                    join_waker: UnsafeCell::new(None),
                    prev: Cell::new(None),
                    next: Cell::new(None),
                    #[cfg(all(tokio_unstable, feature = "tracing"))]
                    span_id: std::sync::atomic::AtomicU64::new(0),
                },
                scheduler: UnsafeCell::new(ManuallyDrop::new(scheduler)),
            },
            stage: UnsafeCell::new(Stage::Running(future)),
        },
        _pad: P::new(),
    };
    // `TaskCell`, `Head` and `Prefix` are `repr(C)` with the header first, so the
    // casts give the header.
    match block {
        Some(block) => {
            let block = block.cast::<TaskCell<F, S, P>>();
            // SAFETY: the block's class fits a `TaskCell<F, S, P>` in size and
            // alignment (that is how `CLASS` was chosen), and it holds no live value.
            unsafe { block.as_ptr().write(cell) };
            block.cast::<Header>()
        }
        None => NonNull::from(Box::leak(Box::new(cell))).cast::<Header>(),
    }
}

/// The stage of the task at `ptr`.
///
/// # Safety
/// `ptr` is a live task of types `F` and `S`, and the caller has exclusive access to the stage
/// (the owner thread while the task is not `GONE`, or the handle after `COMPLETE`).
unsafe fn stage<'a, F: Future, S>(ptr: NonNull<Header>) -> &'a mut Stage<F> {
    // SAFETY: per the contract, the block is a `TaskCell<F, S, _>`, which starts with a
    // `Head<F, S>` whatever its padding, and nobody else is in the stage.
    unsafe { &mut *ptr.cast::<Head<F, S>>().as_ref().stage.get() }
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

unsafe fn poll<F: Future, S: Schedule>(ptr: NonNull<Header>, cx: &mut Context<'_>) -> bool {
    // SAFETY: called by `Runnable::run` on the owner thread of a task not yet GONE.
    let stage = unsafe { stage::<F, S>(ptr) };
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
        Err(payload) => {
            // SAFETY: the task is alive (the owner's reference), and its scheduler is
            // an `S`.
            unsafe { header::scheduler::<S>(ptr) }.task_panicked(&*payload);
            Err(payload)
        }
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

unsafe fn drop_stage<F: Future, S>(ptr: NonNull<Header>) -> bool {
    // SAFETY: the caller has exclusive access to the stage (see `stage`).
    let stage = unsafe { stage::<F, S>(ptr) };
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

unsafe fn take_output<F: Future, S>(ptr: NonNull<Header>, out: *mut ()) {
    // SAFETY: the handle calls this after seeing COMPLETE, when the stage is its own.
    let stage = unsafe { stage::<F, S>(ptr) };
    if let Stage::Finished(outcome) = mem::replace(stage, Stage::Consumed) {
        // SAFETY: `out` points at the handle's `Option<thread::Result<F::Output>>`.
        unsafe { *out.cast::<Option<thread::Result<F::Output>>>() = Some(outcome) };
    }
}

unsafe fn dealloc<F: Future, S: Schedule, P: Padding>(ptr: NonNull<Header>) {
    let cell = ptr.cast::<TaskCell<F, S, P>>().as_ptr();
    // SAFETY: the last reference is gone, so the cell is ours. The scheduler is moved
    // out first (the block cache may live in it, and this may be its last reference);
    // being `ManuallyDrop`, it is not dropped again with the rest of the cell.
    let scheduler = unsafe { ManuallyDrop::take((*cell).head.prefix.scheduler.get_mut()) };
    match TaskCell::<F, S, P>::CLASS {
        // SAFETY: the block came from `Box::new` in `allocate`.
        None => drop(unsafe { Box::from_raw(cell) }),
        Some(class) => {
            // SAFETY: every other field is dropped once, in place; then the block,
            // which came from `allocate`'s `take_block(class)`, holds nothing.
            unsafe {
                cell.drop_in_place();
                put_block::<S, P>(&scheduler, class, ptr.cast());
            }
        }
    }
    drop(scheduler);
}
