//! `block_on`: running a future to completion on the calling thread, which drives a
//! current-thread runtime's loop meanwhile, or parks between wake-ups.
//!
//! Invariants: a thread is inside at most one `block_on` (a nested one panics, as on
//! tokio); at most one thread at a time drives a current-thread runtime's loop, the
//! others poll their futures off the loop and take over the driving when it is let go.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{AcqRel, Release};
use std::sync::{Arc, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use netloop_reactor::{DriveError, EventLoopHandle};

use super::handle::Handle;
use crate::context;
use crate::group::EventLoopGroup;
use crate::runtime::flavor::RuntimeFlavor;
use crate::shared::Shared;
use crate::sync::{lock, try_lock};
use crate::time::parked::ParkedTimers;

/// True while this thread is inside a runtime's `block_on`: a nested one would block
/// the outer future's thread, so it panics (tokio's rule), also where the outer one
/// drives no loop (a multi-thread runtime's `block_on`). The mark is the reactor's, so
/// that `sync`'s `blocking_*` calls see it too.
pub(super) fn in_block_on() -> bool {
    netloop_reactor::in_block_on()
}

impl Handle {
    /// Runs `future` to completion on this thread, in this runtime's context.
    ///
    /// On a current-thread runtime the thread also drives the loop meanwhile, so the
    /// runtime's tasks, I/O and timers make progress (tokio's `Handle::block_on` drives
    /// nothing, and a timer awaited in it never fires unless another thread is in
    /// `Runtime::block_on`). The future itself is polled as tokio polls it, off the
    /// loop: it is not one of the loop's tasks, so `worker_index()` is `None` in it,
    /// `block_in_place` runs its closure in place, and `spawn_local` needs a `LocalSet`.
    /// [`Runtime::block_on`](super::Runtime::block_on) polls its future on the loop.
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.enter_block_on(future, Root::OffLoop)
    }

    /// Runs `future` to completion on this thread, in this runtime's context; `root`
    /// says whether a current-thread runtime polls it as one of its loop's tasks.
    #[track_caller]
    pub(super) fn enter_block_on<F: Future>(&self, future: F, root: Root) -> F::Output {
        if EventLoopHandle::current().is_some() || in_block_on() {
            panic!(
                "Cannot start a runtime from within a runtime. This happens because a function (like `block_on`) \
                 attempted to block the current thread while the thread is being used to drive asynchronous tasks. \
                 If you are in an async function, use `.await` on the future instead of blocking on it."
            );
        }
        #[cfg(tokio_unstable)]
        if self.inner.unstable.shut_down_by_panic() {
            panic!("{}", super::unstable::RUNTIME_PANIC_SHUTDOWN);
        }
        let _blocking = InBlockOn::enter();
        let _context = context::set(self.inner.clone());
        #[cfg(tokio_unstable)]
        let _seeded = self
            .inner
            .unstable
            .seeds
            .as_ref()
            .map(|seeds| super::rng::reseed(seeds.next()));
        #[cfg(feature = "tokio-compat")]
        let _tokio = self.inner.compat.handle().enter();
        let run = || match self.inner.flavor {
            RuntimeFlavor::MultiThread => park_on(future),
            RuntimeFlavor::CurrentThread => match root {
                Root::OnLoop => self.drive_current_thread(future),
                Root::OffLoop => self.drive_current_thread(OffLoop { future: pin!(future) }),
            },
        };
        #[cfg(feature = "tokio-compat")]
        return run();
        // A panic of the future itself passes the note about `tokio-compat` on its way.
        #[cfg(not(feature = "tokio-compat"))]
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            Ok(out) => out,
            Err(payload) => {
                super::compat_hint::observe(&*payload);
                std::panic::resume_unwind(payload)
            }
        }
    }

    fn drive_current_thread<F: Future>(&self, future: F) -> F::Output {
        let mut future = pin!(future);
        let turn = match self.take_driver() {
            Some(turn) => turn,
            None => {
                // Another thread drives the loop: poll the future here, parked between
                // wake-ups, and take over the driving if that thread lets go first.
                let parker = ThreadParker::new();
                let waker = parker.waker();
                let mut cx = Context::from_waker(&waker);
                loop {
                    #[cfg(tokio_unstable)]
                    if self.inner.unstable.shut_down_by_panic() {
                        panic!("{}", super::unstable::RUNTIME_PANIC_SHUTDOWN);
                    }
                    {
                        let mut waiters = lock(&self.inner.driver.waiters);
                        if !waiters.iter().any(|w| w.will_wake(&waker)) {
                            waiters.push(waker.clone());
                        }
                    }
                    // Checked after joining the waiters: a release in between is not missed.
                    if let Some(turn) = self.take_driver() {
                        break turn;
                    }
                    if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                        return out;
                    }
                    parker.park();
                }
            }
        };
        self.drive_with(turn, future)
    }

    /// The turn to drive the current_thread loop, if no other thread has it.
    fn take_driver(&self) -> Option<DriverTurn<'_>> {
        Some(DriverTurn {
            guard: Some(try_lock(&self.inner.driver.turn)?),
            inner: &self.inner,
        })
    }

    fn drive_with<F: Future>(&self, _turn: DriverTurn<'_>, future: Pin<&mut F>) -> F::Output {
        let Some(event_loop) = self.inner.group.take_loop(0) else {
            // Shut down: no loop to drive. The future still runs (as on tokio); I/O and
            // timers in it fail with the runtime-shutdown error.
            return park_on(future);
        };
        // Give the loop back even if the future panics.
        struct PutBack<'a> {
            group: &'a EventLoopGroup,
            event_loop: Option<netloop_reactor::EventLoop>,
        }
        impl Drop for PutBack<'_> {
            fn drop(&mut self) {
                if let Some(el) = self.event_loop.take() {
                    self.group.put_loop(0, el);
                }
            }
        }
        let mut slot = PutBack {
            group: &self.inner.group,
            event_loop: Some(event_loop),
        };
        let event_loop = slot.event_loop.as_mut().expect("present");
        // tokio's current-thread runtime moves to whichever thread calls `block_on`; so
        // does this one's loop, unless a `!Send` task of netloop's `spawn_local` lives
        // on it (tokio has no such task outside a `LocalSet`).
        if event_loop.move_to_current_thread() == Err(DriveError::ThreadBoundTasks) {
            panic!(
                "a current_thread runtime with live !Send tasks (netloop's spawn_local) cannot move to another thread: \
                 call block_on from the thread that drove it so far, or let those tasks finish first"
            );
        }
        // With `UnhandledPanic::ShutdownRuntime`, a task's panic stops the future at its
        // next poll, even one its wake-up made ready (as tokio's `block_on` stops).
        #[cfg(tokio_unstable)]
        let future = {
            let mut future = future;
            std::future::poll_fn(move |cx| {
                if self.inner.unstable.shut_down_by_panic() {
                    panic!("{}", super::unstable::RUNTIME_PANIC_SHUTDOWN);
                }
                future.as_mut().poll(cx)
            })
        };
        match event_loop.block_on(future) {
            Ok(out) => out,
            #[cfg(tokio_unstable)]
            Err(_) if self.inner.unstable.shut_down_by_panic() => panic!("{}", super::unstable::RUNTIME_PANIC_SHUTDOWN),
            Err(e) => panic!("{e}"),
        }
    }
}

/// Marks the thread as inside `block_on` until dropped (also when the future panics).
struct InBlockOn;

impl InBlockOn {
    fn enter() -> InBlockOn {
        netloop_reactor::set_in_block_on(true);
        InBlockOn
    }
}

impl Drop for InBlockOn {
    fn drop(&mut self) {
        netloop_reactor::set_in_block_on(false);
    }
}

/// Runs `f` as if outside `block_on` (for `block_in_place`, where blocking is the
/// point): a `block_on` inside `f` is allowed. The mark is put back after, also on a
/// panic.
pub(crate) fn outside_block_on<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            netloop_reactor::set_in_block_on(self.0);
        }
    }
    let _restore = Restore(netloop_reactor::set_in_block_on(false));
    f()
}

/// Where a current-thread `block_on` polls its future.
#[derive(Clone, Copy)]
pub(super) enum Root {
    /// As one of the loop's own tasks ([`Runtime::block_on`]).
    OnLoop,
    /// In the runtime's context but off the loop ([`Handle::block_on`]).
    OffLoop,
}

/// A future polled outside the loop its thread drives.
struct OffLoop<'a, F> {
    future: Pin<&'a mut F>,
}

impl<F: Future> Future for OffLoop<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        netloop_reactor::outside_loop(|| netloop_reactor::coop::with_budget(|| self.future.as_mut().poll(cx)))
    }
}

/// `block_on` for a thread that drives no loop: poll, park until woken, repeat.
fn park_on<F: Future>(future: F) -> F::Output {
    let parker = ThreadParker::new();
    let waker = parker.waker();
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    // The sleeps polled in the future's body are this thread's to fire (time/parked.rs).
    let timers = ParkedTimers::install();
    let out = loop {
        // Each poll has a budget of its own, as a task's has: a future that spent it
        // is woken at once (nothing here defers a wake) and polled again.
        if let Poll::Ready(out) = netloop_reactor::coop::with_budget(|| future.as_mut().poll(&mut cx)) {
            break out;
        }
        match timers.timers().fire_due(std::time::Instant::now()) {
            Some(next) => parker.park_until(next),
            None => parker.park(),
        }
    };
    timers.hand_over(crate::placement::try_timer_loop());
    out
}

/// A waker that unparks the thread that made it, and the wait for it.
struct ThreadParker(Arc<Unpark>);

struct Unpark {
    thread: Thread,
    woken: AtomicBool,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Release);
        self.thread.unpark();
    }
}

impl ThreadParker {
    fn new() -> ThreadParker {
        ThreadParker(Arc::new(Unpark {
            thread: thread::current(),
            woken: AtomicBool::new(false),
        }))
    }

    fn waker(&self) -> Waker {
        Waker::from(self.0.clone())
    }

    /// Returns once the waker was woken since the last return (at once if it was).
    fn park(&self) {
        while !self.0.woken.swap(false, AcqRel) {
            thread::park();
        }
    }

    /// Like [`park`](Self::park), returning at `deadline` at the latest.
    fn park_until(&self, deadline: std::time::Instant) {
        while !self.0.woken.swap(false, AcqRel) {
            let now = std::time::Instant::now();
            if now >= deadline {
                return;
            }
            thread::park_timeout(deadline - now);
        }
    }
}

/// A `block_on` caller's turn to drive a current_thread runtime's loop. Letting go of it
/// wakes the callers waiting for it, so one of them takes over the driving.
struct DriverTurn<'a> {
    guard: Option<MutexGuard<'a, ()>>,
    inner: &'a Shared,
}

impl Drop for DriverTurn<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        let waiters = std::mem::take(&mut *lock(&self.inner.driver.waiters));
        for waker in waiters {
            waker.wake();
        }
    }
}
