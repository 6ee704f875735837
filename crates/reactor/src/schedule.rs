//! The loop as the task layer sees it: [`Schedule`] for a loop's shared half, and how
//! a submission finds its way in, on the owner's thread or from any other.

use std::any::Any;
use std::sync::Arc;

use crate::block_cache::{BlockCache, LocalBlocks};
use crate::context;
use crate::core::Core;
use crate::error::RejectedExecution;
use crate::queue_item::QueueItem;
use crate::scheduled::ScheduledTask;
use crate::shared::{LoopItem, LoopRunnable, Shared, Wake};
use crate::task::{Schedule, TaskList};

// SAFETY: a loop's `Core` exists only on the thread driving the loop (`context` hands
// it out on that thread alone), and `is_local` compares the loop's identity; only that
// thread runs the runnables in its run queue and inbox, and a local runnable left at
// termination is dropped there.
unsafe impl Schedule for Arc<Shared> {
    type Local = Core;

    const PAD_REMOTE_SPAWNS: bool = true;

    #[inline]
    fn with_current<R>(f: impl FnOnce(Option<&Core>) -> R) -> R {
        context::with_core(f)
    }

    #[inline]
    fn is_local(&self, core: &Core) -> bool {
        Arc::ptr_eq(self, &core.shared)
    }

    #[inline]
    fn schedule_local(core: &Core, runnable: LoopRunnable) {
        #[cfg(tokio_unstable)]
        counts::local_schedule(core);
        core.local.push_wake(runnable);
    }

    #[inline]
    fn defer_local(core: &Core, runnable: LoopRunnable) {
        core.local.defer_runnable(runnable);
    }

    fn schedule_remote(&self, runnable: LoopRunnable) {
        #[cfg(tokio_unstable)]
        counts::schedule(self);
        self.send_remote(runnable);
    }

    #[inline]
    fn remote_blocks(&self) -> Option<&BlockCache> {
        Some(&self.blocks)
    }

    #[inline]
    fn local_blocks(core: &Core) -> Option<&LocalBlocks> {
        Some(&core.local.blocks)
    }

    fn task_list(core: &Core) -> &TaskList {
        &core.local.tasks
    }

    fn task_panicked(&self, payload: &(dyn Any + Send)) {
        if let Some(hook) = &self.on_task_panic {
            (hook.0)(payload);
        }
    }
}

impl Shared {
    /// Submits new work from any thread. On the loop's own thread it goes to the local
    /// run queue with no atomic operation and no wake; from any other, through the
    /// inbox and the wakeup protocol (design §4).
    pub(crate) fn submit(&self, item: LoopItem, wake: Wake) -> Result<(), RejectedExecution> {
        match context::on_own_core(self, item, |core, item| core.local.push_new(item)) {
            Ok(result) => result,
            Err(item) => self.submit_remote(item, wake),
        }
    }

    /// [`submit`](Self::submit) for a scheduled task due at `deadline`. On the loop's
    /// thread it goes into the wheel unboxed; only from another thread is it boxed into
    /// an inbox message.
    pub(crate) fn submit_scheduled(&self, task: ScheduledTask, deadline: u64) -> Result<(), RejectedExecution> {
        match context::on_own_core(self, task, |core, task| core.local.push_scheduled(task)) {
            Ok(result) => result,
            Err(task) => self.submit_remote(QueueItem::Schedule(Box::new(task)), Wake::Before(deadline)),
        }
    }
}

/// What a loop counts for tokio's unstable worker metrics at a schedule (see
/// `unstable`): kept here, with the loop's queues, since it looks at which loop this
/// thread drives.
#[cfg(tokio_unstable)]
pub(crate) mod counts {
    use std::sync::Arc;

    use crate::context;
    use crate::core::Core;
    use crate::shared::Shared;

    /// The capacity of a tokio worker's local run queue.
    const TOKIO_LOCAL_QUEUE: usize = 256;

    /// Counts a task scheduled onto `target` from this thread: a local schedule of the
    /// loop this thread drives if it is `target` or one of `target`'s group, otherwise
    /// a remote schedule of `target`.
    pub(crate) fn schedule(target: &Shared) {
        context::with_core(|core| match core {
            Some(core) if same_group(core, target) => core.shared.unstable.count_local_schedule(),
            _ => target.unstable.count_remote_schedule(),
        });
    }

    /// Counts a task scheduled on the loop `core` drives, by that loop's thread, before
    /// it is queued.
    #[inline]
    pub(crate) fn local_schedule(core: &Core) {
        core.shared.unstable.count_local_schedule();
        queue_grows(core, 1);
    }

    /// Counts an overflow (`UnstableMetrics::overflows`) if `added` tasks about to join
    /// the run queue take it past tokio's local queue.
    #[inline]
    pub(crate) fn queue_grows(core: &Core, added: usize) {
        let before = core.local.run_queue_len();
        if before <= TOKIO_LOCAL_QUEUE && before + added > TOKIO_LOCAL_QUEUE {
            core.shared.unstable.count_overflow();
        }
    }

    /// Whether the loop `core` drives is `target` or one of its peers.
    fn same_group(core: &Core, target: &Shared) -> bool {
        if std::ptr::eq(&*core.shared, target) {
            return true;
        }
        match (core.shared.peers.get(), target.peers.get()) {
            (Some((mine, _)), Some((theirs, _))) => Arc::ptr_eq(mine, theirs),
            _ => false,
        }
    }

    /// Counts a cooperative budget that just ran out, on the loop this thread drives.
    pub(crate) fn forced_yield() {
        context::with_core(|core| {
            if let Some(core) = core {
                core.shared.unstable.count_forced_yield();
            }
        });
    }
}
