//! The part of a task every handle sees, whatever its future and its loop.

use std::any::TypeId;
use std::cell::{Cell, UnsafeCell};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::{Context, Waker};

use crate::sync::AtomicUsize;

/// The type-erased start of every task block. Everything outside `raw.rs` reaches a
/// task through `NonNull<Header>` and the [`Vtable`], so a runnable, a join handle and
/// a waker carry neither the future's type nor the loop's.
#[repr(C)]
pub(crate) struct Header {
    /// What other threads see; bits and transitions in `state.rs`.
    pub(super) state: AtomicUsize,
    /// The id the spawner gave the task (0 if none); never changes.
    pub(super) id: u64,
    /// Owner thread only; bits and transitions in `state.rs`.
    pub(super) local: Cell<u8>,
    pub(super) vtable: &'static Vtable,
    /// The `Task<T>` handle's waker; `state::JOIN_WAKER` says who may touch it.
    pub(super) join_waker: UnsafeCell<Option<Waker>>,
    /// Neighbours in the owner's [`TaskList`](super::TaskList), owner thread only.
    pub(super) prev: Cell<Option<NonNull<Header>>>,
    pub(super) next: Cell<Option<NonNull<Header>>>,
    /// The `tracing` id of the task's `runtime.spawn` span, 0 while it has none: set
    /// once by whoever polls the task ([`record_span_id`](super::record_span_id)), read
    /// by its wakers on any thread, which emit tokio's waker events only once it is set.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    pub(super) span_id: std::sync::atomic::AtomicU64,
}

/// The operations that need the future's or the loop's type.
pub(super) struct Vtable {
    /// Polls the future; on `Ready` (or a panic) stores the outcome and returns true.
    pub(super) poll: unsafe fn(NonNull<Header>, &mut Context<'_>) -> bool,
    /// Drops whatever the stage holds (the future or an untaken output). Returns true
    /// when it was the future and its destructor panicked: the panic is then stored
    /// as the task's outcome.
    pub(super) drop_stage: unsafe fn(NonNull<Header>) -> bool,
    /// Moves the outcome into `*(out as *mut Option<thread::Result<T>>)`.
    pub(super) take_output: unsafe fn(NonNull<Header>, *mut ()),
    /// Wakes the task; `owned`: the caller hands over a reference.
    pub(super) wake: unsafe fn(NonNull<Header>, bool),
    /// Frees the block.
    pub(super) dealloc: unsafe fn(NonNull<Header>),
    /// The type of the task's scheduler. A function's address cannot tell it: the
    /// same generic function instantiated in two crates (or codegen units) has two
    /// addresses.
    pub(super) scheduler_type: fn() -> TypeId,
}

/// True if the task's scheduler is an `S`: then [`scheduler::<S>`](scheduler) may be
/// read.
#[inline]
pub(super) fn is_scheduled_by<S: 'static>(h: &Header) -> bool {
    (h.vtable.scheduler_type)() == TypeId::of::<S>()
}

/// The header and the loop's scheduler value: the part of a block whose layout does
/// not depend on the future.
#[repr(C)]
pub(super) struct Prefix<S> {
    pub(super) header: Header,
    /// Taken out by `dealloc` (the loop's block cache may live in it); never dropped
    /// in place. Written once more only by [`replace_scheduler`], before the task's
    /// first poll, while nobody else may read it (`state::begin_move`).
    pub(super) scheduler: UnsafeCell<ManuallyDrop<S>>,
}

/// The header at `ptr`.
///
/// # Safety
/// The caller holds (or borrows) a reference to the task.
pub(super) unsafe fn header<'a>(ptr: NonNull<Header>) -> &'a Header {
    // SAFETY: a held reference keeps the block alive.
    unsafe { ptr.as_ref() }
}

/// The scheduler of the task at `ptr`.
///
/// # Safety
/// As [`header`], and the task was allocated with scheduler type `S`.
pub(super) unsafe fn scheduler<'a, S>(ptr: NonNull<Header>) -> &'a S {
    // SAFETY: every block starts with a `Prefix<S>` (`repr(C)`, header first) for
    // the `S` it was allocated with; the reference keeps it alive. The scheduler is
    // only written by `replace_scheduler`, when no reader can exist.
    unsafe { &*ptr.cast::<Prefix<S>>().as_ref().scheduler.get() }
}

/// Puts `new` in place of the scheduler of the task at `ptr`; returns the old one.
///
/// # Safety
/// As [`scheduler`], and no reference to the scheduler is alive nor can be taken until
/// this returns: the caller set `state::MOVING` on a task that was never polled and
/// whose turn it holds.
pub(super) unsafe fn replace_scheduler<S>(ptr: NonNull<Header>, new: S) -> S {
    // SAFETY: per the contract, this is the only access to the cell meanwhile.
    let slot = unsafe { &mut *ptr.cast::<Prefix<S>>().as_ref().scheduler.get() };
    ManuallyDrop::into_inner(std::mem::replace(slot, ManuallyDrop::new(new)))
}
