//! Step 1 of an iteration, select, and step 2, process I/O (design §3).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::task::Waker;
use std::thread;
use std::time::Duration;

use super::Driver;
use crate::clock;
use crate::core::Core;
use crate::idle_spin::IO_CHECK_ROUNDS;
use crate::io::readiness::Readiness;
use crate::io::ready::Ready;
use crate::shared::Shared;
use crate::sys::{self, WAKER_TOKEN};
use crate::task::wake_in_place;
use crate::wakeup::NONE;

/// How long the loop backs off after `Poll::poll` fails (design §7).
const POLL_ERROR_BACKOFF: Duration = Duration::from_secs(1);

impl Driver {
    /// Netty's select strategy: poll without blocking if anything is waiting, else
    /// spin a little if the last pass took work from another thread, else block until
    /// the next timer, the `wait_until` cap or a wake. The events stay in the selector
    /// for [`process_io`](Self::process_io). Returns when the loop blocked and for how
    /// long it meant to, if it did (for the premature-wakeup count).
    pub(super) fn select(
        &mut self,
        core: &Core,
        wait_until: Option<u64>,
        extra_ready: Option<&AtomicBool>,
    ) -> Option<(u64, Duration)> {
        let shared = &core.shared;
        let mut blocked = None;
        // True when the loop found nothing to do: busy time stops here.
        let mut went_idle = false;
        let has_tasks = self.has_tasks(core, extra_ready);
        // Idle from here (spinning, then parked) until the select returns: a busy peer
        // may hand this loop tasks that have not started yet (`share_work`); that
        // hand-off goes through the inbox, which the spin looks at and which wakes a
        // parked loop.
        let peers = shared.peers.get().filter(|_| !has_tasks);
        if let Some((peers, me)) = peers {
            peers.set_idle(*me, true);
        }
        let polled = if has_tasks && self.counters.parks == 0 && !self.has_queued_work(core, extra_ready) {
            // Only a shutdown request waits, and the loop never parked: it parks once
            // without waiting (hooks and count), as every tokio worker parks before it
            // sees the shutdown, however late its thread started.
            Some(self.park(core, Some(Duration::ZERO), extra_ready))
        } else if has_tasks {
            Some(core.select(Some(Duration::ZERO)))
        } else if let Some(polled) = self.spin_for_work(core, wait_until, extra_ready) {
            Some(polled)
        } else {
            went_idle = true;
            // Published here, not at the end of the iteration: the loop may sleep long
            // before that.
            self.count_busy_until_now(core);
            let polled = self.select_idle(core, wait_until, extra_ready, &mut blocked);
            shared.next_wakeup.set_awake();
            polled
        };
        if let Some((peers, me)) = peers {
            peers.set_idle(*me, false);
        }
        if went_idle {
            self.busy_since = sys::busy_ticks();
        }
        self.after_select(core, polled);
        blocked
    }

    /// The select of a loop that found nothing to do: `None` if work came while the
    /// timeout was worked out (then nothing was polled).
    fn select_idle(
        &mut self,
        core: &Core,
        wait_until: Option<u64>,
        extra_ready: Option<&AtomicBool>,
        blocked: &mut Option<(u64, Duration)>,
    ) -> Option<std::io::Result<()>> {
        let shared = &core.shared;
        let next_timer = core.local.next_deadline();
        let (before, timeout) = self.select_timeout(core, next_timer, wait_until);
        if self.has_tasks(core, extra_ready) {
            None
        } else if shared.clock.is_paused() && next_timer.is_some() && shared.clock.may_auto_advance() {
            // Paused time: look at I/O without waiting; if nothing happened, jump
            // to the next timer (tokio's auto-advance).
            let polled = core.select(Some(Duration::ZERO));
            if !core.has_io() && !self.has_tasks(core, extra_ready) {
                shared.clock.advance_to(next_timer.unwrap_or(NONE));
            }
            Some(polled)
        } else {
            *blocked = before.zip(timeout);
            Some(self.park(core, timeout, extra_ready))
        }
    }

    /// Handles the select's result: a failed poll is logged and backed off from
    /// (design §7), and leaves no events behind.
    fn after_select(&mut self, core: &Core, polled: Option<std::io::Result<()>>) {
        match polled {
            None => core.clear_events(),
            Some(Ok(())) => {}
            Some(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => core.clear_events(),
            Some(Err(e)) => {
                core.clear_events();
                tracing::error!(target: "netloop::reactor", loop_id = core.shared.id, error = %e,
                    "Poll::poll failed; backing off for 1 s");
                thread::sleep(POLL_ERROR_BACKOFF);
            }
        }
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
        let polled = core.select(timeout);
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
        wait_until: Option<u64>,
        extra_ready: Option<&AtomicBool>,
    ) -> Option<std::io::Result<()>> {
        if !std::mem::take(&mut self.took_from_inbox) || wait_until.is_some() {
            return None;
        }
        let length = self.idle_spin.chance()?;
        self.counters.idle_spins += 1;
        let until = clock::now().saturating_add(length);
        for round in 1u32.. {
            thread::yield_now();
            let found = if self.has_tasks(core, extra_ready) {
                Some(core.select(Some(Duration::ZERO)))
            } else if round % IO_CHECK_ROUNDS == 0 {
                let polled = core.select(Some(Duration::ZERO));
                (polled.is_err() || core.has_io()).then_some(polled)
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
        wait_until: Option<u64>,
    ) -> (Option<u64>, Option<Duration>) {
        let shared = &core.shared;
        if next_timer.is_none() && self.shutdown_wait_until.is_none() && wait_until.is_none() {
            shared.next_wakeup.publish(NONE);
            return (None, None);
        }
        let before = clock::now();
        let timer_now = shared.clock.now_from(before);
        let mut timeout = next_timer.map(|d| clock::until(timer_now, d));
        for cap in [self.shutdown_wait_until, wait_until].into_iter().flatten() {
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
    pub(super) fn process_io(&mut self, core: &Core) -> (u64, u64) {
        let io = dispatch_events(core, &mut self.wake_buf);
        self.counters.io_events += io.events;
        self.counters.io_wakes_remote += io.remote_wakes;
        self.counters.wakeups_received += io.wakeups;
        (io.events, io.wakeups)
    }
}

/// What one pass over the selector's events found.
pub(super) struct IoPass {
    /// Events of registrations.
    pub(super) events: u64,
    /// Wake-ups of the loop (its waker's events).
    pub(super) wakeups: u64,
    /// Wakes of tasks of other loops or of other wakers.
    pub(super) remote_wakes: u64,
}

/// Records the readiness of each event of the last select in its registration and
/// wakes what waits on it: this loop's tasks in place, other wakers through
/// `wake_buf`, woken once the selector is released. Leaves no event behind. The
/// driver's I/O step, and a stand-in's while the loop's thread blocks in place.
pub(super) fn dispatch_events(core: &Core, wake_buf: &mut Vec<Waker>) -> IoPass {
    let mut pass = IoPass {
        events: 0,
        wakeups: 0,
        remote_wakes: 0,
    };
    let in_place = |waker: &Waker| wake_in_place::<Arc<Shared>>(core, waker);
    if let Some(driver) = core.ring.borrow_mut().as_mut()
        && !driver.completions.is_empty()
    {
        let (completions, remote) = driver.dispatch(&in_place, wake_buf);
        pass.events += completions;
        pass.remote_wakes += remote;
    }
    'events: {
        let mut selector = core.selector.borrow_mut();
        if selector.events().is_empty() {
            break 'events;
        }
        core.shared.io.events_arrived();
        for event in selector.events().iter() {
            if event.token() == WAKER_TOKEN {
                pass.wakeups += 1;
                continue;
            }
            pass.events += 1;
            // SAFETY: every other token is a registration's, returned by the last
            // select; the registration set frees a registration only at
            // `release_pending`, which runs before each select (of the loop's thread or
            // its stand-in), so it is still allocated.
            let io = unsafe { Readiness::from_token(event.token()) };
            pass.remote_wakes += io.set_readiness(Ready::from_mio(event), &in_place, wake_buf);
        }
        selector.clear();
    }
    #[cfg(tokio_unstable)]
    core.shared.unstable.count_ready_events(pass.events);
    if !wake_buf.is_empty() {
        // Wakers other than loop tasks' (see `Readiness::set_readiness`).
        wake_buf.drain(..).for_each(Waker::wake);
    }
    pass
}
