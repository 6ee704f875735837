//! tokio's unstable `task::Builder` (`--cfg tokio_unstable`): spawns a task with a name,
//! on the current runtime, a given one, the current `LocalSet` or a given one, or the
//! blocking pool. `JoinSet::build_task`'s builder is `join_set::Builder`.
//!
//! Each spawn goes where the plain function of the same name sends it
//! (`task::spawn`, `Handle::spawn`, `task::spawn_local`, `LocalSet::spawn_local`,
//! `task::spawn_blocking`), with the caller's location for the runtime's task hooks.

use std::fmt;
use std::future::Future;
use std::io;

use super::harness::Origin;
use super::join::JoinHandle;
use super::local::LocalSet;
use crate::runtime::handle::Handle;

/// Spawns a task with options (tokio's unstable `task::Builder`): for now a name.
///
/// The name goes to the task's `runtime.spawn` span (`task.name`) with tokio's
/// `tracing` feature, which tokio-console shows (docs/observability.md); without it the
/// name is not kept. Each spawn goes where the plain function of the same name sends it. The
/// spawns never fail: each returns `Ok`, as tokio's do but for a runtime that cannot
/// start a blocking thread (netloop's `spawn_blocking` panics then, as tokio's own
/// `spawn_blocking` does).
///
/// ```
/// use netloop_scheduler::task::Builder;
///
/// let rt = netloop_scheduler::runtime::Builder::new_current_thread().build()?;
/// let out = rt.block_on(async {
///     Builder::new().name("answer").spawn(async { 42 })?.await.map_err(std::io::Error::other)
/// })?;
/// assert_eq!(out, 42);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Default, Clone, Copy)]
#[must_use = "a builder spawns nothing until one of its spawn methods is called"]
pub struct Builder<'a> {
    name: Option<&'a str>,
}

impl fmt::Debug for Builder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder").field("name", &self.name).finish()
    }
}

impl<'a> Builder<'a> {
    /// A builder with no name.
    pub fn new() -> Self {
        Builder::default()
    }

    /// Names the task.
    pub fn name(&self, name: &'a str) -> Self {
        Builder { name: Some(name) }
    }

    /// Where a spawn of this builder comes from: the caller's location and the name.
    #[track_caller]
    pub(crate) fn origin(&self) -> Origin {
        Origin::caller().named(self.name)
    }

    /// Spawns `future` as [`task::spawn`](super::spawn) does.
    ///
    /// # Panics
    ///
    /// Outside a runtime, as `task::spawn`.
    #[track_caller]
    pub fn spawn<Fut>(self, future: Fut) -> io::Result<JoinHandle<Fut::Output>>
    where
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let origin = self.origin();
        Ok(crate::placement::with_spawn_loop(|event_loop, movable| {
            super::spawn::spawn_movable(event_loop, future, None, movable, origin)
        }))
    }

    /// Spawns `future` onto `handle`'s runtime, as [`Handle::spawn`] does.
    #[track_caller]
    pub fn spawn_on<Fut>(self, future: Fut, handle: &Handle) -> io::Result<JoinHandle<Fut::Output>>
    where
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        Ok(handle.spawn_at(future, self.origin()))
    }

    /// Spawns a `!Send` future as [`task::spawn_local`](super::spawn_local) does.
    ///
    /// # Panics
    ///
    /// Outside a `LocalSet`, a `LocalRuntime` and a netloop loop, as `spawn_local`.
    #[track_caller]
    pub fn spawn_local<Fut>(self, future: Fut) -> io::Result<JoinHandle<Fut::Output>>
    where
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        Ok(super::spawn::spawn_local_with_id(
            move |_| future,
            self.origin().kind("local"),
        ))
    }

    /// Spawns a `!Send` future into `local_set`, as [`LocalSet::spawn_local`] does.
    #[track_caller]
    pub fn spawn_local_on<Fut>(self, future: Fut, local_set: &LocalSet) -> io::Result<JoinHandle<Fut::Output>>
    where
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        Ok(local_set.spawn_local_with_id(move |_| future, self.origin().kind("local")))
    }

    /// Runs `function` on the blocking pool, as [`task::spawn_blocking`](super::spawn_blocking)
    /// does.
    ///
    /// # Panics
    ///
    /// Outside a runtime, or when the pool has no thread and the OS refuses one, as
    /// `spawn_blocking`.
    #[track_caller]
    pub fn spawn_blocking<Function, Output>(self, function: Function) -> io::Result<JoinHandle<Output>>
    where
        Function: FnOnce() -> Output + Send + 'static,
        Output: Send + 'static,
    {
        Ok(Handle::current().spawn_blocking_at(function, self.origin()))
    }

    /// Runs `function` on `handle`'s blocking pool.
    ///
    /// # Panics
    ///
    /// When the pool has no thread and the OS refuses one, as `spawn_blocking`.
    #[track_caller]
    pub fn spawn_blocking_on<Function, Output>(
        self,
        function: Function,
        handle: &Handle,
    ) -> io::Result<JoinHandle<Output>>
    where
        Function: FnOnce() -> Output + Send + 'static,
        Output: Send + 'static,
    {
        Ok(handle.spawn_blocking_at(function, self.origin()))
    }
}
