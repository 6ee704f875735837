//! `Sleep`: a timer on an event loop's scheduled-task heap.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Acquire;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use netloop_reactor::{EventLoopHandle, ScheduledHandle};

use super::Instant;
use crate::runtime::{Handle, NO_RUNTIME};

/// tokio's panic message for a timer used after its runtime shut down.
const RUNTIME_SHUTTING_DOWN: &str = "A Tokio 1.x context was found, but it is being shutdown.";

/// What the loop's heap holds for one registered timer: firing it records the fact
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
        if let Some(w) = self.waker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            w.wake();
        }
    }
}

struct Registered {
    fire: Arc<Fire>,
    entry: ScheduledHandle,
}

/// Waits until a deadline (tokio's `time::Sleep`). Created by [`sleep`] and
/// [`sleep_until`].
///
/// The timer lives on the event loop that was current where the `Sleep` was created
/// (or the runtime's next loop, off a loop), and is registered lazily, at the first
/// poll. It may be polled anywhere, even on another loop: the wake crosses threads.
/// It never fires early. Dropping it cancels the timer (O(log n) on its own loop).
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    deadline: Instant,
    event_loop: EventLoopHandle,
    registered: Option<Registered>,
    elapsed: bool,
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep").field("deadline", &self.deadline).finish()
    }
}

/// The loop a new timer belongs to.
#[track_caller]
fn timer_loop() -> EventLoopHandle {
    crate::drivers::require_time();
    if let Some(current) = EventLoopHandle::current() {
        return current;
    }
    match Handle::try_current() {
        Ok(h) => h.inner.group.next().clone(),
        Err(_) => panic!("{NO_RUNTIME}"),
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
    sleep_until(now.far_add(duration))
}

/// Waits until `deadline`.
#[track_caller]
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        event_loop: timer_loop(),
        registered: None,
        elapsed: false,
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
        self.elapsed || self.registered.as_ref().is_some_and(|r| r.fire.fired.load(Acquire))
    }

    /// Moves the deadline, making the sleep pending again if it had completed.
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.get_mut();
        this.cancel();
        this.deadline = deadline;
        this.elapsed = false;
    }

    fn cancel(&mut self) {
        if let Some(r) = self.registered.take() {
            r.entry.cancel();
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.elapsed {
            return Poll::Ready(());
        }
        let coop = std::task::ready!(netloop_reactor::coop::poll_proceed(cx));
        let fired = this.registered.as_ref().is_some_and(|r| r.fire.fired.load(Acquire));
        if fired || Instant::now() >= this.deadline {
            this.registered = None;
            this.elapsed = true;
            coop.made_progress();
            return Poll::Ready(());
        }
        match &this.registered {
            // Its loop ended before the timer fired: it never will.
            Some(_) if this.event_loop.is_terminated() => panic!("{RUNTIME_SHUTTING_DOWN}"),
            Some(r) => {
                let mut slot = r.fire.waker.lock().unwrap_or_else(|e| e.into_inner());
                match &*slot {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *slot = Some(cx.waker().clone()),
                }
                drop(slot);
                // It may have fired between the check above and storing the waker.
                if r.fire.fired.load(Acquire) {
                    this.registered = None;
                    this.elapsed = true;
                    coop.made_progress();
                    return Poll::Ready(());
                }
            }
            None => {
                let fire = Arc::new(Fire {
                    fired: AtomicBool::new(false),
                    waker: Mutex::new(Some(cx.waker().clone())),
                });
                match this
                    .event_loop
                    .schedule_wake(this.deadline.into_std(), Waker::from(fire.clone()))
                {
                    Ok(entry) => this.registered = Some(Registered { fire, entry }),
                    // No loop will ever fire this timer: fail loudly, with tokio's words.
                    Err(e) if e.is_shutdown() => panic!("{RUNTIME_SHUTTING_DOWN}"),
                    // A full inbox: retry on the next poll.
                    Err(_) => cx.waker().wake_by_ref(),
                }
            }
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.cancel();
    }
}
