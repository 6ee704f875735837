//! The part of a loop other threads can touch: inbox, wakeup word, state, registry.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock};

use crate::LoopState;
use crate::block_cache::BlockCache;
use crate::config::{ShutdownParams, TaskPanicHook};
use crate::error::RejectedExecution;
use crate::inbox::Inbox;
use crate::io::registration_set::RegistrationSet;
use crate::metrics::{ProducerCounters, Published};
use crate::peers::Peers;
use crate::queue_item::QueueItem;
use crate::sync::lock;
use crate::task::Runnable;
use crate::termination::Termination;
use crate::wakeup::NextWakeup;

/// A turn of one of this loop's tasks.
pub(crate) type LoopRunnable = Runnable<Arc<Shared>>;
/// An entry of this loop's inbox or run queue.
pub(crate) type LoopItem = QueueItem<LoopRunnable>;
/// Whether a remote submission wakes the loop.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wake {
    /// Wake it if it is blocked (`execute`).
    Now,
    /// Wake it only if it is blocked past this deadline (`schedule`).
    Before(u64),
    /// Never (`lazy_execute`): it runs at the next iteration.
    Lazy,
}

pub(crate) struct Shared {
    /// Unique per process; names the loop in logs.
    pub(crate) id: u64,
    pub(crate) inbox: Inbox<LoopItem>,
    pub(crate) next_wakeup: NextWakeup,
    state: AtomicU8,
    /// Read before every task's turn (`TurnGate`).
    pub(crate) gate: TurnGate,
    selector_waker: mio::Waker,
    pub(crate) registry: mio::Registry,
    pub(crate) io: RegistrationSet,
    pub(crate) shutdown: Mutex<Option<ShutdownParams>>,
    /// What `shutdown_gracefully()` uses when given no parameters.
    pub(crate) default_shutdown: ShutdownParams,
    /// Sees the payload of each panic that escapes a task's future.
    pub(crate) on_task_panic: Option<TaskPanicHook>,
    pub(crate) termination: Arc<Termination>,
    /// Wakes that arrived after the inbox closed; the final drain runs or drops them on
    /// the loop's thread. `None` once the loop terminated.
    pub(crate) orphans: Mutex<Option<Vec<LoopRunnable>>>,
    pub(crate) shutdown_hooks: Mutex<Vec<Box<dyn FnOnce() + Send + 'static>>>,
    starter: OnceLock<Box<dyn Fn() + Send + Sync + 'static>>,
    start_requested: AtomicBool,
    /// The clock the loop's timers run on.
    pub(crate) clock: crate::clock::Clock,
    pub(crate) producers: ProducerCounters,
    pub(crate) published: Published,
    /// Blocks of finished tasks that were spawned from other threads, for the next
    /// such spawn (see `block_cache`).
    pub(crate) blocks: BlockCache,
    /// The other loops of this loop's group and this loop's place among them, once the
    /// group has introduced them (`EventLoopHandle::join_peers`); never for a lone loop.
    pub(crate) peers: OnceLock<(Arc<Peers<Shared>>, usize)>,
    /// What the loop counts for tokio's unstable worker metrics.
    #[cfg(tokio_unstable)]
    pub(crate) unstable: crate::unstable::UnstableMetrics,
    /// True if the loop runs on io_uring (its `Core` has a ring): its streams and
    /// listeners take the completion path.
    pub(crate) on_ring: AtomicBool,
    /// The loop's index in its executor's group, as the executor numbers them, for
    /// the spans of the tasks it runs (`EventLoopHandle::set_group_index`).
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    pub(crate) group_index: OnceLock<usize>,
}

/// What the loop reads before every task's turn: flags that other threads set once in
/// the loop's life. Alone on its cache line, so the read hits the loop's own cache
/// and costs no more than a plain load.
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct TurnGate {
    /// Set by [`EventLoopHandle::shutdown_now`](crate::EventLoopHandle::shutdown_now)
    /// before the loop is told to shut down: from the first turn that sees it, the
    /// loop polls no task again.
    closing: AtomicBool,
}

impl TurnGate {
    /// True once the loop must poll no task again. Relaxed: the loop's own shutdown
    /// check reads the state with `Acquire` after the requester's `Release`, which
    /// orders this flag before it; a turn that reads it early only stops sooner.
    #[inline(always)]
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Relaxed)
    }

    pub(crate) fn close(&self) {
        self.closing.store(true, Release);
    }
}

// The hooks (`starter`, `on_task_panic`) are boxed closures, which are not unwind-safe
// as far as the compiler knows, and every socket holds this through its registration.
// A panic that unwinds past a `&Shared` leaves nothing half-updated that a later user
// could see: its state is atomics, values its mutexes guard (each taken, replaced or
// pushed in one step under the lock) and hooks that are only called, never changed
// after they are set. tokio's runtime handle
// is unwind-safe for the same reason, and so are tokio's sockets.
impl std::panic::UnwindSafe for Shared {}
impl std::panic::RefUnwindSafe for Shared {}

impl Shared {
    pub(crate) fn new(
        selector_waker: mio::Waker,
        registry: mio::Registry,
        max_pending_tasks: Option<usize>,
        default_shutdown: ShutdownParams,
        on_task_panic: Option<TaskPanicHook>,
        #[cfg(tokio_unstable)] unstable: crate::unstable::UnstableMetrics,
    ) -> Shared {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Shared {
            id: NEXT_ID.fetch_add(1, Relaxed),
            inbox: Inbox::new(max_pending_tasks),
            next_wakeup: NextWakeup::new(),
            state: AtomicU8::new(LoopState::NotStarted as u8),
            gate: TurnGate::default(),
            selector_waker,
            registry,
            io: RegistrationSet::default(),
            shutdown: Mutex::new(None),
            default_shutdown,
            on_task_panic,
            termination: Arc::default(),
            orphans: Mutex::new(Some(Vec::new())),
            shutdown_hooks: Mutex::new(Vec::new()),
            starter: OnceLock::new(),
            start_requested: AtomicBool::new(false),
            clock: crate::clock::Clock::default(),
            producers: ProducerCounters::default(),
            published: Published::default(),
            blocks: BlockCache::default(),
            peers: OnceLock::new(),
            #[cfg(tokio_unstable)]
            unstable,
            on_ring: AtomicBool::new(false),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            group_index: OnceLock::new(),
        }
    }

    pub(crate) fn state(&self) -> LoopState {
        LoopState::from_u8(self.state.load(Acquire))
    }

    pub(crate) fn set_state(&self, state: LoopState) {
        self.state.store(state as u8, Release);
    }

    /// Moves the state forward to `to` if it is behind; returns the previous state.
    pub(crate) fn advance_state(&self, to: LoopState) -> LoopState {
        let prev = self.state.fetch_max(to as u8, AcqRel);
        LoopState::from_u8(prev)
    }

    pub(crate) fn set_starter(&self, starter: Box<dyn Fn() + Send + Sync + 'static>) -> bool {
        self.starter.set(starter).is_ok()
    }

    /// Lazy start (Netty `startThread`): the first submission to a loop that nobody
    /// drives yet asks the owner, once, to start driving it.
    pub(crate) fn ensure_started(&self) {
        if self.state.load(Relaxed) == LoopState::NotStarted as u8 {
            self.request_start();
        }
    }

    /// Calls the lazy starter once, whatever the state (a shutdown request must start a
    /// loop nobody drives yet, or it would never terminate).
    pub(crate) fn request_start(&self) {
        if !self.start_requested.load(Relaxed)
            && !self.start_requested.swap(true, AcqRel)
            && let Some(start) = self.starter.get()
        {
            start();
        }
    }

    /// Wakes the loop if it is blocked past `deadline` (0 = "now"), counting the result.
    pub(crate) fn wake(&self, deadline: u64) {
        if self.next_wakeup.should_wake(deadline) {
            self.producers.wakeups_sent.fetch_add(1, Relaxed);
            self.write_eventfd();
        } else if deadline == 0 {
            self.producers.wakeups_suppressed.fetch_add(1, Relaxed);
        }
    }

    /// Unconditional wake (shutdown requests).
    pub(crate) fn force_wake(&self) {
        if self.next_wakeup.should_wake(0) {
            self.producers.wakeups_sent.fetch_add(1, Relaxed);
            self.write_eventfd();
        }
    }

    /// Ends the select in progress (or the next one) whatever the wake-up protocol
    /// says: for a stand-in told to stop, which waits in the loop's selector while the
    /// loop counts as awake.
    pub(crate) fn write_eventfd(&self) {
        if let Err(e) = self.selector_waker.wake() {
            tracing::error!(target: "netloop::reactor", loop_id = self.id, error = %e, "failed to wake the event loop");
        }
    }

    /// A new submission from another thread: the inbox (bounded by
    /// `max_pending_tasks`), then the wakeup protocol.
    pub(crate) fn submit_remote(&self, item: LoopItem, wake: Wake) -> Result<(), RejectedExecution> {
        match self.inbox.push_new(item) {
            Ok(()) => {
                match wake {
                    Wake::Now => self.wake(0),
                    Wake::Before(deadline) => self.wake(deadline),
                    Wake::Lazy => {}
                }
                self.ensure_started();
                Ok(())
            }
            Err((item, reason)) => Err(RejectedExecution::new(reason, item.into_closure())),
        }
    }

    /// Sends a runnable from another thread to this loop: the inbox plus the wakeup
    /// protocol. Hands it back if the inbox has closed.
    fn push_remote(&self, runnable: LoopRunnable) -> Result<(), LoopRunnable> {
        match self.inbox.push(QueueItem::Runnable(runnable)) {
            Ok(()) => {
                self.wake(0);
                self.ensure_started();
                Ok(())
            }
            Err(QueueItem::Runnable(runnable)) => Err(runnable),
            Err(_) => unreachable!("the inbox hands back what it was given"),
        }
    }

    /// The first schedule of a task newly spawned from another thread, never polled
    /// yet. If the loop shut down meanwhile, the runnable is dropped right here: its
    /// future has never run (for `spawn_pinned` it is still only the `Send` closure), so
    /// dropping it on this thread is sound, and it resolves the task's handle as
    /// cancelled.
    pub(crate) fn schedule_new_remote(&self, runnable: LoopRunnable) {
        if let Err(runnable) = self.push_remote(runnable) {
            drop(runnable);
        }
    }

    /// [`schedule_new_remote`](Self::schedule_new_remote) for many, with one wake.
    pub(crate) fn schedule_new_remote_all(&self, runnables: Vec<LoopRunnable>) {
        let mut pushed = false;
        for runnable in runnables {
            match self.inbox.push(QueueItem::Runnable(runnable)) {
                Ok(()) => pushed = true,
                // Closed: the loop has shut down; the never-polled `Send` future is
                // dropped here, which resolves its handle as cancelled.
                Err(item) => drop(item),
            }
        }
        if pushed {
            self.wake(0);
            self.ensure_started();
        }
    }

    /// A loop task woken on another thread: through the inbox, or, if the inbox has
    /// closed, onto the orphans that the final drain adopts.
    pub(crate) fn send_remote(&self, runnable: LoopRunnable) {
        if let Err(runnable) = self.push_remote(runnable) {
            self.orphan(runnable);
        }
    }

    /// A wake that lost the race with shutdown: kept for the final drain, which runs
    /// the task one more time if it is still live.
    fn orphan(&self, runnable: LoopRunnable) {
        let mut orphans = lock(&self.orphans);
        match orphans.as_mut() {
            Some(list) => list.push(runnable),
            None => {
                drop(orphans);
                // The loop has terminated, so every one of its tasks is finished, and
                // a remote wake owns nothing but a reference: dropping it here is fine.
                drop(runnable);
            }
        }
    }
}
