//! Tasks that have not started yet move to idle loops.
//!
//! A task's first turn, when its future is `Send` and it was spawned with `spawn` on
//! its loop's thread, is *movable* (`Runnable::into_movable`): no loop has polled it,
//! so it has no sockets, timers or wakers yet, and it may start on any loop. From its
//! first poll on it stays on the loop that polled it: its wakes go there for life.
//!
//! The owner gives, nobody steals: only the loop's own thread ever touches its run
//! queue, so the queue stays free of atomic operations. A loop gives
//! - after a task's turn, if movable tasks are queued, something else is queued too (so
//!   the next one would wait), and another loop of the group is idle (spinning or
//!   parked): half its movable tasks, newest first, to that loop ([`after_turn`]);
//!   for a burst of more than [`SMALL_BURST`], only once one of them has run long. A
//!   chain of spawns (each task spawns the next and ends) never has two tasks queued,
//!   and stays put;
//! - on entering `block_in_place`: every movable task, spread over the group's other
//!   loops, since this one runs nothing until the closure returns ([`enter_blocking`]).
//!
//! Moving a task rewrites its scheduler (`Runnable::rebind`), which a concurrent
//! cancel would read: a task that a cancel or a wake has reached stays.

use std::sync::Arc;

use crate::core::Core;
use crate::peers::Peers;
use crate::shared::{LoopRunnable, Shared};

/// Up to this many movable tasks queued, a loop hands half of them to an idle peer
/// after any turn: a task that spawns a few jobs and awaits them gets them run in
/// parallel at once. More than this is a burst, which is handed off only once one of
/// its tasks has shown, by a first turn of at least [`LONG_TURN_TICKS`], that the
/// burst is worth a second thread: nothing tells a 100 ms job from a 100 ns one
/// before it runs, and moving 5,000 of 10,000 tiny tasks (their handles, their blocks)
/// costs their spawner more than a second thread saves.
pub(crate) const SMALL_BURST: usize = 64;

/// A first turn at least this long (in `sys::busy_ticks`: about 5 to 20 µs on a
/// time-stamp counter of 1 to 4 GHz) marks the movable tasks queued with it as worth
/// spreading.
pub(crate) const LONG_TURN_TICKS: u64 = 20_000;

/// Called after a turn while `core.local.movable` is non-zero; `long_first_turn`: the
/// turn was a movable task's first and lasted [`LONG_TURN_TICKS`] or more. See the
/// module docs.
#[inline]
pub(crate) fn after_turn(core: &Core, long_first_turn: bool) {
    let Some((peers, me)) = core.shared.peers.get() else {
        return;
    };
    if core.local.run_queue_len() < 2
        || (core.local.movable.get() > SMALL_BURST && !long_first_turn)
        || !peers.any_idle_but(*me)
    {
        return;
    }
    give_to_idle(core, peers, *me);
}

#[cold]
fn give_to_idle(core: &Core, peers: &Peers<Shared>, me: usize) {
    let Some((_, taker)) = peers.claim_idle(me) else {
        return;
    };
    let half = core.local.movable.get().div_ceil(2);
    give(core, &taker, half);
}

/// Moves up to `n` movable runnables from the back of the run queue to `taker`'s
/// inbox; returns how many moved. One that cannot move goes back to the run queue.
fn give(core: &Core, taker: &Arc<Shared>, n: usize) -> usize {
    let taken = core
        .local
        .run_queue
        .borrow_mut()
        .take_last_runnables(n, LoopRunnable::is_movable);
    core.local
        .movable
        .set(core.local.movable.get().saturating_sub(taken.len()));
    let mut moved = Vec::with_capacity(taken.len());
    for runnable in taken {
        // SAFETY: this is the thread of the loop whose run queue held the runnable.
        match unsafe { runnable.rebind(taker) } {
            Ok(runnable) => moved.push(runnable),
            Err(runnable) => core.local.push_movable(runnable),
        }
    }
    let count = moved.len();
    #[cfg(tokio_unstable)]
    if count != 0 {
        taker.unstable.count_steal(count);
    }
    taker.schedule_new_remote_all(moved);
    count
}

/// What [`enter_blocking`] marked: undone by [`leave_blocking`].
pub(crate) struct Blocked {
    peers: Arc<Peers<Shared>>,
    me: usize,
    /// The mark is this call's: the loop was not blocked yet. A `block_in_place` on a
    /// stand-in of a loop already blocked (`stand_in.rs`) nests inside the first one
    /// and ends before it (the loop's thread gets its state back only after the
    /// stand-in's closure returned), so the outermost call unmarks.
    outermost: bool,
}

/// This loop's thread is about to block in place: marks the loop blocked (new work
/// avoids it) and hands every movable task to the group's other loops, idle ones
/// first, then round-robin over those not blocked. `None` for a loop without peers.
pub(crate) fn enter_blocking(core: &Core) -> Option<Blocked> {
    let (peers, me) = core.shared.peers.get()?;
    let (peers, me) = (peers.clone(), *me);
    // Only the thread that owns the loop's state marks or unmarks it: the bit is read
    // and set without a race.
    let outermost = !peers.is_blocked(me);
    peers.set_blocked(me, true);
    let mut left = core.local.movable.get();
    let mut next = me;
    let mut tries = 0;
    while left > 0 && tries < 2 * peers.len() {
        tries += 1;
        let (taker, share) = match peers.claim_idle(me) {
            // An idle taker gets half of what is left, so that others get some too.
            Some((_, taker)) => (taker, left.div_ceil(2)),
            None => {
                next = (next + 1) % peers.len();
                if next == me || peers.is_blocked(next) {
                    continue;
                }
                match peers.member(next) {
                    Some(taker) => (taker, left),
                    None => continue,
                }
            }
        };
        let moved = give(core, &taker, share);
        if moved == 0 {
            break;
        }
        left = left.saturating_sub(moved);
    }
    Some(Blocked { peers, me, outermost })
}

/// The closure of `block_in_place` returned: the loop takes work again once the
/// outermost one has.
pub(crate) fn leave_blocking(blocked: Blocked) {
    if blocked.outermost {
        blocked.peers.set_blocked(blocked.me, false);
    }
}
