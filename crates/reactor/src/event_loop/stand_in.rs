//! `block_in_place` without stopping the loop: while the loop's thread runs the
//! blocking closure, a stand-in thread polls the loop's sockets, runs its `Send` tasks
//! and fires its timers.
//!
//! Each thread that drives a loop gets one stand-in thread, at its first
//! `block_in_place`, and keeps it until it exits. A stand-in is such a thread too: a
//! task it polls that blocks in place hands the loop on to the stand-in's own stand-in,
//! as tokio hands a blocked worker's core to a new thread each time, so the loop's
//! tasks run on however many closures block in place on it (each level gives the state
//! back to the one below once its closure returns, before that one can give it back). The loop's state (`Core`, its
//! selector included) is owned by one thread at a time, as `handover.rs` describes: the
//! loop's thread offers it as it enters the closure (it leaves the loop,
//! `context::outside_loop`, and touches the core no more), the stand-in takes it only
//! if the offer still stands after [`GRACE`], and the loop's thread gets it back as the
//! closure returns: at once if the offer was not taken, else once the stand-in has
//! finished the task it was polling. The loop's thread had processed its last select's
//! events before it ran the task that blocks, so the stand-in starts from a selector
//! with none pending.
//!
//! The stand-in polls only tasks marked `Send` (`Runnable::is_send`): a `!Send` task
//! may share `Rc`s or other thread-bound state with the task blocking in place, whose
//! closure runs meanwhile, so such tasks wait, set aside, as do closures and due
//! scheduled jobs. Readiness is recorded for every socket, and the `!Send` tasks it
//! wakes run after the closure. Timer wakes fire. The stand-in waits in the selector
//! for a millisecond at most, then looks at the inbox: producers see the loop as awake
//! and send no wake meanwhile. Asking the state back writes the loop's waker, which
//! ends that wait at once.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::Driver;
use super::handover::Handover;
use super::run_tasks::run_runnable;
use super::select::dispatch_events;
use crate::clock;
use crate::context;
use crate::core::Core;
use crate::run_queue::Next;
use crate::share_work;
use crate::shared::{LoopRunnable, Shared};

/// How long an idle stand-in waits for I/O at most before it looks at the inbox again.
const INBOX_CHECK: Duration = Duration::from_millis(1);

/// How long an offer stands before the stand-in takes the loop's state: a closure that
/// returns sooner costs no hand-over, and the loop's other tasks wait at most this
/// long for one that does not.
const GRACE: Duration = Duration::from_micros(50);

/// How many stand-ins deep a loop's hand-over may go: a `block_in_place` on a stand-in
/// this many levels above the loop's thread runs in place (its closure holds the loop
/// until it returns). Each level is a thread kept until the thread below it exits, so
/// this bounds the threads one loop can gather.
const MAX_STAND_IN_DEPTH: usize = 8;

thread_local! {
    /// The stand-in of the loops this thread drives (as their thread, or as a stand-in
    /// itself), once it first blocked in place.
    static MY_STAND_IN: RefCell<Option<StandIn>> = const { RefCell::new(None) };

    /// 0 on a loop's thread; on a stand-in, one more than the thread it stands in for.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Wraps each turn of the stand-in (say, to enter a runtime's context on it).
pub type StandInContext = Box<dyn FnOnce(&mut dyn FnMut()) + Send>;

/// The loop's core, sent to the stand-in thread.
struct CorePtr(*const Core);
// SAFETY: the core is used by one thread at a time, handed over as the module docs say.
unsafe impl Send for CorePtr {}

/// What goes with an offer: the core, and what to wrap the stand-in's turn in.
struct Offer {
    core: CorePtr,
    wrap: Option<StandInContext>,
}

/// A loop thread's stand-in thread; dropping it (as the loop's thread exits) ends it.
struct StandIn {
    handover: Arc<Handover<Offer>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        // Never dropped while an offer stands: `Lent` holds the state's return.
        self.handover.close();
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            // A panic of the stand-in itself (not of a task: those are caught) is not
            // this thread's to resume.
            let _ = t.join();
        }
    }
}

impl StandIn {
    /// Starts a stand-in for the calling thread's loops; `None` if no thread can start.
    fn start() -> Option<StandIn> {
        let handover = Arc::new(Handover::new());
        let theirs = handover.clone();
        let depth = DEPTH.with(Cell::get) + 1;
        let thread = thread::Builder::new()
            .name("netloop-stand-in".into())
            .spawn(move || {
                DEPTH.with(|d| d.set(depth));
                serve(&theirs)
            })
            .ok()?;
        Some(StandIn {
            handover,
            thread: Some(thread),
        })
    }
}

/// The stand-in thread: takes each offer that stands for [`GRACE`], stands in for the
/// loop until asked back, gives the state back; ends when the hand-over is closed.
fn serve(handover: &Handover<Offer>) {
    /// Gives the state back once asked, also if the turn panicked: the loop's thread
    /// waits for it.
    struct GiveBack<'a>(&'a Handover<Offer>);
    impl Drop for GiveBack<'_> {
        fn drop(&mut self) {
            while !self.0.is_asked_back() {
                thread::park();
            }
            self.0.give_back();
        }
    }
    while !handover.is_closed() {
        if !handover.is_offered() {
            thread::park();
            continue;
        }
        let deadline = Instant::now() + GRACE;
        while handover.is_offered() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            thread::park_timeout(deadline - now);
        }
        let Some(Offer { core, wrap }) = handover.take() else {
            continue;
        };
        let _give_back = GiveBack(handover);
        let mut turn = || {
            // SAFETY: taken: the core is alive (its loop's thread is inside the
            // closure, on the stack that drives the loop) and this thread's alone until
            // it gives it back (`handover.rs`).
            let core = unsafe { &*core.0 };
            stand_in(core, handover);
        };
        match wrap {
            Some(wrap) => wrap(&mut turn),
            None => turn(),
        }
    }
}

/// The state lent to the stand-in for one closure; dropping it gets the state back.
struct Lent {
    handover: Arc<Handover<Offer>>,
    stand_in: thread::Thread,
    shared: Arc<Shared>,
}

impl Lent {
    /// Offers `core` to this thread's stand-in (started now if this is the thread's
    /// first `block_in_place`); `None` if no stand-in could start.
    ///
    /// # Safety
    /// `core` is the core of the loop this thread drives, which touches it no more until
    /// the returned value is dropped, and which outlives that drop.
    unsafe fn offer(core: *const Core, wrap: Option<StandInContext>) -> Option<Lent> {
        if DEPTH.with(Cell::get) >= MAX_STAND_IN_DEPTH {
            return None;
        }
        let (handover, stand_in) = MY_STAND_IN.with(|mine| {
            let mut mine = mine.borrow_mut();
            if mine.is_none() {
                *mine = StandIn::start();
            }
            let s = mine.as_ref()?;
            Some((s.handover.clone(), s.thread.as_ref()?.thread().clone()))
        })?;
        // SAFETY: per the contract, the core is alive and still this thread's.
        let shared = unsafe { (*core).shared.clone() };
        // Refused only if this thread's hand-over is already in use: a closure that
        // drives another loop blocked in place inside it (the closure runs in place).
        handover
            .offer(Offer {
                core: CorePtr(core),
                wrap,
            })
            .ok()?;
        stand_in.unpark();
        Some(Lent {
            handover,
            stand_in,
            shared,
        })
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if self.handover.withdraw().is_some() {
            return;
        }
        self.handover.ask_back();
        // The stand-in waits in the selector (the waker ends that) or parks (the
        // unpark ends that).
        self.shared.write_eventfd();
        self.stand_in.unpark();
        self.handover.wait_given_back();
        // This thread drives the loop again (`worker_thread_id`).
        #[cfg(tokio_unstable)]
        self.shared.unstable.set_driver(thread::current().id());
    }
}

/// The stand-in's turn: polls the core's sockets and runs its `Send` tasks until the
/// loop's thread asks for its state back.
fn stand_in(core: &Core, handover: &Handover<Offer>) {
    let Ok(_entered) = context::enter(core) else {
        return;
    };
    let mut aside_tasks: Vec<LoopRunnable> = Vec::new();
    let mut aside_other = Vec::new();
    let mut wake_buf = Vec::new();
    while !handover.is_asked_back() {
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
            if handover.is_asked_back() || core.shared.gate.is_closing() {
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
        if handover.is_asked_back() {
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
        let polled = core.select(Some(wait));
        match polled {
            Ok(()) => {
                dispatch_events(core, &mut wake_buf);
            }
            Err(_) => {
                // Interrupted, or a failing poller: the loop's thread reports the
                // latter once it is back. Meanwhile the stand-in waits as it would have.
                core.clear_events();
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
/// (`share_work`); then `f` runs outside the loop (`context::outside_loop`) while the
/// thread's stand-in polls the loop's sockets and runs its other `Send` tasks and
/// timers, if `f` runs longer than 50 µs (see the module docs). The loop's state
/// comes back, and the mark is removed, when `f` returns or panics (on a stand-in, the
/// loop goes on to the stand-in's own stand-in). Off every loop it only runs `f`
/// (outside any loop). `wrap` wraps the
/// stand-in's turn (a runtime enters its context there).
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
    context::outside_loop(move || {
        // SAFETY: this thread drives `core`'s loop (as its thread, or as its stand-in)
        // and, being outside it now, touches the core no more until `_lent` is dropped,
        // before `outside_loop` puts the loop back; the core lives in the loop, which
        // the loop thread's stack is driving (a stand-in's loop thread waits for the
        // stand-in to give the core back).
        let _lent = core.and_then(|core| unsafe { Lent::offer(core, wrap) });
        f()
    })
}
