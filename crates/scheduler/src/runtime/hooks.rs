//! tokio's unstable task hooks (`Builder::on_task_spawn`, `on_task_terminate`,
//! `on_before_task_poll`, `on_after_task_poll`), what they are given ([`TaskMeta`]),
//! and the runtime's count of spawned tasks, which the spawn hook's call site keeps.
//!
//! Built only with `--cfg tokio_unstable`: without it no task carries a hook and no
//! spawn or poll runs a line of this.

use std::fmt;
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::task::id::Id;

/// What a task hook is told about the task (tokio's unstable `runtime::TaskMeta`): its
/// id and where it was spawned.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let rt = netloop_scheduler::runtime::Builder::new_current_thread()
///     .on_task_spawn({
///         let seen = seen.clone();
///         move |meta| seen.lock().unwrap().push((meta.id(), meta.spawned_at().line()))
///     })
///     .build()?;
/// let task = rt.spawn(async {});
/// assert_eq!(seen.lock().unwrap()[0].0, task.id());
/// assert_eq!(seen.lock().unwrap()[0].1, line!() - 2);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TaskMeta<'a> {
    id: Id,
    spawned_at: &'static Location<'static>,
    _borrow: PhantomData<&'a ()>,
}

impl TaskMeta<'_> {
    pub(crate) fn new(id: Id, spawned_at: &'static Location<'static>) -> TaskMeta<'static> {
        TaskMeta {
            id,
            spawned_at,
            _borrow: PhantomData,
        }
    }

    /// The task's id, the one its `JoinHandle::id` and `task::id()` inside it return.
    pub fn id(&self) -> Id {
        self.id
    }

    /// The source location of the call that spawned the task (`tokio::spawn`,
    /// `Runtime::spawn`, `JoinSet::spawn`, `task::Builder::spawn`, ...).
    pub fn spawned_at(&self) -> &'static Location<'static> {
        self.spawned_at
    }
}

impl fmt::Debug for TaskMeta<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskMeta")
            .field("id", &self.id)
            .field("spawned_at", &self.spawned_at)
            .finish()
    }
}

/// A task hook.
pub(crate) type TaskCallback = Arc<dyn Fn(&TaskMeta<'_>) + Send + Sync>;

/// The hooks a builder was given; each may be absent.
#[derive(Clone, Default)]
pub(crate) struct TaskHooks {
    pub(crate) spawn: Option<TaskCallback>,
    pub(crate) terminate: Option<TaskCallback>,
    pub(crate) before_poll: Option<TaskCallback>,
    pub(crate) after_poll: Option<TaskCallback>,
}

/// What a runtime keeps about its tasks under `tokio_unstable`: its hooks, and how many
/// tasks were spawned onto it (`RuntimeMetrics::spawned_tasks_count`). A task spawned
/// onto the runtime holds it (see `task::harness::Origin`) when the runtime has a poll
/// or a terminate hook.
#[derive(Default)]
pub(crate) struct RuntimeTasks {
    pub(crate) hooks: TaskHooks,
    pub(crate) spawned: AtomicU64,
}

impl RuntimeTasks {
    /// Whether a task must carry the runtime with it: a hook runs at its polls or at
    /// its end.
    pub(crate) fn follows_tasks(&self) -> bool {
        self.hooks.terminate.is_some() || self.hooks.before_poll.is_some() || self.hooks.after_poll.is_some()
    }
}

/// Runs `hook` on `meta`; a panic in the hook is caught and logged, so that it neither
/// unwinds into the loop nor takes the task with it (tokio catches it too).
pub(crate) fn call(hook: &TaskCallback, meta: &TaskMeta<'_>, which: &'static str) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(meta))).is_err() {
        tracing::error!(target: "netloop::runtime", task_id = %meta.id, hook = which, "a task hook panicked");
    }
}
