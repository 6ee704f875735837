//! A task's turn to run (what sits in the run queue and the inbox), what a task needs
//! of the executor that runs its turns (`Schedule`), and the two ways a wake makes a
//! turn: on the owner's thread with plain loads and stores, from any other thread as a
//! remote runnable. `Schedule` and `Runnable` name each other, so they share this file;
//! the task list's closing walks, which make turns, are here for the same reason.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Waker};

use super::header::{Header, header, is_scheduled_by, replace_scheduler, scheduler};
use super::list::TaskList;
use super::state::{self, AfterPoll, CLOSED, COMPLETE, ref_dec, ref_dec_setting, wake_join_waker};
use super::waker::{from_waker_data, is_task_waker, raw_waker};
use crate::block_cache::{BlockCache, LocalBlocks};

/// What a task needs of the executor it belongs to: the event loop (its one
/// implementation in this crate), or another executor that keeps the same rule, one
/// owner thread per task.
///
/// The scheduler value (one `Arc` for the executor, say) is stored in every task's
/// block; the local half ([`Schedule::Local`]) exists only on the owner's thread. A
/// task's future is polled (by [`Runnable::run`]) and dropped only on its owner's
/// thread; wakes from that thread go to [`schedule_local`](Self::schedule_local) with
/// plain loads and stores, and wakes from any other thread to
/// [`schedule_remote`](Self::schedule_remote), as runnables of their own.
///
/// # Safety
/// The task layer trusts the owner check for the soundness of its unsynchronised state:
/// - [`with_current`](Self::with_current) passes a local half only on the thread that
///   owns it, and [`is_local`](Self::is_local) is true only for the local half of this
///   scheduler's own owner thread, so that every runnable run with a given local half
///   runs on one thread at a time;
/// - a local runnable (from [`spawn_unchecked`](super::spawn_unchecked) or given to
///   [`schedule_local`](Self::schedule_local)) is run or dropped on the owner's thread
///   (the first hand-off from the spawning thread excepted, as `spawn_unchecked`
///   says); a runnable given to [`schedule_remote`](Self::schedule_remote) may be run
///   on the owner's thread or dropped anywhere.
pub unsafe trait Schedule: Clone + Send + Sync + Sized + 'static {
    /// The owner thread's half of the executor.
    type Local;

    /// Whether tasks spawned from another thread are padded to a cache-line pair of
    /// their own and take their blocks from [`remote_blocks`](Self::remote_blocks):
    /// worth it where such tasks, spawned back to back, then run at the same time on
    /// different threads (see `raw::TaskCell`).
    const PAD_REMOTE_SPAWNS: bool = false;

    /// Calls `f` with the local half of the executor the current thread drives, if any.
    fn with_current<R>(f: impl FnOnce(Option<&Self::Local>) -> R) -> R;

    /// True if `local` is this executor's local half: the owner check.
    fn is_local(&self, local: &Self::Local) -> bool;

    /// Calls `f` with the local half if the current thread is this executor's owner.
    ///
    /// `self` stays borrowed while `f` runs: a caller whose `f` may free the task
    /// holding `self` uses [`with_current`](Self::with_current) and
    /// [`is_local`](Self::is_local) instead.
    fn with_local<R>(&self, f: impl FnOnce(&Self::Local) -> R) -> Option<R> {
        Self::with_current(|local| local.filter(|local| self.is_local(local)).map(f))
    }

    /// Queues a turn of a task on its owner's thread (at the back of the run queue).
    ///
    /// Called inside `wake()`, whose caller may hold a lock that the task's destructor
    /// takes (h2 wakes its connection task with its streams' lock held), so this never
    /// drops the runnable, even once the executor has stopped: a stopped executor's
    /// sweep closes what is queued, outside every wake, as tokio's does.
    fn schedule_local(local: &Self::Local, runnable: Runnable<Self>);

    /// Queues a turn of a task that deferred its own wake while being polled, to run
    /// after the executor's next I/O poll. Never dropped here, as for
    /// [`schedule_local`](Self::schedule_local). An executor that does not defer (the
    /// default) queues it at once.
    fn defer_local(local: &Self::Local, runnable: Runnable<Self>) {
        Self::schedule_local(local, runnable);
    }

    /// Sends a turn of a task from another thread. Dropping the runnable here is
    /// allowed only where it holds nothing but a reference (its executor has closed
    /// every task), for the same reason as [`schedule_local`](Self::schedule_local).
    fn schedule_remote(&self, runnable: Runnable<Self>);

    /// Blocks for tasks spawned from other threads; `None` takes them from the
    /// allocator.
    fn remote_blocks(&self) -> Option<&BlockCache> {
        None
    }

    /// Blocks for tasks spawned on the owner's thread; `None` takes them from the
    /// allocator.
    fn local_blocks(local: &Self::Local) -> Option<&LocalBlocks> {
        let _ = local;
        None
    }

    /// The owner's list of waiting tasks: the executor queues them all
    /// ([`TaskList::queue_all`]) when it stops, to drop their futures on its thread.
    fn task_list(local: &Self::Local) -> &TaskList;

    /// A task's future panicked, on the owner's thread; `payload` is what the task's
    /// handle will report.
    fn task_panicked(&self, payload: &(dyn std::any::Any + Send)) {
        let _ = payload;
    }
}

/// One turn of a task.
///
/// Two kinds: a *local* runnable stands for the task's `QUEUED` bit and borrows the
/// owner's reference (at most one exists per task); a *remote* runnable is a wake from
/// another thread (`NOTIFIED`) with a reference of its own, and becomes a turn only if
/// the task is idle when the owner gets to it. Dropping a local runnable unrun drops
/// the future (on the owner's thread, or on the spawning thread for a task that was
/// never queued); dropping a remote one only releases its reference, so it may be
/// dropped anywhere.
pub struct Runnable<S: Schedule> {
    /// The header's address, with [`REMOTE_TAG`] set for a remote runnable: one word,
    /// so a queue push is one store.
    tagged: NonNull<u8>,
    _scheduler: PhantomData<S>,
}

/// Headers are at least 8-byte aligned, so the low bits are free.
const REMOTE_TAG: usize = 1;
/// On a local runnable: the task was spawned movable and has never been polled, so
/// its owner may hand it to another executor ([`Runnable::rebind`]). The turns after
/// the first are made afresh by the owner, without it.
const MOVABLE_TAG: usize = 2;
const TAGS: usize = REMOTE_TAG | MOVABLE_TAG;

// SAFETY: a local runnable crosses threads only before its task's first poll: on its
// first hand-off (spawned on one thread, queued on its loop), when its future is `Send`
// or not built yet (`spawn_pinned`), or when a movable first turn (`Send` future and
// output) is handed to another executor by `rebind`; after the first poll it stays on
// the owner's thread, unless the whole executor changes threads, which the loop allows
// only when every task it holds is `Send` (`EventLoop::move_to_current_thread`). A
// remote runnable never touches the future or the owner-only state off the owner's
// thread.
unsafe impl<S: Schedule> Send for Runnable<S> {}

impl<S: Schedule> Runnable<S> {
    /// A local runnable.
    ///
    /// # Safety
    /// The caller just set the task's `QUEUED` bit (or allocated it, which starts
    /// queued), and the task's scheduler is an `S`.
    pub(super) unsafe fn from_scheduled(ptr: NonNull<Header>) -> Self {
        Runnable {
            tagged: ptr.cast(),
            _scheduler: PhantomData,
        }
    }

    /// A remote runnable.
    ///
    /// # Safety
    /// The caller set `NOTIFIED` and gives the runnable a reference; the task's
    /// scheduler is an `S`.
    pub(super) unsafe fn from_notified(ptr: NonNull<Header>) -> Self {
        const { assert!(align_of::<Header>() > TAGS) };
        Runnable {
            tagged: ptr.cast::<u8>().map_addr(|a| a | REMOTE_TAG),
            _scheduler: PhantomData,
        }
    }

    pub(super) fn ptr(&self) -> NonNull<Header> {
        let untagged = self.tagged.as_ptr().map_addr(|a| a & !TAGS);
        // SAFETY: the header's address is non-null and has the tag bit clear.
        unsafe { NonNull::new_unchecked(untagged.cast()) }
    }

    /// True for a turn made by a wake from another thread: it holds a reference of its
    /// own, and a task it names is also listed or has a local turn while it lives.
    pub(crate) fn is_remote(&self) -> bool {
        self.tagged.addr().get() & REMOTE_TAG != 0
    }

    /// Marks the task `Send` (see [`is_send`](Self::is_send)).
    ///
    /// # Safety
    /// The runnable [`spawn_unchecked`](super::spawn_unchecked) just returned, before
    /// it or the task's handle was given to anyone, for a `Send` future with a `Send`
    /// output.
    pub unsafe fn mark_send(&self) {
        // SAFETY: the runnable borrows the owner's reference.
        let h = unsafe { header(self.ptr()) };
        // Nobody else has seen the task yet, so a plain load and store cannot lose a
        // concurrent change.
        h.state.store(h.state.load(Relaxed) | state::SEND, Relaxed);
    }

    /// True if the task's future and output are `Send` ([`mark_send`](Self::mark_send)).
    pub fn is_send(&self) -> bool {
        // SAFETY: the runnable borrows or holds a reference.
        unsafe { header(self.ptr()) }.state.load(Relaxed) & state::SEND != 0
    }

    /// The id the task was spawned with.
    pub fn id(&self) -> u64 {
        // SAFETY: a runnable holds or borrows a reference.
        unsafe { header(self.ptr()) }.id
    }

    /// True for the first turn of a task spawned movable ([`into_movable`](Self::into_movable)):
    /// its owner may still hand it to another executor.
    #[inline]
    pub fn is_movable(&self) -> bool {
        self.tagged.addr().get() & MOVABLE_TAG != 0
    }

    /// Marks the first turn of a new task as movable: its owner may hand it to another
    /// executor of the same type before polling it ([`rebind`](Self::rebind)).
    ///
    /// # Safety
    /// `self` is the local runnable [`spawn_unchecked`](super::spawn_unchecked) just
    /// returned, for a `Send` future with a `Send` output (any executor's thread may
    /// then poll it, and drop it).
    pub unsafe fn into_movable(self) -> Self {
        let this = ManuallyDrop::new(self);
        debug_assert!(!this.is_remote());
        Runnable {
            tagged: this.tagged.map_addr(|a| a | MOVABLE_TAG),
            _scheduler: PhantomData,
        }
    }

    /// Hands a movable first turn to the executor `to`: from now on the task belongs to
    /// `to` (its wakes go there, its future is polled there), and the caller queues the
    /// runnable there (say, through `to`'s remote queue). Gives the runnable back
    /// unchanged if the task cannot move: it is not movable, or a cancel or a wake has
    /// reached it (a thread may be reading its scheduler).
    ///
    /// # Safety
    /// On the task's owner's thread (the one whose queue held the runnable).
    pub unsafe fn rebind(self, to: &S) -> Result<Self, Self> {
        if !self.is_movable() {
            return Err(self);
        }
        let ptr = self.ptr();
        // SAFETY: the runnable borrows the owner's reference.
        let h = unsafe { header(ptr) };
        if !state::begin_move(h) {
            return Err(self);
        }
        // SAFETY: `MOVING` is set on a task never polled (so no waker exists) whose one
        // turn is `self`: nobody reads the scheduler until `end_move`. The old value is
        // dropped here, on its owner's thread.
        drop(unsafe { replace_scheduler::<S>(ptr, to.clone()) });
        state::end_move(h);
        Ok(self)
    }

    /// Polls the task once on its owner's thread, whose local half is `local`. A task
    /// that woke itself while being polled goes back to the run queue; one that waits
    /// for the first time joins the owner's task list.
    ///
    /// A panic of the future is caught here: it becomes the task's outcome, seen by
    /// [`Schedule::task_panicked`] and resumed where the task is awaited. Inlined into
    /// the loop's panic guard, which then holds the whole turn in one frame.
    ///
    /// # Safety
    /// `local` is the local half of the task's own loop (which exists only on that
    /// loop's thread): the future is polled on its owner's thread only.
    #[inline]
    pub unsafe fn run(self, local: &S::Local) {
        let this = ManuallyDrop::new(self);
        let ptr = this.ptr();
        // SAFETY: a runnable holds or borrows a reference.
        let h = unsafe { header(ptr) };
        if this.is_remote() {
            let idle = state::begin_remote_turn(h);
            // SAFETY: the remote reference is released. If the task is not GONE the
            // owner's reference keeps it alive below; if it is, `h` is not used again.
            unsafe { ref_dec(ptr) };
            if !idle {
                return;
            }
        }
        if state::is_cancelled(h) {
            // SAFETY: the owner's thread, the task is not GONE.
            unsafe { close::<S>(ptr, Some(local)) };
            return;
        }
        state::begin_poll(h);
        // The waker borrows the owner's reference: never dropped, so never released.
        // SAFETY: the vtable's functions uphold the `RawWaker` contract.
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(raw_waker(ptr)) });
        let mut cx = Context::from_waker(&waker);
        // SAFETY: the owner's thread polls a task that is not GONE.
        if unsafe { (h.vtable.poll)(ptr, &mut cx) } {
            // SAFETY: the outcome is stored; this thread owns the task.
            unsafe { finish::<S>(ptr, COMPLETE, Some(local)) };
            return;
        }
        match state::end_poll(h) {
            // SAFETY: `end_poll` kept QUEUED for this runnable.
            AfterPoll::Requeue => S::schedule_local(local, unsafe { Runnable::from_scheduled(ptr) }),
            // SAFETY: `end_poll` set QUEUED for this runnable.
            AfterPoll::Defer => S::defer_local(local, unsafe { Runnable::from_scheduled(ptr) }),
            AfterPoll::DeferAndList => {
                // SAFETY: the owner's thread, the task is live and not listed (`end_poll`
                // set LISTED); then as above.
                unsafe {
                    S::task_list(local).push(ptr);
                    S::defer_local(local, Runnable::from_scheduled(ptr));
                }
            }
            // SAFETY: the owner's thread, the task is live and not listed.
            AfterPoll::List => unsafe { S::task_list(local).push(ptr) },
            AfterPoll::Wait => {}
        }
    }
}

impl<S: Schedule> Runnable<S> {
    /// Drops this turn unrun, naming the owner's local half: a local runnable's task is
    /// closed (its future dropped here), a remote one only gives back its reference.
    ///
    /// Dropping a runnable closes its task too, but finds the owner's list through
    /// [`Schedule::with_local`], that is, through whatever the current thread reports at
    /// that moment. An executor closing its tasks while user code runs (a closing
    /// future's destructor may enter or leave something) uses this instead, so that
    /// each task leaves the list it is in.
    ///
    /// # Safety
    /// As [`run`](Self::run): `local` is the local half of the task's own executor.
    pub unsafe fn cancel(self, local: &S::Local) {
        // SAFETY: per the contract; the runnable is not used after.
        unsafe { ManuallyDrop::new(self).discard(Some(local)) };
    }

    /// Gives up this turn unrun: a remote runnable releases its reference, a local one
    /// closes its task.
    ///
    /// # Safety
    /// Called once. A local runnable: on the owner's thread (whose local half `local`
    /// is, if given), or on the spawning thread before the task was ever queued.
    unsafe fn discard(&self, local: Option<&S::Local>) {
        if self.is_remote() {
            // SAFETY: the remote reference is released, once.
            unsafe { ref_dec(self.ptr()) };
        } else {
            // SAFETY: a local runnable's task is not GONE, and per the contract this is
            // the thread that may drop its future.
            unsafe { close::<S>(self.ptr(), local) };
        }
    }
}

impl<S: Schedule> Drop for Runnable<S> {
    fn drop(&mut self) {
        // SAFETY: a local runnable is dropped unrun on the owner's thread, or on the
        // spawning thread before the task was ever queued (see `Send` above).
        unsafe { self.discard(None) };
    }
}

/// Drops the future without an outcome (cancelled, or the loop is terminating), unless
/// its destructor panics: that panic becomes the outcome.
///
/// # Safety
/// On the owner thread (or the only thread that ever held the task), task not GONE,
/// scheduler type `S`. `local`: the owner's local half, if the caller has it.
pub(super) unsafe fn close<S: Schedule>(ptr: NonNull<Header>, local: Option<&S::Local>) {
    // SAFETY: the owner's reference is still held.
    let h = unsafe { header(ptr) };
    // GONE first: wakes from inside the future's destructor are ignored.
    state::set_done(h);
    // SAFETY: the owner thread has the stage.
    let panicked = unsafe { (h.vtable.drop_stage)(ptr) };
    // A destructor's panic was stored as the outcome: the task completed with it.
    // SAFETY: per the contract.
    unsafe { finish::<S>(ptr, if panicked { COMPLETE } else { CLOSED }, local) };
}

/// Marks the task GONE, takes it out of the owner's list, publishes `outcome`
/// (COMPLETE or CLOSED), tells the handle, and releases the owner's reference. An
/// output nobody can take any more is dropped here, on the task's own thread.
///
/// # Safety
/// On the owner thread; for COMPLETE the outcome is stored, for CLOSED the stage is
/// already empty. Scheduler type `S`.
pub(super) unsafe fn finish<S: Schedule>(ptr: NonNull<Header>, outcome: usize, local: Option<&S::Local>) {
    // SAFETY: the owner's reference is still held.
    let h = unsafe { header(ptr) };
    if state::set_done(h) {
        // SAFETY: the owner's thread; the task is listed.
        unsafe { unlist::<S>(ptr, local) };
    }
    if state::handle_gone(h) {
        // No handle, and none can come back (HANDLE is only ever cleared): the output
        // is this thread's to drop, and one read-modify-write publishes the outcome
        // and releases the owner's reference.
        // SAFETY: the stage is this thread's; only the owner sets the outcome bits,
        // once; `ptr` is not used after.
        unsafe {
            if outcome == COMPLETE {
                (h.vtable.drop_stage)(ptr);
            }
            ref_dec_setting(ptr, outcome);
        }
        return;
    }
    let prev = state::publish_outcome(h, outcome);
    if outcome == COMPLETE && state::handle_gone_in(prev) {
        // The handle went between the two looks: the stage is this thread's.
        // SAFETY: as above.
        unsafe { (h.vtable.drop_stage)(ptr) };
    } else {
        // SAFETY: the outcome is published.
        unsafe { wake_join_waker(h, prev) };
    }
    // SAFETY: the owner's reference is released; `ptr` is not used after.
    unsafe { ref_dec(ptr) };
}

/// Takes a listed task out of its owner's list.
///
/// # Safety
/// On the owner's thread; the task is listed; scheduler type `S`.
unsafe fn unlist<S: Schedule>(ptr: NonNull<Header>, local: Option<&S::Local>) {
    // SAFETY: the caller holds the owner's reference.
    let h = unsafe { header(ptr) };
    state::set_unlisted(h);
    // SAFETY: as above, and the task is listed in its owner's list.
    let remove = |local: &S::Local| unsafe { S::task_list(local).remove(ptr) };
    match local {
        Some(local) => remove(local),
        None => {
            // SAFETY: the scheduler is an `S`.
            let listed_here = unsafe { scheduler::<S>(ptr) }.with_local(remove);
            debug_assert!(
                listed_here.is_some(),
                "a listed task was finished off its owner's thread"
            );
        }
    }
}

/// Wakes the task at `ptr`, whose loop type is `S`. `owned`: the caller hands over a
/// reference (a `Waker` consumed by `wake`); otherwise it only borrows one.
///
/// # Safety
/// The caller holds a reference to the task, which was allocated with scheduler `S`.
pub(super) unsafe fn wake<S: Schedule>(ptr: NonNull<Header>, owned: bool) {
    // SAFETY: the caller's reference keeps the task alive.
    let h = unsafe { header(ptr) };
    // The owner check borrows the scheduler from the task only for itself: queueing
    // the task may free it (its loop has terminated), and with it the scheduler.
    let on_owner = S::with_current(|local| match local {
        // SAFETY: per the contract.
        Some(local) if unsafe { scheduler::<S>(ptr) }.is_local(local) => {
            // SAFETY: the caller's reference; `local` is the owner's local half.
            unsafe { queue_local::<S>(local, ptr) };
            true
        }
        _ => false,
    });
    if on_owner {
        if owned {
            // SAFETY: the handed-over reference is released; `ptr` is not used after.
            unsafe { ref_dec(ptr) };
        }
        return;
    }
    if !state::notify_remote(h, owned) {
        if owned {
            // SAFETY: as above.
            unsafe { ref_dec(ptr) };
        }
        return;
    }
    // The runnable holds a reference of its own (the caller's, or one just counted).
    // Keep the loop alive for the whole send: once sent, the runnable may run and the
    // task be freed (with its scheduler) before `schedule_remote` returns.
    // SAFETY: per the contract.
    let scheduler = unsafe { scheduler::<S>(ptr) }.clone();
    // SAFETY: `notify_remote` set NOTIFIED and gave the runnable its reference.
    scheduler.schedule_remote(unsafe { Runnable::from_notified(ptr) });
}

/// A wake on the owner's thread: queues a local runnable unless one is queued or the
/// task is being polled or done. Takes the pointer, not a reference: queueing may free
/// the task.
///
/// # Safety
/// The caller holds a reference to the task, whose scheduler is an `S` and whose
/// owner's local half is `local` (so this is the owner's thread).
#[inline]
pub(super) unsafe fn queue_local<S: Schedule>(local: &S::Local, ptr: NonNull<Header>) {
    // SAFETY: per the contract.
    if state::wake_local(unsafe { header(ptr) }) {
        // SAFETY: `wake_local` just set QUEUED for this runnable.
        S::schedule_local(local, unsafe { Runnable::from_scheduled(ptr) });
    }
}

/// The task of `waker`, if it is one of the tasks of the executor whose local half is
/// `local` (so this is the owner's thread): a task's waker, of scheduler type `S`, whose
/// scheduler is `local`'s. The waker's reference keeps it alive while the caller
/// borrows `waker`.
#[inline]
fn local_task<S: Schedule>(local: &S::Local, waker: &Waker) -> Option<NonNull<Header>> {
    if !is_task_waker(waker) {
        return None;
    }
    // SAFETY: the waker has `WAKER_VTABLE`.
    let ptr = unsafe { from_waker_data(waker.data()) };
    // SAFETY: the waker holds a reference for the whole call.
    if !is_scheduled_by::<S>(unsafe { header(ptr) }) {
        // A task of another executor type.
        return None;
    }
    // SAFETY: the task's scheduler is an `S`.
    unsafe { scheduler::<S>(ptr) }.is_local(local).then_some(ptr)
}

/// Defers the task of `waker` to its executor's next I/O poll, if it is one of
/// `local`'s executor's tasks and is being polled right now (it yields, or spent its
/// budget): when the poll ends, its turn goes to [`Schedule::defer_local`]. No
/// reference is taken and no atomic is touched, where deferring a waker costs a clone
/// and a wake. False, doing nothing, for any other waker.
#[inline]
pub(crate) fn defer_in_place<S: Schedule>(local: &S::Local, waker: &Waker) -> bool {
    let Some(ptr) = local_task::<S>(local, waker) else {
        return false;
    };
    // The fast path stands for the waker's `wake_by_ref`: it is reported as one.
    // SAFETY: the waker's reference keeps the task alive.
    unsafe { super::waker::trace_op(ptr, "waker.wake_by_ref") };
    // SAFETY: the waker's reference keeps the task alive; on the owner's thread (`local`
    // is its local half), its local bits are this thread's.
    state::defer_local(unsafe { header(ptr) })
}

/// Wakes by reference the task of `waker` if it is one of `local`'s loop's tasks,
/// without `wake`'s thread-local lookup or indirect call: for the loop dispatching I/O
/// events, which already holds its local half. False, doing nothing, for any other
/// waker.
#[inline]
pub(crate) fn wake_in_place<S: Schedule>(local: &S::Local, waker: &Waker) -> bool {
    let Some(ptr) = local_task::<S>(local, waker) else {
        return false;
    };
    // The fast path stands for the waker's `wake_by_ref`: it is reported as one.
    // SAFETY: the waker's reference keeps the task alive.
    unsafe { super::waker::trace_op(ptr, "waker.wake_by_ref") };
    // SAFETY: the waker's reference; the scheduler is an `S` whose local half is
    // `local`, which exists only on the owner's thread.
    unsafe { queue_local::<S>(local, ptr) };
    true
}

// The list's walks that make turns: here, beside `Runnable`, so that the list itself
// names no turn.
impl TaskList {
    /// Closes every listed task, one at a time, until the list is empty: each leaves
    /// the list, and one that is idle has its future dropped here. A queued one is
    /// closed by its runnable (the caller cancels those with [`Runnable::cancel`]), one
    /// being polled at the end of its poll (its executor then cancels the runnable it
    /// is given).
    ///
    /// Unlike a wake, this does not go through [`Schedule::with_current`], so it does
    /// not depend on what the current thread reports as its executor while the closing
    /// futures' destructors run.
    ///
    /// # Safety
    /// On the owner's thread, with `local` the owner's local half, whose list this is.
    pub unsafe fn cancel_all<S: Schedule>(&self, local: &S::Local) {
        // SAFETY: on the owner's thread, as the caller promises.
        while let Some(ptr) = unsafe { self.pop() } {
            // SAFETY: a task taken out of the list is alive until its future is dropped.
            let h = unsafe { header(ptr) };
            if state::wake_local(h) {
                // SAFETY: `wake_local` just set QUEUED for this runnable; `local` is the
                // owner's.
                unsafe { Runnable::<S>::from_scheduled(ptr).cancel(local) };
            }
        }
    }

    /// Queues a turn of every listed task, one at a time, until the list is empty:
    /// each leaves the list, and one that is idle gets a local runnable, given to
    /// [`Schedule::schedule_local`] with `local` named. Runs no destructor: the
    /// executor then drops what it queued (which closes each task), outside any wake,
    /// and keeps doing so while those destructors wake or queue more.
    ///
    /// Like [`cancel_all`](Self::cancel_all), this does not go through the wake path,
    /// so it does not depend on what the current thread reports as its executor.
    ///
    /// # Safety
    /// On the owner's thread, with `local` the owner's local half, whose list this is,
    /// and nothing polled meanwhile.
    pub unsafe fn queue_all<S: Schedule>(&self, local: &S::Local) {
        // SAFETY: on the owner's thread, as the caller promises.
        while let Some(ptr) = unsafe { self.pop() } {
            // SAFETY: the owner's reference keeps the task alive for the call; `local`
            // is its owner's.
            unsafe { queue_local::<S>(local, ptr) };
        }
    }
}
