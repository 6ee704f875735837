//! `Sleep`: a timer in an event loop's timing wheel.

use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Acquire;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use netloop_reactor::{EventLoopHandle, ScheduledHandle, TimerKey, TimerRegistration, TimerState};

use super::instant::Instant;
use super::parked::{self, ParkedKey, Polled};
use crate::sync::lock;

/// tokio's panic message for a timer used after its runtime shut down.
const RUNTIME_SHUTTING_DOWN: &str = "A Tokio 1.x context was found, but it is being shutdown.";

/// What the loop's wheel holds for one registered timer: firing it records the fact
/// and wakes whichever task polled the `Sleep` last (it may have moved).
struct Fire {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Wake for Fire {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, std::sync::atomic::Ordering::Release);
        if let Some(w) = lock(&self.waker).take() {
            w.wake();
        }
    }
}

/// A timer registered from another thread than its loop's: the loop holds a wake of
/// this `Fire`, and the handle cancels it.
struct Registered {
    fire: Arc<Fire>,
    entry: ScheduledHandle,
}

/// Where a polled `Sleep`'s timer lives.
enum Registration {
    /// Polled on its own loop: an entry of that loop's wheel, which holds the waker
    /// itself; nothing is shared with other threads. `reset` moves the entry, waker
    /// and all, to the new deadline.
    Local(TimerKey),
    /// Polled in the body of a multi-thread runtime's `block_on`: an entry of the
    /// timers that the parked thread fires itself (`parked.rs`).
    Parked(ParkedKey),
    /// Polled elsewhere: a wake scheduled through the loop's inbox.
    Shared(Registered),
}

/// What a sleep not registered yet knows of its deadline against the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// It had passed at a clock reading: the first poll completes.
    Passed,
    /// It was ahead of a clock reading (`now + d`, `d > 0`): filed at the first poll,
    /// it fires at the loop's next turn at the latest even if it has passed since.
    Ahead,
    /// It came from the caller (`sleep_until`), with no clock read: the first poll
    /// finds out (`register_timer_until`).
    Unknown,
}

/// Waits until a deadline (tokio's `time::Sleep`). Created by [`sleep`] and
/// [`sleep_until`].
///
/// The timer lives on the event loop that was current where the `Sleep` was created
/// (or the runtime's next loop, off a loop), and is registered lazily, at the first
/// poll. Polled on that loop's thread, as a task's sleep almost always is, it is an
/// entry of the loop's timing wheel and nothing more: registering, polling, resetting
/// and dropping it allocate nothing and take no lock. It may be
/// polled anywhere else too; the wake then crosses threads. It never fires early.
/// Dropping it cancels the timer.
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::time::{Instant, sleep};
///
/// # let rt = netloop_scheduler::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// // An idle timeout: pushed back on every request, it fires only if none comes.
/// let idle = sleep(Duration::from_secs(60));
/// let mut idle = std::pin::pin!(idle);
/// for _request in 0..3 {
///     idle.as_mut().reset(Instant::now() + Duration::from_secs(60));
/// }
/// assert!(!idle.is_elapsed());
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    deadline: Instant,
    event_loop: EventLoopHandle,
    registered: Option<Registration>,
    /// What is known of the deadline against the clock until the timer is registered.
    due: Due,
    elapsed: bool,
    /// tokio's resource and async-op spans of a timer (`trace`).
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    spans: trace::SleepSpans,
    /// `!Unpin`, as tokio's `Sleep`: code written for tokio pins it, and code that
    /// compiles here must compile there. Nothing in it depends on its address.
    _pinned: PhantomPinned,
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep").field("deadline", &self.deadline).finish()
    }
}

/// Waits until `duration` has elapsed. Panics outside a runtime, as tokio's does.
///
/// ```
/// use std::time::Duration;
/// # let rt = netloop_scheduler::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// netloop_scheduler::time::sleep(Duration::from_millis(10)).await;
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn sleep(duration: Duration) -> Sleep {
    let now = Instant::now();
    Sleep::new(now.far_add(duration), Due::after(duration))
}

/// Waits until `deadline`.
///
/// The clock is not read here: a deadline that has passed is found at the first poll,
/// against the loop's timer clock (as tokio's wheel compares with its own), so the
/// sleep completes at that poll or at the loop's next turn.
#[track_caller]
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep::new(deadline, Due::Unknown)
}

impl Due {
    /// Of a deadline `duration` after a clock reading.
    pub(crate) fn after(duration: Duration) -> Due {
        if duration.is_zero() { Due::Passed } else { Due::Ahead }
    }

    /// Of a deadline compared with a clock reading.
    fn at(passed: bool) -> Due {
        if passed { Due::Passed } else { Due::Ahead }
    }
}

impl Sleep {
    /// A sleep until `deadline`, with what the caller knows of it against the clock
    /// (`Due::Passed`: the first poll completes without a timer and without reading
    /// the clock again).
    #[track_caller]
    pub(crate) fn new(deadline: Instant, due: Due) -> Sleep {
        Sleep {
            deadline,
            event_loop: crate::placement::timer_loop(),
            registered: None,
            due,
            elapsed: false,
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            spans: trace::SleepSpans::new(std::panic::Location::caller()),
            _pinned: PhantomPinned,
        }
    }

    /// The sleep behind its pin.
    fn pinned_mut(self: Pin<&mut Self>) -> &mut Sleep {
        // SAFETY: `Sleep` is `!Unpin` only by its marker; none of its fields depends on
        // its address, and no caller moves the value out of the reference.
        unsafe { self.get_unchecked_mut() }
    }
}

impl Sleep {
    /// The instant at which this sleep completes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// True once the sleep has completed: it returned `Ready`, or its loop fired its
    /// timer. A deadline in the past does not count until then, as in tokio.
    pub fn is_elapsed(&self) -> bool {
        self.elapsed
            || match &self.registered {
                Some(Registration::Shared(r)) => r.fire.fired.load(Acquire),
                Some(Registration::Parked(key)) => key.has_fired(),
                // The entry always waits for the current deadline (`reset` moves it).
                Some(Registration::Local(key)) => match self.event_loop.timer_state(key) {
                    Some(TimerState::Fired) => true,
                    Some(TimerState::Waiting | TimerState::Dropped) => false,
                    // Off its loop's thread the entry cannot be looked at: the clock tells.
                    None => Instant::now() >= self.deadline,
                },
                None => false,
            }
    }

    /// Moves the deadline, making the sleep pending again if it had completed.
    ///
    /// A registered timer keeps the waker of its last poll: the task that polled it is
    /// woken at the new deadline, earlier or later, without polling the sleep again, as
    /// with tokio. On its own loop (an idle timeout pushed back on each request) the
    /// wheel's entry is moved in place, with no allocation and no lock; from another
    /// thread a later deadline is recorded for the loop, which files the timer anew
    /// when the old one comes. Moving it earlier from another thread cancels the timer,
    /// and the next poll registers a new one.
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.pinned_mut();
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        this.spans.reset(deadline);
        this.elapsed = false;
        let later = deadline >= this.deadline;
        if !later && deadline <= Instant::now() {
            // A deadline that has passed: the task waiting on the timer is woken now,
            // as tokio's reset does, and the next poll completes.
            match this.registered.take() {
                Some(Registration::Local(key)) => {
                    if this.event_loop.fire_timer(&key).is_none() {
                        this.event_loop.cancel_timer(key);
                    }
                }
                other => {
                    this.registered = other;
                    this.cancel();
                }
            }
            this.due = Due::Passed;
            this.deadline = deadline;
            return;
        }
        let moved = match &mut this.registered {
            Some(Registration::Local(key)) => {
                this.event_loop.reset_timer(key, deadline.into_std()) == Some(TimerState::Waiting)
            }
            Some(Registration::Shared(r)) => {
                later && !r.fire.fired.load(Acquire) && r.entry.postpone(deadline.into_std())
            }
            Some(Registration::Parked(key)) => later && key.postpone(deadline.into_std()),
            None => false,
        };
        if moved {
            this.deadline = deadline;
            this.due = Due::Ahead;
            return;
        }
        this.cancel();
        this.due = Due::at(deadline <= Instant::now());
        this.deadline = deadline;
    }

    fn cancel(&mut self) {
        match self.registered.take() {
            Some(Registration::Local(key)) => self.event_loop.cancel_timer(key),
            Some(Registration::Shared(r)) => {
                r.entry.cancel();
            }
            Some(Registration::Parked(key)) => key.remove(),
            None => {}
        }
    }

    /// Completes the sleep.
    fn complete(&mut self) -> Poll<()> {
        // A fired wheel or inbox timer has left its loop already; a parked entry stays
        // until its sleep takes it.
        if let Some(Registration::Parked(key)) = self.registered.take() {
            key.remove();
        }
        self.elapsed = true;
        Poll::Ready(())
    }

    /// Registers on the loop's own thread (the wheel entry holds the waker), or, off
    /// that thread, through [`register_shared`](Self::register_shared).
    fn register_local(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let (deadline, waker) = (self.deadline.into_std(), cx.waker());
        let registration = if self.due == Due::Unknown {
            self.event_loop.register_timer_until(deadline, waker)
        } else {
            self.event_loop.register_timer(deadline, waker)
        };
        match registration {
            TimerRegistration::Filed(key) => {
                self.registered = Some(Registration::Local(key));
                Poll::Pending
            }
            TimerRegistration::Due => self.complete(),
            // With tokio_unstable's alternative timer, a timer of a runtime that shut
            // down completes, as tokio's alternative timer fires them all at shutdown.
            #[cfg(tokio_unstable)]
            TimerRegistration::Shutdown if self.event_loop.timers_complete_at_shutdown() => self.complete(),
            TimerRegistration::Shutdown => panic!("{RUNTIME_SHUTTING_DOWN}"),
            // Its runtime has shut down: no loop would take the store over.
            #[cfg(tokio_unstable)]
            TimerRegistration::NotOnLoop
                if self.event_loop.is_shutdown() && self.event_loop.timers_complete_at_shutdown() =>
            {
                self.complete()
            }
            TimerRegistration::NotOnLoop if self.event_loop.is_shutdown() => panic!("{RUNTIME_SHUTTING_DOWN}"),
            TimerRegistration::NotOnLoop => match parked::register(self.deadline.into_std(), cx.waker()) {
                Some(key) => {
                    self.registered = Some(Registration::Parked(key));
                    Poll::Pending
                }
                None => self.register_shared(cx),
            },
        }
    }

    /// Registers from another thread than the loop's (or after the local registration
    /// found itself polled elsewhere): a wake scheduled through the loop's inbox.
    fn register_shared(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return self.complete();
        }
        let fire = Arc::new(Fire {
            fired: AtomicBool::new(false),
            waker: Mutex::new(Some(cx.waker().clone())),
        });
        match self
            .event_loop
            .schedule_wake(self.deadline.into_std(), Waker::from(fire.clone()))
        {
            Ok(entry) => self.registered = Some(Registration::Shared(Registered { fire, entry })),
            #[cfg(tokio_unstable)]
            Err(e) if e.is_shutdown() && self.event_loop.timers_complete_at_shutdown() => return self.complete(),
            // No loop will ever fire this timer: fail loudly, with tokio's words.
            Err(e) if e.is_shutdown() => panic!("{RUNTIME_SHUTTING_DOWN}"),
            // A full inbox: retry on the next poll.
            Err(_) => cx.waker().wake_by_ref(),
        }
        Poll::Pending
    }

    /// Polls a timer registered from another thread.
    fn poll_shared(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(Registration::Shared(r)) = &self.registered else {
            unreachable!("poll_shared without a shared registration")
        };
        if r.fire.fired.load(Acquire) {
            return self.complete();
        }
        // Its loop ended before the timer fired: it never will.
        if self.event_loop.is_terminated() {
            #[cfg(tokio_unstable)]
            if self.event_loop.timers_complete_at_shutdown() {
                return self.complete();
            }
            panic!("{RUNTIME_SHUTTING_DOWN}");
        }
        let mut slot = lock(&r.fire.waker);
        match &*slot {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *slot = Some(cx.waker().clone()),
        }
        drop(slot);
        // It may have fired between the check above and storing the waker.
        if r.fire.fired.load(Acquire) {
            return self.complete();
        }
        Poll::Pending
    }
}

impl Future for Sleep {
    type Output = ();

    #[cfg(all(tokio_unstable, feature = "tracing"))]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.pinned_mut();
        if this.elapsed {
            return Poll::Ready(());
        }
        // Taken out for the poll, which needs the rest of the sleep mutably, and put
        // back after it (a panic in the poll leaves disabled spans).
        let spans = std::mem::replace(&mut this.spans, trace::SleepSpans::none());
        let polled = {
            let _entered = spans.enter();
            match trace::poll_op(netloop_reactor::coop::poll_proceed(cx)) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(coop) => {
                    if this.registered.is_none() {
                        trace::duration(this.deadline);
                    }
                    trace::poll_op(this.poll_elapsed(cx, coop))
                }
            }
        };
        this.spans = spans;
        polled
    }

    #[cfg(not(all(tokio_unstable, feature = "tracing")))]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.pinned_mut();
        if this.elapsed {
            return Poll::Ready(());
        }
        let coop = std::task::ready!(netloop_reactor::coop::poll_proceed(cx));
        this.poll_elapsed(cx, coop)
    }
}

impl Sleep {
    /// A poll of a sleep that has not completed, which the cooperative budget allows
    /// (`coop`).
    #[inline(always)]
    fn poll_elapsed(&mut self, cx: &mut Context<'_>, coop: netloop_reactor::coop::RestoreOnPending) -> Poll<()> {
        let this = self;
        let polled = match &mut this.registered {
            Some(Registration::Local(key)) => {
                match this.event_loop.poll_timer(key, cx.waker()) {
                    Some(TimerState::Waiting) => Poll::Pending,
                    Some(TimerState::Fired) => this.complete(),
                    // Dropped unfired by a graceful shutdown: filed again, it is dropped
                    // again, so it never fires early; once the loop has shut down, the
                    // registration panics with tokio's words.
                    Some(TimerState::Dropped) => {
                        this.registered = None;
                        this.register_local(cx)
                    }
                    // Polled away from its loop: move the timer to the shared path.
                    None => {
                        this.cancel();
                        this.register_shared(cx)
                    }
                }
            }
            Some(Registration::Shared(_)) => this.poll_shared(cx),
            Some(Registration::Parked(key)) => match key.poll(cx.waker()) {
                Polled::Waiting => Poll::Pending,
                Polled::Fired => this.complete(),
                Polled::Orphaned => {
                    this.cancel();
                    this.register_shared(cx)
                }
            },
            None if this.due == Due::Passed => this.complete(),
            None => this.register_local(cx),
        };
        if polled.is_ready() {
            coop.made_progress();
        }
        polled
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// tokio's `tracing` instrumentation of a timer (`--cfg tokio_unstable` and the
/// `tracing` feature), with tokio's targets, names and fields: a `runtime.resource`
/// span of kind `timer` made where the sleep was created, an async-op span per
/// deadline (`Sleep::new_timeout`, then `Sleep::reset`) with its poll span, entered
/// around every poll; `poll_op` events for the budget check and the poll, and a
/// `state_update` of the time left (`duration`, in ms) when the timer is filed or moved.
#[cfg(all(tokio_unstable, feature = "tracing"))]
mod trace {
    use std::panic::Location;
    use std::task::Poll;

    use crate::time::instant::Instant;

    /// In tokio's order, which is the order they are dropped in: the async-op span,
    /// its poll span, then the resource span.
    pub(super) struct SleepSpans {
        async_op: tracing::Span,
        async_op_poll: tracing::Span,
        resource: tracing::Span,
    }

    impl SleepSpans {
        /// Spans that record nothing.
        pub(super) fn none() -> SleepSpans {
            SleepSpans {
                async_op: tracing::Span::none(),
                async_op_poll: tracing::Span::none(),
                resource: tracing::Span::none(),
            }
        }

        pub(super) fn new(at: &'static Location<'static>) -> SleepSpans {
            let resource = tracing::trace_span!(
                target: "tokio::time::sleep",
                parent: None,
                "runtime.resource",
                concrete_type = "Sleep",
                kind = "timer",
                loc.file = at.file(),
                loc.line = at.line(),
                loc.col = at.column(),
            );
            let async_op = tracing::trace_span!(
                target: "tokio::time::sleep",
                parent: &resource,
                "runtime.resource.async_op",
                source = "Sleep::new_timeout",
            );
            let async_op_poll =
                tracing::trace_span!(target: "tokio::time::sleep", parent: &async_op, "runtime.resource.async_op.poll");
            SleepSpans {
                async_op,
                async_op_poll,
                resource,
            }
        }

        /// A new deadline: a new async op, in the resource's scope.
        pub(super) fn reset(&mut self, deadline: Instant) {
            let _resource = self.resource.enter();
            self.async_op = tracing::trace_span!(target: "tokio::time::sleep", "runtime.resource.async_op", source = "Sleep::reset");
            let _async_op = self.async_op.enter();
            self.async_op_poll = tracing::trace_span!(target: "tokio::time::sleep", "runtime.resource.async_op.poll");
            duration(deadline);
        }

        /// Enters the three spans, outermost first, for a poll; they are exited
        /// innermost first.
        pub(super) fn enter(&self) -> Entered<'_> {
            let resource = self.resource.enter();
            let async_op = self.async_op.enter();
            let async_op_poll = self.async_op_poll.enter();
            Entered {
                _async_op_poll: async_op_poll,
                _async_op: async_op,
                _resource: resource,
            }
        }
    }

    /// The spans of a poll, exited in the order of the fields.
    pub(super) struct Entered<'a> {
        _async_op_poll: tracing::span::Entered<'a>,
        _async_op: tracing::span::Entered<'a>,
        _resource: tracing::span::Entered<'a>,
    }

    /// The time left until `deadline`, in milliseconds.
    pub(super) fn duration(deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        tracing::trace!(
            target: "runtime::resource::state_update",
            duration = u64::try_from(left.as_millis()).unwrap_or(u64::MAX),
            duration.unit = "ms",
            duration.op = "override",
        );
    }

    /// tokio's `poll_op` event of a poll of the sleep.
    pub(super) fn poll_op<T>(polled: Poll<T>) -> Poll<T> {
        tracing::trace!(
            target: "runtime::resource::poll_op",
            op_name = "poll_elapsed",
            is_ready = polled.is_ready(),
        );
        polled
    }
}
