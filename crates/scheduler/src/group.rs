//! `EventLoopGroup`: N event loops, each on its own thread (design §1, Netty's `EventLoopGroup`).

use std::fmt;
use std::io;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use netloop_reactor::{ConfigError, EventLoop, EventLoopBuilder, EventLoopHandle, TerminationFuture};

use crate::sync::lock;

/// How a group names and prepares its threads.
#[derive(Clone)]
pub(crate) struct ThreadConfig {
    /// Name of the thread of loop `index`.
    pub(crate) name: Arc<dyn Fn(usize) -> String + Send + Sync>,
    pub(crate) stack_size: Option<usize>,
    pub(crate) on_start: Option<Arc<dyn Fn() + Send + Sync>>,
    pub(crate) on_stop: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Runs first on every loop thread (the runtime installs its context here).
    pub(crate) enter: Option<Arc<dyn Fn() -> Box<dyn std::any::Any> + Send + Sync>>,
    /// The tokio runtime whose context every thread enters too (`tokio-compat`).
    #[cfg(feature = "tokio-compat")]
    pub(crate) tokio: Option<tokio::runtime::Handle>,
}

impl ThreadConfig {
    pub(crate) fn named(group: usize) -> ThreadConfig {
        ThreadConfig {
            name: Arc::new(move |i| format!("netloop-{group}-{i}")),
            stack_size: None,
            on_start: None,
            on_stop: None,
            enter: None,
            #[cfg(feature = "tokio-compat")]
            tokio: None,
        }
    }

    /// Spawns thread `index`, named and sized as configured. It enters the runtime's
    /// context (and tokio's) first and leaves it last; inside, it runs `on_start`,
    /// `body`, `on_stop`, then `exited`.
    pub(crate) fn spawn(
        &self,
        index: usize,
        body: impl FnOnce() + Send + 'static,
        exited: impl FnOnce() + Send + 'static,
    ) -> io::Result<thread::JoinHandle<()>> {
        let cfg = self.clone();
        let mut builder = thread::Builder::new().name((cfg.name)(index));
        if let Some(size) = cfg.stack_size {
            builder = builder.stack_size(size);
        }
        builder.spawn(move || {
            let _context = cfg.enter.as_ref().map(|enter| enter());
            #[cfg(feature = "tokio-compat")]
            let _tokio = cfg.tokio.as_ref().map(tokio::runtime::Handle::enter);
            if let Some(f) = &cfg.on_start {
                f();
            }
            body();
            if let Some(f) = &cfg.on_stop {
                f();
            }
            exited();
        })
    }
}

struct Slot {
    handle: EventLoopHandle,
    /// The loop until its thread takes it.
    parked: Mutex<Option<EventLoop>>,
    thread: Mutex<Option<thread::JoinHandle<()>>>,
}

struct Inner {
    slots: Vec<Slot>,
    /// Loops start on first use (multi-thread); otherwise their owner drives them.
    lazy: bool,
    next: AtomicUsize,
    threads: ThreadConfig,
}

/// A group of event loops, one thread each, handed out round-robin (Netty's
/// `EventLoopGroup`).
///
/// Each loop's thread starts lazily, on the first task submitted to that loop, unless
/// [`start_all`](Self::start_all) is called. [`next`](Self::next) picks the loop for a
/// new connection or an off-loop spawn.
///
/// A runtime owns one ([`Handle::event_loops`](crate::runtime::Handle::event_loops));
/// one can also be used on its own, Netty's way, handing closures to its loops:
///
/// ```
/// use std::collections::HashSet;
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use netloop_scheduler::EventLoopGroup;
///
/// let group = EventLoopGroup::new(2)?;
/// let (tx, rx) = mpsc::channel();
/// for _ in 0..4 {
///     let tx = tx.clone();
///     // Round-robin: loop 0, 1, 0, 1. Each closure runs on its loop's thread.
///     group.next().execute(move || tx.send(std::thread::current().id()).unwrap()).unwrap();
/// }
/// drop(tx);
/// let threads: HashSet<_> = rx.iter().collect();
/// assert_eq!(threads.len(), 2);
///
/// group.shutdown_gracefully(Duration::ZERO, Duration::from_secs(1)).unwrap();
/// assert!(group.await_termination(Duration::from_secs(5)));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct EventLoopGroup {
    inner: Arc<Inner>,
}

impl fmt::Debug for EventLoopGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventLoopGroup")
            .field("loops", &self.inner.slots.len())
            .finish()
    }
}

/// The process-wide group counter used in default thread names.
pub(crate) fn next_group_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    NEXT.fetch_add(1, Relaxed)
}

impl EventLoopGroup {
    /// A group of `n` loops with default settings, threads named `netloop-{group}-{index}`.
    pub fn new(n: usize) -> io::Result<EventLoopGroup> {
        Self::build(
            n,
            &EventLoopBuilder::new(),
            ThreadConfig::named(next_group_number()),
            true,
        )
    }

    /// Builds `n` loops. If any fails, the ones already made are shut down (they never
    /// ran) and the error is returned: no half-built group is handed out.
    pub(crate) fn build(
        n: usize,
        builder: &EventLoopBuilder,
        threads: ThreadConfig,
        lazy: bool,
    ) -> io::Result<EventLoopGroup> {
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an event loop group needs at least one loop (worker_threads must be at least 1)",
            ));
        }
        builder.validate().map_err(io::Error::from)?;
        let mut slots = Vec::with_capacity(n);
        for _ in 0..n {
            // On error, `slots` is dropped here: each EventLoop's Drop terminates it.
            let event_loop = builder.build()?;
            slots.push(Slot {
                handle: event_loop.handle(),
                parked: Mutex::new(Some(event_loop)),
                thread: Mutex::new(None),
            });
        }
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        for (index, slot) in slots.iter().enumerate() {
            slot.handle.set_group_index(index);
        }
        // Peers: a busy loop may hand a task it has not started to an idle loop of the
        // group (`docs/affinity.md`); without peers (`NETLOOP_SHARE_UNSTARTED=0`) every
        // spawn stays on the loop it was given.
        if share_unstarted() {
            let handles: Vec<EventLoopHandle> = slots.iter().map(|s| s.handle.clone()).collect();
            EventLoopHandle::join_peers(&handles);
        }
        let inner = Arc::new(Inner {
            slots,
            lazy,
            next: AtomicUsize::new(0),
            threads,
        });
        if lazy {
            for (i, slot) in inner.slots.iter().enumerate() {
                let weak: Weak<Inner> = Arc::downgrade(&inner);
                slot.handle.set_lazy_starter(move || {
                    if let Some(inner) = weak.upgrade() {
                        start_loop(&inner, i);
                    }
                });
            }
        }
        Ok(EventLoopGroup { inner })
    }

    /// Takes loop `index` out to be driven by the caller (the current-thread runtime).
    pub(crate) fn take_loop(&self, index: usize) -> Option<EventLoop> {
        lock(&self.inner.slots[index].parked).take()
    }

    /// Gives back a loop taken with [`take_loop`](Self::take_loop).
    pub(crate) fn put_loop(&self, index: usize, event_loop: EventLoop) {
        *lock(&self.inner.slots[index].parked) = Some(event_loop);
    }

    /// Starts every loop's thread now instead of on first use.
    pub fn start_all(&self) {
        for i in 0..self.inner.slots.len() {
            start_loop(&self.inner, i);
        }
    }

    /// Number of loops.
    pub fn len(&self) -> usize {
        self.inner.slots.len()
    }

    /// Always false: a group has at least one loop.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The loop that gets the next new connection or off-loop spawn: round-robin over
    /// an atomic counter (a mask for power-of-two sizes, a modulo otherwise).
    pub fn next(&self) -> &EventLoopHandle {
        let n = self.inner.slots.len();
        let i = self.inner.next.fetch_add(1, Relaxed);
        let index = if n.is_power_of_two() { i & (n - 1) } else { i % n };
        &self.inner.slots[index].handle
    }

    /// Loop `index`.
    pub fn get(&self, index: usize) -> Option<&EventLoopHandle> {
        self.inner.slots.get(index).map(|s| &s.handle)
    }

    /// Every loop, in index order.
    pub fn iter(&self) -> impl Iterator<Item = &EventLoopHandle> {
        self.inner.slots.iter().map(|s| &s.handle)
    }

    /// True if `handle` is one of this group's loops.
    pub fn contains(&self, handle: &EventLoopHandle) -> bool {
        self.inner.slots.iter().any(|s| s.handle == *handle)
    }

    /// Asks every loop to shut down gracefully; see
    /// [`EventLoopHandle::shutdown_gracefully_with`].
    ///
    /// A loop whose thread never started was never sent a task (the first submission
    /// starts it), so it is terminated right here instead of starting a thread only to
    /// stop it.
    pub fn shutdown_gracefully(&self, quiet_period: Duration, timeout: Duration) -> Result<(), ConfigError> {
        for handle in self.started_loops() {
            drop(handle.shutdown_gracefully_with(quiet_period, timeout)?);
        }
        Ok(())
    }

    /// Stops every loop as tokio stops a runtime; see
    /// [`EventLoopHandle::shutdown_now`]. Every loop is told to poll no task before
    /// any is woken to drop its own, so a task that another loop's destructors wake is
    /// not polled either. A loop whose thread never started is terminated here, as in
    /// [`shutdown_gracefully`](Self::shutdown_gracefully).
    pub fn shutdown_now(&self) {
        EventLoopHandle::shutdown_all_now(self.started_loops());
    }

    /// The loops a shutdown must ask to stop. A lazily started loop whose thread never
    /// started was never sent a task (the first submission starts it): dropping it
    /// here shuts it down and terminates it, instead of starting a thread only to stop
    /// it. A current-thread runtime's undriven loop stays parked for its owner.
    fn started_loops(&self) -> Vec<&EventLoopHandle> {
        let mut started = Vec::with_capacity(self.inner.slots.len());
        for slot in &self.inner.slots {
            let parked = lock(&slot.parked).take();
            match parked {
                Some(event_loop) if self.inner.lazy => drop(event_loop),
                other => {
                    if let Some(event_loop) = other {
                        *lock(&slot.parked) = Some(event_loop);
                    }
                    started.push(&slot.handle);
                }
            }
        }
        started
    }

    /// Futures that resolve as each loop terminates.
    pub fn terminations(&self) -> Vec<TerminationFuture> {
        self.inner.slots.iter().map(|s| s.handle.termination()).collect()
    }

    /// True once every loop has terminated.
    pub fn is_terminated(&self) -> bool {
        self.inner.slots.iter().all(|s| s.handle.is_terminated())
    }

    /// Blocks until every loop has terminated (and its thread has exited), or the
    /// timeout passes. False on timeout. Loops that were never started are terminated
    /// on this thread.
    pub fn await_termination(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        for slot in &self.inner.slots {
            let parked = lock(&slot.parked).take();
            if let Some(event_loop) = parked {
                // Never ran on a thread of its own: dropping it terminates it here.
                drop(event_loop);
            }
            let left = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(Instant::now()));
            if slot.handle.await_termination(left).is_err() {
                return false;
            }
            if let Some(t) = lock(&slot.thread).take()
                && t.thread().id() != thread::current().id()
            {
                let _ = t.join();
            }
        }
        true
    }
}

/// Spawns the thread of loop `index` if it has not been started (Netty `startThread`).
fn start_loop(inner: &Arc<Inner>, index: usize) {
    let slot = &inner.slots[index];
    let Some(mut event_loop) = lock(&slot.parked).take() else {
        return;
    };
    let run = move || {
        if let Err(e) = event_loop.run() {
            tracing::error!(target: "netloop::scheduler", error = %e, "event loop thread could not drive its loop");
        }
    };
    let spawned = inner.threads.spawn(index, run, || {});
    match spawned {
        Ok(t) => *lock(&slot.thread) = Some(t),
        Err(e) => {
            tracing::error!(target: "netloop::scheduler", loop_index = index, error = %e,
                "could not spawn an event loop thread; its tasks wait until the group shuts down");
        }
    }
}

/// The variable that turns off handing unstarted tasks to idle loops: `0` keeps every
/// spawn from a loop on that loop (`docs/affinity.md`, `docs/tuning.md`).
pub const SHARE_UNSTARTED_ENV: &str = "NETLOOP_SHARE_UNSTARTED";

fn share_unstarted() -> bool {
    std::env::var_os(SHARE_UNSTARTED_ENV).is_none_or(|v| v != "0")
}
