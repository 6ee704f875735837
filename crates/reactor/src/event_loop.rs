//! `EventLoop`: one Netty `NioEventLoop` — select, process I/O, run tasks — driven by
//! whichever thread calls [`run`](EventLoop::run), [`run_once`](EventLoop::run_once)
//! or [`block_on`](EventLoop::block_on). This crate never spawns a thread.

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
use crate::config::EventLoopBuilder;
use crate::config::ParkHook;
use crate::context;
use crate::coop;
use crate::core::Core;
use crate::error::DriveError;
use crate::handle::EventLoopHandle;
use crate::idle_spin::{IO_CHECK_ROUNDS, IdleSpin};
use crate::io::ready::Ready;
use crate::io::scheduled_io::ScheduledIo;
use crate::loop_task::LoopRunnable;
use crate::metrics::LoopCounters;
use crate::run_queue::Next;
use crate::scheduled::{Claim, Job, ScheduledTask, Timer};
use crate::shared::{Shared, WAKER_TOKEN};
use crate::sys::{self, Selector};
use crate::task::{Task, run_caught};
use crate::wakeup::NONE;

/// Tasks run between two reads of the clock (Netty checks every 64).
const CLOCK_CHECK_INTERVAL: u64 = 64;
/// How long the loop backs off after `Poll::poll` fails (spec section 7).
const POLL_ERROR_BACKOFF: Duration = Duration::from_secs(1);
/// Passes of the final drain before leftovers are dropped.
const FINAL_DRAIN_PASSES: usize = 16;

/// One event loop: a mio `Poll`, its queues and its scheduled tasks.
///
/// The loop runs on the thread that drives it, and stays pinned to the first thread
/// that does. Other threads reach it through an [`EventLoopHandle`].
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
    selector: Selector,
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

    pub(crate) fn from_builder(b: &EventLoopBuilder) -> std::io::Result<EventLoop> {
        let (selector, waker, registry) = Selector::new(b.events_capacity, b.busy_events_capacity)?;
        let shared = Arc::new(Shared::new(waker, registry, b.max_pending_tasks, b.shutdown_params()));
        Ok(EventLoop {
            core: Box::new(Core::new(shared)),
            driver: Driver {
                selector,
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
            let limit = max_wait.map(|w| clock::after(clock::now(), w));
            if driver.iteration(core, limit, None) {
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
                    if let Poll::Ready(out) = coop::with_budget(|| future.as_mut().poll(&mut cx)) {
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
        }
        Ok(f(&mut self.driver, core))
    }
}

impl Drop for EventLoop {
    fn drop(&mut self) {
        if self.core.local.state.get() == LoopState::Terminated {
            return;
        }
        let on_other_thread = self.driver.owner.is_some_and(|o| o != thread::current().id());
        if on_other_thread && self.core.local.live_tasks() > 0 {
            // Its futures may be `!Send`: dropping them here could abort the process.
            tracing::error!(target: "netloop::reactor", loop_id = self.core.shared.id,
                "event loop dropped off its thread with live tasks; leaking them");
            let fresh = Box::new(Core::new(self.core.shared.clone()));
            let core = std::mem::replace(&mut self.core, fresh);
            std::mem::forget(core);
        }
        // Shut down now: whatever is queued is dropped, nothing more is accepted.
        self.core.shared.advance_state(LoopState::Shutdown);
        let core: &Core = &self.core;
        let _guard = context::enter(core).ok();
        // I/O resources outlive their loop: they must fail from now on, and anyone
        // waiting on one must hear of it.
        self.driver.close_registrations(core);
        self.driver.terminate(core, false);
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

/// Looked at after every [`CLOCK_CHECK_INTERVAL`] tasks of a pass: has the pass used
/// its time? `budget` is as [`Driver::run_all_tasks`] takes it: `None` never ends the
/// pass early, `Some(0)` (or no start reading) ends it at the first look.
#[cold]
fn task_time_is_up(start: Option<u64>, budget: Option<u64>) -> bool {
    match (budget, start) {
        (None, _) => false,
        (Some(0), _) | (Some(_), None) => true,
        (Some(budget), Some(start)) => clock::now() >= start.saturating_add(budget),
    }
}

/// A loop task's turn, under a fresh cooperative budget; a panic that escapes the
/// task (it catches its future's own) is logged and the loop goes on.
fn run_runnable(core: &Core, runnable: LoopRunnable) {
    coop::with_budget(|| run_caught("future", || runnable.run(core)));
}

impl Driver {
    fn start(&mut self, core: &Core) {
        let prev = core.shared.advance_state(LoopState::Started);
        core.local.state.set(prev.max(LoopState::Started));
        let now = clock::now();
        sys::calibrate_busy_ticks();
        self.busy_since = sys::busy_ticks();
        self.last_execution = now;
        core.shared
            .published
            .started_at
            .store(now, std::sync::atomic::Ordering::Relaxed);
    }

    /// Netty's `hasTasks()`: is there anything to do without waiting? Queued tasks,
    /// tail tasks, `block_on`'s woken future, or a shutdown request not yet confirmed
    /// (requests wake the loop only if it is blocked, so it must look before blocking).
    ///
    /// `extra_ready` is `block_on`'s flag for its own future (a flag rather than a
    /// closure: this runs twice per iteration and a flag inlines).
    fn has_tasks(&self, core: &Core, extra_ready: Option<&AtomicBool>) -> bool {
        core.local.run_queue_len() != 0
            || !core.shared.inbox.is_empty()
            || core.local.tail_len() != 0
            || core.local.deferred_len() != 0
            || extra_ready.is_some_and(|woken| woken.load(Acquire))
            || (self.graceful_start.is_none() && core.shared.state() >= LoopState::ShuttingDown)
    }

    /// Tasks ready to run: the local run queue plus the inbox.
    fn ready_tasks(&self, core: &Core) -> usize {
        core.local.run_queue_len() + core.shared.inbox.len()
    }

    /// One iteration of the run loop (spec section 3). True when the loop should exit.
    ///
    /// Busy time is kept in `sys::busy_ticks` (the time-stamp counter on x86_64, see
    /// [`LoopMetrics::busy`]), read as the loop goes idle and as it wakes. The precise
    /// clock is read only where a result depends on it: before a select whose timeout
    /// comes from a timer, a shutdown period or a `run_once` cap; when timers are
    /// waiting in the wheel; and around I/O when the I/O ratio may need the time I/O
    /// took (64 tasks or more could be ready). An iteration woken by I/O with no timers and few tasks reads no precise
    /// clock at all.
    ///
    /// [`LoopMetrics::busy`]: crate::LoopMetrics::busy
    fn iteration(&mut self, core: &Core, limit: Option<u64>, extra_ready: Option<&AtomicBool>) -> bool {
        let shared = &core.shared;
        self.counters.iterations += 1;
        // No event of an earlier select is left: registrations removed since then
        // may be freed now (see `registration_set`).
        shared.io.release_pending();

        // 1. Select strategy.
        // Some((when it blocked, its timeout)) when this iteration blocked in select.
        let mut blocked = None;
        // True when the loop found nothing to do: busy time stops here.
        let mut went_idle = false;
        let polled = if self.has_tasks(core, extra_ready) {
            Some(self.selector.select(Some(Duration::ZERO)))
        } else if let Some(polled) = self.spin_for_work(core, limit, extra_ready) {
            Some(polled)
        } else {
            went_idle = true;
            self.counters.busy_ticks += sys::busy_ticks().saturating_sub(self.busy_since);
            // Published here, its only change, not at the end of the iteration: the loop
            // may sleep long before that.
            shared.published.busy_ticks.store(self.counters.busy_ticks, Relaxed);
            let next_timer = core.local.next_deadline();
            let (before, timeout) = self.select_timeout(core, next_timer, limit);
            let polled = if self.has_tasks(core, extra_ready) {
                None
            } else if shared.clock.is_paused() && next_timer.is_some() && shared.clock.may_auto_advance() {
                // Paused time: look at I/O without waiting; if nothing happened, jump
                // to the next timer (tokio's auto-advance).
                let polled = self.selector.select(Some(Duration::ZERO));
                if self.selector.events().is_empty() && !self.has_tasks(core, extra_ready) {
                    shared.clock.advance_to(next_timer.unwrap_or(NONE));
                }
                Some(polled)
            } else {
                blocked = before.zip(timeout);
                Some(self.park(core, timeout, extra_ready))
            };
            shared.next_wakeup.set_awake();
            polled
        };
        if went_idle {
            self.busy_since = sys::busy_ticks();
        }
        match polled {
            None => self.selector.clear(),
            Some(Ok(())) => {}
            Some(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => self.selector.clear(),
            Some(Err(e)) => {
                self.selector.clear();
                tracing::error!(target: "netloop::reactor", loop_id = shared.id, error = %e,
                    "Poll::poll failed; backing off for 1 s");
                thread::sleep(POLL_ERROR_BACKOFF);
            }
        }

        // 2. Process I/O, timed only if the I/O ratio could use the time: its budget
        // is looked at after every 64th task, and an event wakes at most two tasks.
        let io_start = (self.io_ratio != 100
            && !self.selector.events().is_empty()
            && self.ready_tasks(core) + 2 * self.selector.event_count() >= CLOCK_CHECK_INTERVAL as usize)
            .then(clock::now);
        let (io_events, wakeups) = self.process_io(core);
        // What yielded in the last iteration runs again now that I/O has been seen.
        core.local.wake_deferred();

        // 3. Run tasks under the I/O ratio.
        let ran = if self.io_ratio == 100 {
            self.run_all_tasks(core, None, None)
        } else if let Some(io_start) = io_start
            && io_events > 0
            && self.ready_tasks(core) >= CLOCK_CHECK_INTERVAL as usize
        {
            let io_end = clock::now();
            let io_time = io_end.saturating_sub(io_start);
            self.run_all_tasks(
                core,
                Some(io_end),
                Some(io_time * (100 - self.io_ratio) / self.io_ratio),
            )
        } else {
            // With fewer than 64 tasks ready the budget would be looked at only if
            // tasks woken meanwhile take the pass to its 64th task; it stops there, as
            // an iteration without I/O does.
            self.run_all_tasks(core, None, Some(0))
        };

        // 4. Tail tasks.
        self.run_tail_tasks(core);

        if let Some((before, timeout)) = blocked
            && io_events == 0
            && wakeups == 0
            && ran == 0
            && clock::until(before, clock::now()) < timeout
        {
            self.counters.premature_wakeups += 1;
        }
        self.publish_metrics(core);

        // 5. Shutdown check.
        if shared.state() >= LoopState::ShuttingDown {
            if ran > 0 {
                // Only the quiet period needs this, so it is only read while shutting down.
                self.last_execution = clock::now();
            }
            if core.local.state.get() < LoopState::ShuttingDown {
                core.local.state.set(LoopState::ShuttingDown);
            }
            return self.confirm_shutdown(core, ran > 0);
        }
        false
    }

    /// The blocking select of an idle loop, between the park hooks, counted as a park
    /// and an unpark.
    fn park(
        &mut self,
        core: &Core,
        timeout: Option<Duration>,
        extra_ready: Option<&AtomicBool>,
    ) -> std::io::Result<()> {
        let shared = &core.shared;
        self.counters.parks += 1;
        // Published now: the loop may sleep long before the end of the iteration.
        shared.published.parks.store(self.counters.parks, Relaxed);
        let mut timeout = timeout;
        if let Some(hook) = &self.on_park {
            (hook.0)();
            // The hook may have spawned a task or woken one on this thread, which
            // sent no wakeup (the loop is its own thread): look before sleeping.
            if self.has_tasks(core, extra_ready) {
                timeout = Some(Duration::ZERO);
            }
        }
        let polled = self.selector.select(timeout);
        self.counters.unparks += 1;
        if let Some(hook) = &self.on_unpark {
            (hook.0)();
        }
        polled
    }

    /// Before the loop goes idle after a pass that took work from the inbox, looks
    /// for work a little longer, as [`IdleSpin`] allows (see `idle_spin.rs`): each
    /// round yields the core, then looks at the queues, and every
    /// [`IO_CHECK_ROUNDS`] rounds at the selector without blocking, until the spin's
    /// time is up. Returns the non-blocking select of the round that found work, or
    /// `None` when none came (or the policy said not to spin) and the loop should
    /// block. A timer that falls due meanwhile is late by the spin at most.
    ///
    /// `next_wakeup` stays AWAKE throughout, so producers need not wake the loop. A
    /// `run_once` with a cap on its wait never spins.
    fn spin_for_work(
        &mut self,
        core: &Core,
        limit: Option<u64>,
        extra_ready: Option<&AtomicBool>,
    ) -> Option<std::io::Result<()>> {
        if !std::mem::take(&mut self.took_from_inbox) || limit.is_some() {
            return None;
        }
        let length = self.idle_spin.chance()?;
        self.counters.idle_spins += 1;
        let until = clock::now().saturating_add(length);
        for round in 1u32.. {
            thread::yield_now();
            let found = if self.has_tasks(core, extra_ready) {
                Some(self.selector.select(Some(Duration::ZERO)))
            } else if round % IO_CHECK_ROUNDS == 0 {
                let polled = self.selector.select(Some(Duration::ZERO));
                (polled.is_err() || !self.selector.events().is_empty()).then_some(polled)
            } else {
                None
            };
            if let Some(polled) = found {
                self.idle_spin.found_work();
                self.counters.idle_spins_found_work += 1;
                return Some(polled);
            }
            if clock::now() >= until {
                break;
            }
        }
        self.idle_spin.found_nothing();
        None
    }

    /// The timeout of a blocking select, and the precise reading it was computed from
    /// (`(None, None)`, without a reading, when nothing bounds the wait). Publishes the
    /// wake-up deadline for the `next_wakeup` protocol either way.
    ///
    /// Timer deadlines are on the loop's (possibly paused) clock; the shutdown period
    /// and a `run_once` cap are on the real one: they are combined as durations.
    fn select_timeout(
        &self,
        core: &Core,
        next_timer: Option<u64>,
        limit: Option<u64>,
    ) -> (Option<u64>, Option<Duration>) {
        let shared = &core.shared;
        if next_timer.is_none() && self.shutdown_wait_until.is_none() && limit.is_none() {
            shared.next_wakeup.publish(NONE);
            return (None, None);
        }
        let before = clock::now();
        let timer_now = shared.clock.now_from(before);
        let mut timeout = next_timer.map(|d| clock::until(timer_now, d));
        for cap in [self.shutdown_wait_until, limit].into_iter().flatten() {
            let cap = clock::until(before, cap);
            timeout = Some(timeout.map_or(cap, |t| t.min(cap)));
        }
        shared
            .next_wakeup
            .publish(timeout.map_or(NONE, |t| clock::after(timer_now, t)));
        (Some(before), timeout)
    }

    /// Records readiness for each event and wakes the tasks waiting on it.
    /// Returns (I/O events, wakeups received).
    fn process_io(&mut self, core: &Core) -> (u64, u64) {
        if self.selector.events().is_empty() {
            return (0, 0);
        }
        let (mut io_events, mut wakeups, mut remote) = (0, 0, 0);
        for event in self.selector.events().iter() {
            if event.token() == WAKER_TOKEN {
                wakeups += 1;
                continue;
            }
            io_events += 1;
            // SAFETY: every other token is a registration's, returned by this
            // iteration's select; the registration set frees a registration only at
            // `release_pending`, which runs before select, so it is still allocated.
            let io = unsafe { ScheduledIo::from_token(event.token()) };
            remote += io.set_readiness(Ready::from_mio(event), Some(core), &mut self.wake_buf);
        }
        self.selector.clear();
        self.counters.io_events += io_events;
        self.counters.io_wakes_remote += remote;
        self.counters.wakeups_received += wakeups;
        if !self.wake_buf.is_empty() {
            // Wakers other than loop tasks' (see `ScheduledIo::set_readiness`).
            self.wake_buf.drain(..).for_each(Waker::wake);
        }
        (io_events, wakeups)
    }

    /// Moves the inbox's current contents into the run queue, applying wheel and tail
    /// messages on the way. Bounded by the length seen at the start, so a fast producer
    /// cannot keep the loop here.
    fn fetch_from_inbox(&mut self, core: &Core) {
        // With the inbox's counters the length is as cheap as the emptiness check.
        let n = core.shared.inbox.len();
        if n == 0 {
            return;
        }
        self.took_from_inbox = true;
        for _ in 0..n {
            let Some(task) = core.shared.inbox.pop() else { break };
            core.local.enqueue(task);
        }
    }

    /// Moves due scheduled tasks into the run queue; timer wakes fire directly.
    fn fetch_from_scheduled(&mut self, core: &Core, now: u64) {
        loop {
            let due = core.local.scheduled.borrow_mut().pop_due(now);
            let mut task = match due {
                None => break,
                // The wake may run a waker's code: the wheel's borrow has ended.
                Some(Timer::Wake(wake)) => {
                    wake.fire();
                    continue;
                }
                Some(Timer::Task(task)) => *task,
            };
            match task.job {
                Job::Wake(_) => match task.claim() {
                    Claim::Run => {
                        task.state.set_done();
                        let Job::Wake(waker) = task.job else { unreachable!() };
                        waker.wake();
                    }
                    Claim::Later => core.local.push_timer(task),
                    Claim::Gone => {}
                },
                job => {
                    core.local
                        .run_queue
                        .borrow_mut()
                        .push_due(ScheduledTask { job, ..task });
                }
            }
        }
    }

    /// Netty's `runAllTasks`: `budget` is the time for tasks in nanos (`Some(0)` runs
    /// at most 64), `None` runs every task that was ready when the pass began.
    /// Returns how many tasks ran.
    /// `start` is a recent reading of the precise clock if the caller took one (it
    /// must for a budget above zero); otherwise the clock is read only if timers wait.
    fn run_all_tasks(&mut self, core: &Core, start: Option<u64>, budget: Option<u64>) -> u64 {
        self.fetch_from_inbox(core);
        if core.local.next_deadline().is_some() {
            let timer_now = core.shared.clock.now_from(start.unwrap_or_else(clock::now));
            core.local.timer_now.set(timer_now);
            self.fetch_from_scheduled(core, timer_now);
        }
        let mut limit = match budget {
            None => core.local.run_queue_len(),
            Some(_) => usize::MAX,
        };
        let mut ran = 0u64;
        while limit > 0 {
            limit -= 1;
            let next = core.local.run_queue.borrow_mut().pop();
            match next {
                Some(Next::Runnable(runnable)) => run_runnable(core, runnable),
                Some(other) => self.run_other(core, other),
                None => break,
            }
            ran += 1;
            if ran.is_multiple_of(CLOCK_CHECK_INTERVAL) && task_time_is_up(start, budget) {
                break;
            }
        }
        self.counters.tasks_run += ran;
        ran
    }

    /// A closure or a due scheduled task: rare next to loop tasks' turns, so out of
    /// the task loop.
    #[inline(never)]
    fn run_other(&mut self, core: &Core, next: Next) {
        match next {
            Next::Runnable(runnable) => run_runnable(core, runnable),
            Next::Other(task) => self.run_task(core, task),
            Next::Due(task) => self.run_scheduled(core, task),
        }
    }

    fn run_task(&mut self, core: &Core, task: Task) {
        match task {
            Task::Runnable(runnable) => run_runnable(core, runnable),
            Task::Closure(f) => {
                run_caught("closure", f);
            }
            // Messages are routed as they arrive (`Local::enqueue`), so none reaches the
            // run queue; routing one here would do the same.
            message => core.local.enqueue(message),
        }
    }

    /// Runs a due scheduled task that is not a timer wake (those fire straight from
    /// the wheel, `fetch_from_scheduled`).
    fn run_scheduled(&mut self, core: &Core, mut task: ScheduledTask) {
        if !task.state.is_pending() {
            return;
        }
        if matches!(task.job, Job::Once(_)) {
            match task.claim() {
                Claim::Run => {
                    let Job::Once(f) = task.job else { unreachable!() };
                    run_caught("scheduled task", f);
                    task.state.set_done();
                }
                Claim::Later => core.local.push_timer(task),
                Claim::Gone => {}
            }
            return;
        }
        // A periodic task is never started (it stays pending across runs), so a
        // postpone that landed since the wheel let it go is taken up here.
        if task.postponed() {
            core.local.push_timer(task);
            return;
        }
        let next = match &mut task.job {
            Job::FixedRate { period, f } => {
                let ok = run_caught("fixed-rate task", f);
                ok.then(|| task.deadline.saturating_add(*period))
            }
            Job::FixedDelay { delay, f } => {
                let ok = run_caught("fixed-delay task", f);
                ok.then(|| core.shared.clock.now().saturating_add(*delay))
            }
            Job::Once(_) | Job::Wake(_) => unreachable!("handled above or in fetch_from_scheduled"),
        };
        match next {
            Some(deadline) => {
                task.reschedule(deadline.min(clock::MAX_DEADLINE));
                core.local.push_timer(task);
            }
            // A periodic task that panicked is cancelled.
            None => {
                task.state.try_cancel();
            }
        }
    }

    /// Runs every tail task queued before this call, once.
    #[inline]
    fn run_tail_tasks(&mut self, core: &Core) -> u64 {
        if core.local.tail_len() == 0 {
            return 0;
        }
        self.run_queued_tail_tasks(core)
    }

    #[inline(never)]
    fn run_queued_tail_tasks(&mut self, core: &Core) -> u64 {
        let tasks = std::mem::take(&mut *core.local.tail.borrow_mut());
        let mut ran = 0;
        for t in tasks {
            if !t.removed.swap(true, AcqRel) {
                run_caught("tail task", t.f);
                ran += 1;
            }
        }
        self.counters.tasks_run += ran;
        ran
    }

    fn run_shutdown_hooks(&mut self, core: &Core) -> bool {
        let hooks = std::mem::take(&mut *core.shared.shutdown_hooks.lock().unwrap_or_else(|e| e.into_inner()));
        let ran = !hooks.is_empty();
        for hook in hooks {
            run_caught("shutdown hook", hook);
        }
        if ran {
            self.last_execution = clock::now();
        }
        ran
    }

    fn cancel_scheduled_tasks(&mut self, core: &Core) {
        let timers = core.local.scheduled.borrow_mut().drain();
        for t in &timers {
            if let Timer::Task(task) = t {
                task.state.try_cancel();
            }
        }
        drop(timers);
    }

    /// Netty's `confirmShutdown` (spec section 5). True when the loop may exit.
    fn confirm_shutdown(&mut self, core: &Core, ran_tasks: bool) -> bool {
        self.cancel_scheduled_tasks(core);
        let params = core
            .shared
            .shutdown
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or(core.shared.default_shutdown);
        let now = clock::now();
        let start = match self.graceful_start {
            Some(s) => s,
            None => {
                // The quiet period is measured from the request at the earliest.
                self.last_execution = self.last_execution.max(now);
                *self.graceful_start.get_or_insert(now)
            }
        };
        let hooks_ran = self.run_shutdown_hooks(core);
        let timeout = clock::nanos(params.timeout);
        let quiet = clock::nanos(params.quiet_period);
        if now.saturating_sub(start) >= timeout {
            return true;
        }
        if (ran_tasks || hooks_ran) && quiet == 0 {
            return true;
        }
        let quiet_end = self.last_execution.saturating_add(quiet);
        if now < quiet_end {
            self.shutdown_wait_until = Some(quiet_end.min(start.saturating_add(timeout)));
            return false;
        }
        true
    }

    /// After the run loop exits: Shutdown, final drain, close registrations, drop what
    /// is left, Terminated (spec section 5).
    fn finish(&mut self, core: &Core) {
        core.shared.advance_state(LoopState::Shutdown);
        core.local.state.set(LoopState::Shutdown);
        core.shared.inbox.close();
        self.final_drain(core);
        self.close_registrations(core);
        self.final_drain(core);
        self.terminate(core, true);
    }

    /// Deregisters and closes every registration, and wakes whoever waits on one:
    /// their operations fail with an error instead of waiting forever.
    fn close_registrations(&mut self, core: &Core) {
        let mut wakers = std::mem::take(&mut self.wake_buf);
        for io in core.shared.io.close() {
            io.shutdown(&mut wakers);
        }
        wakers.drain(..).for_each(Waker::wake);
        self.wake_buf = wakers;
    }

    fn final_drain(&mut self, core: &Core) {
        for _ in 0..FINAL_DRAIN_PASSES {
            self.adopt_orphans(core);
            self.cancel_scheduled_tasks(core);
            let ran = self.run_all_tasks(core, None, None) + self.run_tail_tasks(core);
            let hooks = self.run_shutdown_hooks(core);
            if ran == 0 && !hooks && core.local.run_queue.borrow().is_empty() && core.shared.inbox.is_empty() {
                break;
            }
        }
    }

    fn adopt_orphans(&mut self, core: &Core) {
        let orphans = match core.shared.orphans.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(list) => std::mem::take(list),
            None => return,
        };
        let mut q = core.local.run_queue.borrow_mut();
        orphans.into_iter().for_each(|r| q.push_runnable(r));
    }

    /// Closes every live task and drops every queued one on this thread, then marks the
    /// loop Terminated. `graceful`: warn about leftovers (they were not run).
    fn terminate(&mut self, core: &Core, graceful: bool) {
        core.shared.inbox.close();
        core.local.state.set(LoopState::Terminated);
        self.cancel_scheduled_tasks(core);
        let leftovers = core.local.run_queue.borrow().len()
            + core.shared.inbox.len()
            + core.local.tail.borrow().len()
            + core
                .shared
                .orphans
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map_or(0, Vec::len);
        core.local.clear_deferred();
        // Wake every live task; with the state Terminated, each wake drops the task's
        // runnable right here, which drops its future.
        core.local.close_live_tasks();
        loop {
            let mut dropped = 0usize;
            while let Some(task) = core.shared.inbox.pop() {
                dropped += 1;
                drop(task);
            }
            loop {
                let next = core.local.run_queue.borrow_mut().pop();
                let Some(task) = next else { break };
                dropped += 1;
                drop(task);
            }
            let tails = std::mem::take(&mut *core.local.tail.borrow_mut());
            dropped += tails.len();
            drop(tails);
            let orphans = core
                .shared
                .orphans
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
                .map(std::mem::take);
            if let Some(orphans) = orphans {
                dropped += orphans.len();
                drop(orphans);
            }
            if dropped == 0 {
                break;
            }
        }
        *core.shared.orphans.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if graceful && leftovers > 0 {
            tracing::warn!(target: "netloop::reactor", loop_id = core.shared.id, tasks = leftovers,
                "event loop terminated with a non-empty task queue; those tasks were dropped");
        }
        self.publish_metrics(core);
        core.shared.set_state(LoopState::Terminated);
        core.shared.termination.complete();
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
