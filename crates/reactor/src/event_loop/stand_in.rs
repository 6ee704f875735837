//! `block_in_place` without stopping the loop: while the loop's thread runs the
//! blocking closure, a stand-in thread polls the loop's sockets, runs its `Send` tasks
//! and fires its timers (issue 35).
//!
//! The loop's state (`Core`, its selector included) is owned by one thread at a time:
//! the loop's thread hands it over when it enters the closure (it leaves the loop,
//! `context::outside_loop`, and touches the core no more until the closure returns)
//! and takes it back after the stand-in thread has stopped and been joined (the join
//! orders every write of the stand-in before the loop's next read). The loop's thread
//! had processed its last select's events before it ran the task that blocks, so the
//! stand-in starts from a selector with none pending.
//!
//! The stand-in polls only tasks marked `Send` (`Runnable::is_send`): a `!Send` task
//! may share `Rc`s or other thread-bound state with the task blocking in place, whose
//! closure runs meanwhile, so such tasks wait, set aside, as do closures and due
//! scheduled jobs. Readiness is recorded for every socket, and the `!Send` tasks it
//! wakes run after the closure. Timer wakes fire. The stand-in waits in the selector
//! for a millisecond at most, then looks at the inbox: producers see the loop as awake
//! and send no wake meanwhile. Stopping it writes the loop's waker, which ends that
//! wait at once.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::thread;
use std::time::Duration;

use super::Driver;
use super::run_tasks::run_runnable;
use super::select::dispatch_events;
use crate::clock;
use crate::context;
use crate::core::Core;
use crate::run_queue::Next;
use crate::share_work;
use crate::shared::LoopRunnable;

/// How long an idle stand-in waits for I/O at most before it looks at the inbox again.
const INBOX_CHECK: Duration = Duration::from_millis(1);

thread_local! {
    /// True on a stand-in thread: a `block_in_place` there runs in place (its loop
    /// already has its stand-in, this thread).
    static STAND_IN: Cell<bool> = const { Cell::new(false) };
}

/// Wraps the stand-in thread's whole body (say, to enter a runtime's context on it).
pub type StandInContext = Box<dyn FnOnce(&mut dyn FnMut()) + Send>;

/// The loop's core, sent to the stand-in thread.
struct CorePtr(*const Core);
// SAFETY: the core is used by one thread at a time, handed over as the module docs say.
unsafe impl Send for CorePtr {}

/// A running stand-in; dropping it stops and joins the thread.
struct StandIn {
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
    /// The loop's shared half, whose waker ends the stand-in's wait in the selector.
    shared: Arc<crate::shared::Shared>,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Release);
        if let Some(t) = self.thread.take() {
            // The stand-in waits in the selector (the waker ends that) or, after a
            // failed select, parks (the unpark ends that).
            self.shared.write_eventfd();
            t.thread().unpark();
            // A panic of the stand-in itself (not of a task: those are caught) is not
            // this thread's to resume; the loop's state is whole again either way.
            let _ = t.join();
        }
    }
}

impl StandIn {
    /// # Safety
    /// `core` is the core of the loop whose thread calls this, which touches it no more
    /// until the returned value is dropped, and which outlives that drop.
    unsafe fn start(core: *const Core, wrap: Option<StandInContext>) -> Option<StandIn> {
        let stop = Arc::new(AtomicBool::new(false));
        // SAFETY: per the contract, the core is alive, and this thread only reads its
        // shared half, which is `Sync`.
        let shared = unsafe { (*core).shared.clone() };
        let core = CorePtr(core);
        let flag = stop.clone();
        let thread = thread::Builder::new()
            .name("netloop-stand-in".into())
            .spawn(move || {
                let core = core;
                let mut body = || {
                    STAND_IN.with(|s| s.set(true));
                    // SAFETY: per `start`'s contract, the core is alive and this thread's
                    // alone until `flag` is set and this thread is joined.
                    let core = unsafe { &*core.0 };
                    stand_in(core, &flag);
                };
                match wrap {
                    Some(wrap) => wrap(&mut body),
                    None => body(),
                }
            })
            .ok()?;
        Some(StandIn {
            stop,
            thread: Some(thread),
            shared,
        })
    }
}

/// The stand-in's loop: polls the core's sockets and runs its `Send` tasks until
/// `stop`.
fn stand_in(core: &Core, stop: &AtomicBool) {
    let Ok(_entered) = context::enter(core) else {
        return;
    };
    let mut aside_tasks: Vec<LoopRunnable> = Vec::new();
    let mut aside_other = Vec::new();
    let mut wake_buf = Vec::new();
    while !stop.load(Acquire) {
        let n = core.shared.inbox.len();
        for _ in 0..n {
            let Some(item) = core.shared.inbox.pop() else { break };
            core.local.enqueue(item);
        }
        if core.local.next_deadline().is_some() {
            let now = core.shared.clock.now_from(clock::now()).max(core.local.timer_now.get());
            core.local.timer_now.set(now);
            Driver::fetch_from_scheduled(core, now);
        }
        core.local.wake_deferred();
        let mut ran = 0usize;
        for _ in 0..core.local.run_queue_len() {
            if stop.load(Acquire) {
                break;
            }
            let next = core.local.run_queue.borrow_mut().pop();
            match next {
                Some(Next::Runnable(r)) if r.is_send() => {
                    if r.is_movable() {
                        core.local.movable.set(core.local.movable.get().saturating_sub(1));
                    }
                    run_runnable(core, r);
                    ran += 1;
                }
                Some(Next::Runnable(r)) => aside_tasks.push(r),
                Some(other) => aside_other.push(other),
                None => break,
            }
        }
        if stop.load(Acquire) {
            break;
        }
        // Waits only when no task ran: tasks that ran may have woken others.
        let wait = if ran == 0 {
            core.local.next_deadline().map_or(INBOX_CHECK, |d| {
                clock::until(core.shared.clock.now_from(clock::now()), d).min(INBOX_CHECK)
            })
        } else {
            Duration::ZERO
        };
        // As before every select of the loop: no event of an earlier one is left.
        core.shared.io.release_pending();
        let polled = core.selector.borrow_mut().select(Some(wait));
        match polled {
            Ok(()) => {
                dispatch_events(core, &mut wake_buf);
            }
            Err(_) => {
                // Interrupted, or a failing poller: the loop's thread reports the
                // latter once it is back. Meanwhile the stand-in waits as it would have.
                core.selector.borrow_mut().clear();
                thread::park_timeout(wait);
            }
        }
    }
    // Back in the run queue for the loop's thread, behind what is there.
    let mut queue = core.local.run_queue.borrow_mut();
    for r in aside_tasks {
        queue.push_runnable(r);
    }
    for other in aside_other {
        match other {
            Next::Runnable(r) => queue.push_runnable(r),
            Next::Other(item) => queue.push(item),
            Next::Due(task) => queue.push_due(task),
        }
    }
}

/// Runs `f`, blocking work, on a loop thread as `block_in_place` does: the loop is
/// marked blocked and its tasks that have not started go to the group's other loops
/// (`share_work`); then `f` runs outside the loop (`context::outside_loop`) while a
/// stand-in thread runs the loop's other `Send` tasks and timers (see the module
/// docs). The stand-in is stopped and joined, and the mark removed, when `f` returns or
/// panics. Off every loop, and on a stand-in thread, it only runs `f` (outside any
/// loop). `wrap` wraps the stand-in thread's body (a runtime enters its context there).
pub fn block_in_place_scope<R>(wrap: Option<StandInContext>, f: impl FnOnce() -> R) -> R {
    struct Unmark(Option<share_work::Blocked>);
    impl Drop for Unmark {
        fn drop(&mut self) {
            if let Some(blocked) = self.0.take() {
                share_work::leave_blocking(blocked);
            }
        }
    }
    let _unmark = Unmark(context::with_core(|core| core.and_then(share_work::enter_blocking)));
    let core = context::with_core(|core| {
        core.map(|c| {
            c.local.blocked_in_turn.set(true);
            c as *const Core
        })
    });
    let on_stand_in = STAND_IN.with(Cell::get);
    context::outside_loop(move || {
        // SAFETY: this thread drives `core`'s loop and, being outside it now, touches
        // the core no more until `_stand_in` is dropped, before `outside_loop` puts the
        // loop back; the core lives in the loop, which this thread's stack is driving.
        let _stand_in = core
            .filter(|_| !on_stand_in)
            .and_then(|core| unsafe { StandIn::start(core, wrap) });
        f()
    })
}
