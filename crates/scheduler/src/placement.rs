//! Which loop new work lands on: a spawned task, a new socket, a new timer.
//!
//! The rule is affinity: work started on a loop stays on that loop, so a task and
//! everything it spawns share a thread and wake each other without crossing threads.
//! The one latitude: a `Send` task spawned on a loop may start on an idle loop while no
//! loop has polled it (the reactor's `share_work`), and loops blocked in place are
//! passed over.
//! Work started off every loop (in `block_on` on a plain thread, after
//! `Runtime::enter`) goes to the group's [`next`](crate::EventLoopGroup::next) loop.
//! `with_current_or_next` is that rule, written once: every placement goes through it
//! or, for a spawn through a given runtime handle, through `spawn_loop_of`.
//!
//! One exception spreads connections, as Netty's acceptor hands each new channel to
//! `childGroup.next()`: once a task has accepted a connection
//! ([`connection_accepted`]), its next `spawn` goes to the group's `next()` loop
//! instead of its own. The ordinary tokio accept loop,
//!
//! ```ignore
//! loop {
//!     let (socket, _) = listener.accept().await?;
//!     netloop::spawn(async move { handle(socket).await });
//! }
//! ```
//!
//! then serves its connections on every loop, while all other spawns keep their
//! affinity. The accepted socket is registered at its first use, by the loop that
//! uses it (see `PollEvented::new_deferred`), so the connection's readiness wakes its
//! task on that task's own thread.

use std::cell::Cell;
use std::io;

use netloop_reactor::EventLoopHandle;

use crate::context::{self, NO_RUNTIME, no_runtime};
use crate::group::EventLoopGroup;
use crate::task::id::try_id;

/// No accept is waiting for a spawn on this thread.
const NONE: u64 = 0;
/// An accept by code that runs outside any task (a loop's `block_on` future).
const NO_TASK: u64 = u64::MAX;

thread_local! {
    /// The task on this thread that accepted a connection and has not spawned since,
    /// by id ([`NO_TASK`] for code outside a task); [`NONE`] otherwise. Task ids
    /// start at 1 and never reach `u64::MAX`.
    static ACCEPTED_BY: Cell<u64> = const { Cell::new(NONE) };
}

fn current_task() -> u64 {
    try_id().map_or(NO_TASK, |id| id.as_u64())
}

/// Records that the running task accepted a connection: its next `spawn` on this
/// thread places the new task with the group's chooser (`next()`), not on this loop.
///
/// Called by the net crate's listeners. A task that accepts and handles the
/// connection itself leaves the record behind; it is keyed by task, so another task's
/// spawn on this thread ignores it, and the next accept replaces it.
pub fn connection_accepted() {
    if EventLoopHandle::with_current(|current| current.is_some()) {
        let _ = ACCEPTED_BY.try_with(|a| a.set(current_task()));
    }
}

/// True, once, if the running task accepted a connection since it last spawned.
#[inline]
fn take_accepted() -> bool {
    ACCEPTED_BY
        .try_with(|a| {
            let by = a.get();
            if by == NONE || by != current_task() {
                return false;
            }
            a.set(NONE);
            true
        })
        .unwrap_or(false)
}

thread_local! {
    /// The id of the loop this thread drives while it is inside `block_in_place`
    /// (0 otherwise): that loop runs nothing until the closure returns, so work the
    /// closure spawns goes elsewhere when there is an elsewhere.
    static BLOCKED_LOOP: Cell<u64> = const { Cell::new(0) };
}

/// Runs `f` (the closure of `block_in_place`) with this thread's loop, if any, marked
/// as blocked, and with the thread outside it: a spawn from `f` goes to another loop
/// of the runtime, and `f` may `block_on` (the loop's own tasks run once `f` returns).
pub(crate) fn blocking_in_place<R>(f: impl FnOnce() -> R) -> R {
    struct Unmark(u64);
    impl Drop for Unmark {
        fn drop(&mut self) {
            let _ = BLOCKED_LOOP.try_with(|b| b.set(self.0));
        }
    }
    let blocked = EventLoopHandle::with_current(|l| l.map_or(0, EventLoopHandle::id));
    let _unmark = Unmark(BLOCKED_LOOP.try_with(|b| b.replace(blocked)).unwrap_or(0));
    // The loop's tasks that have not started yet go to the group's other loops, and
    // the loop is marked blocked so that new work avoids it (`block_in_place_scope`).
    // The task's budget does not reach into the closure (tokio stops it there): a
    // `block_on` inside gives its own future a budget per poll.
    // Meanwhile a stand-in thread runs the loop's other `Send` tasks, in this runtime's
    // context.
    let wrap = context::current().ok().map(|rt| -> netloop_reactor::StandInContext {
        Box::new(move |body: &mut dyn FnMut()| {
            let _context = context::set(rt);
            body();
        })
    });
    netloop_reactor::block_in_place_scope(wrap, || netloop_reactor::coop::with_unconstrained(f))
}

/// How a runtime's next loop is chosen for work that leaves this thread's loop.
#[derive(Clone, Copy)]
pub(crate) enum Next {
    /// The group's round-robin, passing over the loop this thread blocks in place
    /// (when the group has another): that loop runs nothing until the closure returns.
    Unblocked,
    /// The group's round-robin as it stands.
    RoundRobin,
    /// A round-robin of this thread's own, which touches no shared counter: timers
    /// made off every loop (a `block_on` body's) spread over the loops without a
    /// read-modify-write of the group's counter each.
    ThreadRoundRobin,
}

thread_local! {
    /// This thread's position in [`Next::ThreadRoundRobin`].
    static THREAD_NEXT: Cell<usize> = const { Cell::new(0) };
}

/// The loop of `group` that `next` picks.
pub(crate) fn next_of(group: &EventLoopGroup, next: Next) -> &EventLoopHandle {
    if matches!(next, Next::ThreadRoundRobin) {
        let i = THREAD_NEXT
            .try_with(|n| n.replace(n.get().wrapping_add(1)))
            .unwrap_or(0);
        if let Some(event_loop) = group.get(i % group.len()) {
            return event_loop;
        }
    }
    let first = group.next();
    if matches!(next, Next::RoundRobin | Next::ThreadRoundRobin) || group.len() == 1 {
        return first;
    }
    // Pass over loops whose thread blocks in place (this thread's among them): they
    // run nothing until the closure returns. If every loop does, the first pick stands
    // (`task::spawn` then runs the task on the blocking pool, see `all_blocked`).
    let blocked_here = BLOCKED_LOOP.try_with(Cell::get).unwrap_or(0);
    let blocked = |l: &EventLoopHandle| l.id() == blocked_here || l.is_blocked_in_place();
    if !blocked(first) {
        return first;
    }
    for _ in 1..group.len() {
        let candidate = group.next();
        if !blocked(candidate) {
            return candidate;
        }
    }
    first
}

/// Calls `f` with this thread's loop if there is one and `stay()` agrees (asked only
/// then), else with the current runtime's loop that `next` picks. `None` (and `f`
/// not called) when neither exists: off every loop and outside any runtime.
///
/// The loop is borrowed, not cloned: a spawn on the thread's own loop touches no
/// reference count.
pub(crate) fn with_current_or_next<R>(
    stay: impl FnOnce() -> bool,
    next: Next,
    f: impl FnOnce(&EventLoopHandle) -> R,
) -> Option<R> {
    let mut f = Some(f);
    EventLoopHandle::with_current(|current| match current {
        Some(current) if stay() => f.take().map(|f| f(current)),
        _ => context::with_current(|rt| rt.and_then(|rt| f.take().map(|f| f(next_of(&rt.group, next))))),
    })
}

/// Calls `f` with the loop a `spawn` from this thread lands on: this thread's loop
/// (affinity) unless its task just accepted a connection, else the current
/// runtime's next loop. `f`'s flag: the loop was chosen by affinity, so the task may
/// still start on an idle loop (`docs/affinity.md`); a task placed by the chooser (a
/// new connection's) stays where it was placed. Panics outside a runtime, as tokio's
/// `spawn` does.
#[track_caller]
pub(crate) fn with_spawn_loop<R>(f: impl FnOnce(&EventLoopHandle, bool) -> R) -> R {
    let mut f = Some(f);
    let out = EventLoopHandle::with_current(|current| match current {
        Some(current) if !take_accepted() => f.take().map(|f| f(current, true)),
        _ => context::with_current(|rt| {
            rt.and_then(|rt| f.take().map(|f| f(next_of(&rt.group, Next::Unblocked), false)))
        }),
    });
    match out {
        Some(out) => out,
        // Here, not in the closure: the panic points at the caller of `spawn`.
        None => no_runtime(),
    }
}

/// The loop a spawn onto the runtime of `group` lands on: this thread's loop if it is
/// one of `group`'s and its task did not just accept a connection (then the flag is
/// true, as for [`with_spawn_loop`]), else `group`'s next.
pub(crate) fn spawn_loop_of(group: &EventLoopGroup) -> (&EventLoopHandle, bool) {
    EventLoopHandle::with_current(|current| current.and_then(|c| group.iter().find(|l| *l == c)))
        .filter(|_| !take_accepted())
        .map_or_else(|| (next_of(group, Next::Unblocked), false), |l| (l, true))
}

/// The loop a new socket registers with now: this thread's loop, else the current
/// runtime's next. An error (not a panic) outside a runtime, naming what to do.
///
/// # Panics
///
/// On a runtime built without `enable_io`, with tokio's message.
#[track_caller]
pub fn registration_loop() -> io::Result<EventLoopHandle> {
    crate::drivers::require_io();
    with_current_or_next(|| true, Next::Unblocked, EventLoopHandle::clone).ok_or_else(|| io::Error::other(NO_RUNTIME))
}

/// The loop a new timer belongs to: this thread's loop, else the current runtime's
/// next in this thread's own round-robin.
///
/// # Panics
///
/// Outside a runtime, and on a runtime built without `enable_time`, with tokio's
/// messages.
#[track_caller]
pub(crate) fn timer_loop() -> EventLoopHandle {
    crate::drivers::require_time();
    match with_current_or_next(|| true, Next::ThreadRoundRobin, EventLoopHandle::clone) {
        Some(event_loop) => event_loop,
        None => no_runtime(),
    }
}

/// The loop a timer of this thread would live on, if the thread is in a runtime with
/// time enabled; `None` elsewhere (no panic).
pub(crate) fn try_timer_loop() -> Option<EventLoopHandle> {
    context::with_current(|rt| {
        rt.filter(|rt| rt.time_enabled)
            .map(|rt| next_of(&rt.group, Next::RoundRobin).clone())
    })
}

/// The loop [`task::spawn_pinned`](crate::task::spawn_pinned) builds its future on:
/// the current runtime's next, in plain round-robin, wherever it is called from.
///
/// # Panics
///
/// Outside a runtime, with tokio's message.
#[track_caller]
pub(crate) fn with_pinned_loop<R>(f: impl FnOnce(&EventLoopHandle) -> R) -> R {
    match context::with_current(|rt| rt.map(|rt| f(next_of(&rt.group, Next::RoundRobin)))) {
        Some(out) => out,
        None => no_runtime(),
    }
}
