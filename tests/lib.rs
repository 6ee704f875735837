//! Integration tests of netloop live beside this file; this library holds the helpers
//! they share.

use std::panic::resume_unwind;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread;
use std::time::Duration;

use netloop::runtime::{Builder, Runtime};

/// How long one test body may run before it counts as hung.
pub const LIMIT: Duration = Duration::from_secs(5);

/// How long a test waits for a signal that should come at once.
pub const WAIT: Duration = Duration::from_secs(3);

/// Runs `body` on a thread of its own and fails the test if it has not finished
/// within `limit`: a hang becomes a failure instead of a stuck test run. A panic of
/// `body` is re-raised here, so `#[should_panic]` and assertion messages work as usual.
#[track_caller]
pub fn within<T, F>(limit: Duration, body: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let body_thread = thread::Builder::new()
        .name("test-body".into())
        .spawn(move || {
            let out = body();
            let _ = tx.send(out);
        })
        .expect("spawn the test body's thread");
    match rx.recv_timeout(limit) {
        Ok(out) => {
            let _ = body_thread.join();
            out
        }
        Err(RecvTimeoutError::Timeout) => panic!("the test did not finish within {limit:?}: it hangs"),
        Err(RecvTimeoutError::Disconnected) => match body_thread.join() {
            Err(panic) => resume_unwind(panic),
            Ok(()) => unreachable!("the body ended without sending its result"),
        },
    }
}

/// [`within`] with the default [`LIMIT`].
#[track_caller]
pub fn test_body<T, F>(body: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    within(LIMIT, body)
}

/// A small multi-thread runtime: two loops (the test machine has two cores).
pub fn multi() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a multi-thread runtime")
}

/// A multi-thread runtime with one loop, for tests of ordering on a single loop.
pub fn single_loop() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("build a one-loop runtime")
}

/// One worker and a blocking pool of one thread: blocking tasks queue behind each
/// other.
pub fn one_blocking_thread() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// A current-thread runtime.
pub fn current() -> Runtime {
    Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build a current-thread runtime")
}

/// The name of the calling thread, or `""`.
pub fn thread_name() -> String {
    thread::current().name().unwrap_or("").to_owned()
}

/// Sends the name of the thread it is dropped on: shows when and where a task's
/// future was dropped.
#[derive(Debug)]
pub struct DropSignal(pub Sender<String>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(thread_name());
    }
}

/// True if `name` is a default loop thread name, `netloop-{group}-{index}`.
pub fn is_default_loop_name(name: &str) -> bool {
    let mut parts = name.split('-');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some("netloop"), Some(group), Some(index), None)
            if group.parse::<usize>().is_ok() && index.parse::<usize>().is_ok()
    )
}

/// A fresh path for a Unix socket in the temp dir, unique per process and name,
/// removed when dropped (a socket file outlives its socket).
pub struct TempPath(pub std::path::PathBuf);

impl TempPath {
    /// A path for `name`; anything already there is removed.
    pub fn new(name: &str) -> TempPath {
        let path = std::env::temp_dir().join(format!("netloop-{}-{name}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempPath(path)
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The text of a panic's payload (`panic!` gives a `&str` or a `String`); empty for
/// any other payload.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// The panic message of `f`, which must panic.
pub fn panic_message<R>(f: impl FnOnce() -> R) -> String {
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .err()
        .expect("expected a panic");
    panic_text(&*panic)
}
