//! `EventLoop`: one Netty `NioEventLoop` — select, process I/O, run tasks — driven by
//! whichever thread calls [`run`](EventLoop::run), [`run_once`](EventLoop::run_once)
//! or [`block_on`](EventLoop::block_on). The only thread this crate spawns is a loop
//! thread's stand-in, for `block_in_place` (`stand_in.rs`).

mod handover;
mod hog;
mod run_tasks;
mod select;
mod shutdown;
mod stand_in;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, ThreadId};
use std::time::Duration;

use crate::LoopState;
use crate::clock;
use crate::config::{BuildError, EventLoopBuilder, ParkHook};
use crate::context;
use crate::coop;
use crate::core::Core;
use crate::error::DriveError;
use crate::handle::EventLoopHandle;
use crate::idle_spin::IdleSpin;
use crate::metrics::LoopCounters;
use crate::shared::Shared;
use crate::sys::{self, Selector};
pub use stand_in::{StandInContext, block_in_place_scope};

/// One event loop: a mio `Poll`, its queues and its scheduled tasks.
///
/// The loop runs on the thread that drives it, and stays pinned to the first thread
/// that does, unless it is moved ([`move_to_current_thread`](Self::move_to_current_thread),
/// only while it holds no `!Send` task). Other threads reach it through an
/// [`EventLoopHandle`].
///
/// ```
/// use netloop_reactor::EventLoop;
///
/// let mut event_loop = EventLoop::new()?;
/// let handle = event_loop.handle();
/// let task = handle.spawn(async { 6 * 7 }).unwrap();
/// assert_eq!(event_loop.block_on(task)?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct EventLoop {
    core: Box<Core>,
    driver: Driver,
}

/// The mutable state of the loop's thread that tasks never see.
struct Driver {
    io_ratio: u64,
    counters: LoopCounters,
    owner: Option<ThreadId>,
    wake_buf: Vec<Waker>,
    /// The `sys::busy_ticks` reading since which the loop has been busy (not blocked
    /// in poll).
    busy_since: u64,
    /// When tasks last ran (for the shutdown quiet period).
    last_execution: u64,
    /// When graceful shutdown began.
    graceful_start: Option<u64>,
    /// While shutting down: the latest the loop may block before re-checking.
    shutdown_wait_until: Option<u64>,
    /// Whether to spin before blocking, after a pass that took work from the inbox.
    idle_spin: IdleSpin,
    /// The last pass took tasks from the inbox.
    took_from_inbox: bool,
    /// Run around each blocking select (tokio's thread park hooks).
    on_park: Option<ParkHook>,
    on_unpark: Option<ParkHook>,
    /// The hog check, if on (see `hog::HogWatch`).
    hog: Option<hog::HogWatch>,
    /// The `sys::busy_ticks` reading at the end of the last turn (or the start of the
    /// pass): the start of the next turn, for the hog check.
    last_turn_end: u64,
}

impl std::fmt::Debug for EventLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLoop")
            .field("id", &self.core.shared.id)
            .field("state", &self.state())
            .finish()
    }
}

impl EventLoop {
    /// A loop with the default configuration.
    pub fn new() -> std::io::Result<EventLoop> {
        EventLoopBuilder::new().build().map_err(Into::into)
    }

    /// A builder to configure a loop.
    pub fn builder() -> EventLoopBuilder {
        EventLoopBuilder::new()
    }

    fn from_builder(b: &EventLoopBuilder) -> std::io::Result<EventLoop> {
        let (selector, waker, registry) = Selector::new(b.events_capacity, b.busy_events_capacity)?;
        let shared = Arc::new(Shared::new(
            waker,
            registry,
            b.max_pending_tasks,
            b.shutdown_params(),
            b.on_task_panic.clone(),
            #[cfg(tokio_unstable)]
            crate::unstable::UnstableMetrics::new(b.poll_times.as_ref(), b.timers_complete_at_shutdown),
        ));
        let ring = match b.requested_io_driver() {
            crate::config::IoDriver::IoUring => match crate::completion::RingDriver::new() {
                Ok(ring) => Some(ring),
                Err(e) => {
                    static REPORTED: std::sync::Once = std::sync::Once::new();
                    REPORTED.call_once(|| {
                        crate::config::report(&format!("io_uring is unavailable ({e}); the loops run on epoll"))
                    });
                    None
                }
            },
            _ => None,
        };
        shared
            .on_ring
            .store(ring.is_some(), std::sync::atomic::Ordering::Relaxed);
        Ok(EventLoop {
            core: Box::new(Core::with_ring(shared, selector, ring)),
            driver: Driver {
                io_ratio: u64::from(b.io_ratio),
                counters: LoopCounters::default(),
                owner: None,
                wake_buf: Vec::new(),
                busy_since: 0,
                last_execution: 0,
                graceful_start: None,
                shutdown_wait_until: None,
                idle_spin: IdleSpin::new(b.idle_spin),
                took_from_inbox: false,
                on_park: b.on_park.clone(),
                on_unpark: b.on_unpark.clone(),
                hog: b.hog_threshold.map(hog::HogWatch::new),
                last_turn_end: 0,
            },
        })
    }

    /// A handle for submitting work from any thread.
    pub fn handle(&self) -> EventLoopHandle {
        EventLoopHandle {
            shared: self.core.shared.clone(),
        }
    }

    /// Where the loop is in its life.
    pub fn state(&self) -> LoopState {
        self.core.shared.state()
    }

    /// Runs the loop on this thread until it terminates (after a shutdown request).
    pub fn run(&mut self) -> Result<(), DriveError> {
        self.drive(|driver, core| {
            while !driver.iteration(core, None, None) {}
            driver.finish(core);
        })
    }

    /// Runs one iteration: select (blocking at most `max_wait`, or until the next
    /// deadline or wake when `None`), process I/O, run tasks, run tail tasks, check
    /// for shutdown. Returns the state afterwards.
    pub fn run_once(&mut self, max_wait: Option<Duration>) -> Result<LoopState, DriveError> {
        self.drive(|driver, core| {
            if core.local.state.get() == LoopState::Terminated {
                return;
            }
            let wait_until = max_wait.map(|w| clock::after(clock::now(), w));
            if driver.iteration(core, wait_until, None) {
                driver.finish(core);
            }
        })?;
        Ok(self.state())
    }

    /// Drives the loop on this thread until `future` completes, and returns its output.
    ///
    /// The future runs on the loop's thread between iterations, so it may use
    /// `spawn_local` and `!Send` state. Fails if the loop terminates first.
    pub fn block_on<F: Future>(&mut self, future: F) -> Result<F::Output, DriveError> {
        let mut future = pin!(future);
        let main = Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            shared: self.core.shared.clone(),
        });
        let waker = Waker::from(main.clone());
        self.drive(|driver, core| {
            loop {
                if main.woken.swap(false, AcqRel) {
                    let mut cx = Context::from_waker(&waker);
                    core.polling_main.set(true);
                    let polled = coop::with_budget(|| future.as_mut().poll(&mut cx));
                    core.polling_main.set(false);
                    // The main future may block the thread between its polls (a
                    // `thread::join`, a std socket): what it wrote goes out first.
                    core.submit_now();
                    if let Poll::Ready(out) = polled {
                        return Ok(out);
                    }
                }
                if core.local.state.get() == LoopState::Terminated {
                    return Err(DriveError::Terminated);
                }
                if driver.iteration(core, None, Some(&main.woken)) {
                    driver.finish(core);
                }
            }
        })?
    }

    /// Lets this thread drive a loop that another thread drove before, as a tokio
    /// current-thread runtime moves to whichever thread calls `block_on`. Refused with
    /// [`DriveError::ThreadBoundTasks`] while a `!Send` task (`spawn_local`) is alive
    /// on the loop: its future may only be polled and dropped on the thread that
    /// drove the loop so far. Without such a task, everything the loop holds is
    /// `Send`, and the loop is this thread's from now on. A no-op on the loop's own
    /// thread, or for a loop never driven.
    ///
    /// ```
    /// use netloop_reactor::EventLoop;
    ///
    /// let mut el = EventLoop::new()?;
    /// el.block_on(async {})?;
    /// let el = std::thread::spawn(move || {
    ///     el.move_to_current_thread().expect("no !Send task lives on it");
    ///     el.block_on(async { 7 }).map(|seven| (seven, el))
    /// })
    /// .join()
    /// .unwrap()?;
    /// assert_eq!(el.0, 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn move_to_current_thread(&mut self) -> Result<(), DriveError> {
        let me = thread::current().id();
        match self.driver.owner {
            Some(owner) if owner != me => {
                if self.core.local.holds_thread_bound_tasks() {
                    return Err(DriveError::ThreadBoundTasks);
                }
                // The `&mut self` this thread holds was handed over by whoever had it
                // (a move or a lock): it sees every write of the previous owner.
                self.driver.owner = Some(me);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn drive<R>(&mut self, f: impl FnOnce(&mut Driver, &Core) -> R) -> Result<R, DriveError> {
        let me = thread::current().id();
        match self.driver.owner {
            Some(owner) if owner != me => return Err(DriveError::WrongThread),
            _ => {}
        }
        let core: &Core = &self.core;
        let _guard = context::enter(core)?;
        if self.driver.owner.is_none() {
            self.driver.owner = Some(me);
            self.driver.start(core);
        } else {
            // Busy again; the time between two drives (say, two `block_on` calls of a
            // current-thread runtime) was not the loop's.
            self.driver.busy_since = sys::busy_ticks();
        }
        let out = f(&mut self.driver, core);
        self.driver.count_busy_until_now(core);
        Ok(out)
    }
}

impl EventLoopBuilder {
    /// Validates the configuration and creates the loop (its `Poll`, eventfd and
    /// queues). Nothing runs until the loop is driven.
    pub fn build(&self) -> Result<EventLoop, BuildError> {
        self.validate().map_err(BuildError::Config)?;
        EventLoop::from_builder(self).map_err(BuildError::Io)
    }
}

impl Drop for EventLoop {
    fn drop(&mut self) {
        if self.core.local.state.get() == LoopState::Terminated {
            return;
        }
        let on_other_thread = self.driver.owner.is_some_and(|o| o != thread::current().id());
        if on_other_thread && self.core.local.holds_thread_bound_tasks() {
            // Its futures may be `!Send`: dropping them here could abort the process.
            tracing::error!(target: "netloop::reactor", loop_id = self.core.shared.id,
                "event loop dropped off its thread with live tasks; leaking them");
            let tasks = std::mem::replace(&mut self.core.local, crate::core::Local::new());
            std::mem::forget(tasks);
        }
        // Shut down now: whatever is queued is dropped, nothing more is accepted.
        self.core.shared.advance_state(LoopState::Shutdown);
        let core: &Core = &self.core;
        let _guard = context::enter(core).ok();
        // I/O resources outlive their loop: they must fail from now on, and anyone
        // waiting on one must hear of it, once every task is gone.
        self.driver.drop_everything(core);
    }
}

/// The waker of `block_on`'s future: a flag, plus a wake if set from another thread.
struct MainWaker {
    woken: AtomicBool,
    shared: Arc<Shared>,
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Release);
        if !context::is_own_thread(&self.shared) {
            self.shared.wake(0);
        }
    }
}

impl Driver {
    fn start(&mut self, core: &Core) {
        let prev = core.shared.advance_state(LoopState::Started);
        core.local.state.set(prev.max(LoopState::Started));
        let now = clock::now();
        sys::calibrate_busy_ticks();
        self.busy_since = sys::busy_ticks();
        self.last_execution = now;
        core.shared.published.started_at.store(now, Relaxed);
        // Peers start out idle; a running loop is not, until it parks.
        if let Some((peers, me)) = core.shared.peers.get() {
            peers.set_idle(*me, false);
        }
    }

    /// Adds the time since the loop was last busy from to its busy time, and publishes
    /// the sum: the loop goes idle, or it stops being driven (a loop driven by
    /// `block_on` may never go idle before its future completes).
    pub(super) fn count_busy_until_now(&mut self, core: &Core) {
        self.counters.busy_ticks += sys::busy_ticks().saturating_sub(self.busy_since);
        core.shared
            .published
            .busy_ticks
            .store(self.counters.busy_ticks, Relaxed);
    }

    /// Netty's `hasTasks()`: is there anything to do without waiting? Queued tasks,
    /// tail tasks, `block_on`'s woken future, or a shutdown request not yet confirmed
    /// (requests wake the loop only if it is blocked, so it must look before blocking).
    ///
    /// `extra_ready` is `block_on`'s flag for its own future (a flag rather than a
    /// closure: this runs twice per iteration and a flag inlines).
    fn has_tasks(&self, core: &Core, extra_ready: Option<&AtomicBool>) -> bool {
        self.has_queued_work(core, extra_ready) || self.shutdown_unconfirmed(core)
    }

    /// [`has_tasks`](Self::has_tasks) without the shutdown request: work queued to run.
    fn has_queued_work(&self, core: &Core, extra_ready: Option<&AtomicBool>) -> bool {
        core.local.run_queue_len() != 0
            || !core.shared.inbox.is_empty()
            || core.local.tail_len() != 0
            || core.local.deferred_len() != 0
            || extra_ready.is_some_and(|woken| woken.load(Acquire))
    }

    /// A shutdown was requested and its graceful period has not started.
    fn shutdown_unconfirmed(&self, core: &Core) -> bool {
        self.graceful_start.is_none() && core.shared.state() >= LoopState::ShuttingDown
    }

    /// Tasks ready to run: the local run queue plus the inbox.
    fn ready_tasks(&self, core: &Core) -> usize {
        core.local.run_queue_len() + core.shared.inbox.len()
    }

    /// One iteration of the run loop (design §3): select, process I/O, run tasks under
    /// the I/O ratio, run tail tasks, and when shutting down, confirm shutdown. True
    /// when the loop should exit. `wait_until`: a deadline on the real clock that caps
    /// the select (`run_once`).
    ///
    /// Busy time is kept in `sys::busy_ticks` (the time-stamp counter on x86_64, see
    /// [`LoopMetrics::busy`]), read as the loop goes idle and as it wakes. The precise
    /// clock is read only where a result depends on it: before a select whose timeout
    /// comes from a timer, a shutdown period or a `run_once` cap; when timers are
    /// waiting in the wheel; and around I/O when the I/O ratio may need the time I/O
    /// took (64 tasks or more could be ready).
    ///
    /// [`LoopMetrics::busy`]: crate::LoopMetrics::busy
    fn iteration(&mut self, core: &Core, wait_until: Option<u64>, extra_ready: Option<&AtomicBool>) -> bool {
        self.counters.iterations += 1;
        // No event of an earlier select is left: registrations removed since then
        // may be freed now (see `registration_set`).
        core.shared.io.release_pending();
        #[cfg(tokio_unstable)]
        let unparks = self.counters.unparks;
        let blocked = self.select(core, wait_until, extra_ready);
        let io_start = self.io_timer_start(core);
        let (io_events, wakeups) = self.process_io(core);
        // What yielded in the last iteration runs again now that I/O has been seen.
        core.local.wake_deferred();
        let ran = self.run_tasks(core, io_start, io_events);
        self.run_tail_tasks(core);
        // Woke from a park and ran nothing.
        #[cfg(tokio_unstable)]
        if self.counters.unparks != unparks && ran == 0 {
            core.shared.unstable.count_noop();
        }
        if let Some((before, timeout)) = blocked
            && io_events == 0
            && wakeups == 0
            && ran == 0
            && clock::until(before, clock::now()) < timeout
        {
            self.counters.premature_wakeups += 1;
        }
        self.publish_metrics(core);
        if core.shared.state() >= LoopState::ShuttingDown {
            return self.shutting_down(core, ran);
        }
        false
    }

    #[inline(always)]
    fn publish_metrics(&self, core: &Core) {
        core.shared.published.publish(
            &self.counters,
            core.local.run_queue_len() + core.local.tail_len(),
            core.local.scheduled_len(),
            core.local.live_tasks(),
        );
    }
}
