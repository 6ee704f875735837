//! Helpers shared by the integration test binaries (`scenarios.rs`, `behaviour.rs`).
//!
//! Every test body runs under [`with_timeout`], so a hang fails the test instead of the
//! whole suite. Tests never sleep to "let something happen": they wait on a channel,
//! on termination, or on a condition polled under a deadline ([`wait_until`]).

#![allow(dead_code)]

use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use netloop_reactor::{DriveError, EventLoop, EventLoopHandle};

/// Runs `f` on its own thread and fails the test if it has not finished after `secs`
/// seconds. A panic inside `f` is re-raised here, so assertion messages survive.
pub fn with_timeout<T, F>(secs: u64, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let name = thread::current().name().unwrap_or("test").to_string();
    let body = thread::Builder::new()
        .name(format!("{name}:body"))
        .spawn(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
        })
        .expect("spawn test body thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(value)) => {
            let _ = body.join();
            value
        }
        Ok(Err(panic)) => {
            let _ = body.join();
            resume_unwind(panic)
        }
        Err(_) => panic!("TIMEOUT: the test body did not finish within {secs} s (the loop or the test hangs)"),
    }
}

/// Serializes the tests that measure time tightly or burn a whole core, so that they
/// do not skew each other on a small machine. Lock it *outside* `with_timeout`.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Polls `cond` (every millisecond) until it is true; panics after `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Watches `probe` for `window` and fails as soon as its value changes. For the design's
/// "nothing happens within N ms" checks. Returns the (unchanged) value.
pub fn assert_unchanged_for<T: PartialEq + Debug>(window: Duration, what: &str, mut probe: impl FnMut() -> T) -> T {
    let first = probe();
    let start = Instant::now();
    while start.elapsed() < window {
        thread::sleep(Duration::from_millis(5));
        let now = probe();
        assert_eq!(
            now,
            first,
            "{what} changed after {:?} (expected no change for {window:?})",
            start.elapsed()
        );
    }
    first
}

/// Receives within `timeout` or panics with `what`.
pub fn recv<T>(rx: &Receiver<T>, timeout: Duration, what: &str) -> T {
    match rx.recv_timeout(timeout) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => panic!("timed out after {timeout:?} waiting for {what}"),
        Err(RecvTimeoutError::Disconnected) => panic!("channel closed while waiting for {what}"),
    }
}

/// Asserts that nothing arrives on `rx` for `window`. A closed channel also counts as
/// "nothing arrives" (the sender was dropped, so nothing ever can).
pub fn assert_nothing_for<T: Debug>(rx: &Receiver<T>, window: Duration, what: &str) {
    match rx.recv_timeout(window) {
        Ok(v) => panic!("{what}: got {v:?} within {window:?}, expected nothing"),
        Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
    }
}

/// A one-shot gate: tasks wait on it (with a timeout, so nothing hangs) until opened.
#[derive(Clone, Default)]
pub struct Latch(Arc<(Mutex<bool>, Condvar)>);

impl Latch {
    /// A closed latch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens it and wakes every waiter.
    pub fn open(&self) {
        *self.0.0.lock().unwrap() = true;
        self.0.1.notify_all();
    }

    /// Waits until opened; false if `timeout` passed first.
    pub fn wait(&self, timeout: Duration) -> bool {
        let guard = self.0.0.lock().unwrap();
        let (guard, _) = self.0.1.wait_timeout_while(guard, timeout, |open| !*open).unwrap();
        *guard
    }
}

/// The kernel id of the calling thread (Linux), for [`is_blocked_in_poll`].
pub fn current_tid() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").expect("read /proc/thread-self");
    link.file_name()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .expect("parse tid")
}

/// True if thread `tid` of this process is asleep in its loop's select: `epoll_wait`, or
/// `io_uring_enter` for a loop on io_uring (`NETLOOP_IO_DRIVER=io_uring`). Reads
/// `/proc/self/task/<tid>/{stat,wchan,syscall}`.
pub fn is_blocked_in_poll(tid: u32) -> bool {
    let base = format!("/proc/self/task/{tid}");
    let Ok(stat) = std::fs::read_to_string(format!("{base}/stat")) else {
        return false;
    };
    // The state is the first field after the parenthesised command name.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    if state != Some("S") {
        return false;
    }
    if let Ok(wchan) = std::fs::read_to_string(format!("{base}/wchan"))
        && !wchan.trim().is_empty()
        && wchan.trim() != "0"
    {
        return wchan.contains("epoll") || wchan.contains("io_cqring_wait");
    }
    if cfg!(target_arch = "x86_64")
        && let Ok(sc) = std::fs::read_to_string(format!("{base}/syscall"))
        && let Some(Ok(nr)) = sc.split_whitespace().next().map(str::parse::<u32>)
    {
        // epoll_wait, epoll_pwait, epoll_pwait2, io_uring_enter
        return matches!(nr, 232 | 281 | 441 | 426);
    }
    true
}

/// Waits (up to 2 s) until the loop thread `tid` is blocked in `Poll::poll`.
pub fn wait_until_blocked(tid: u32) {
    wait_until(Duration::from_secs(2), "the loop thread to block in epoll_wait", || {
        is_blocked_in_poll(tid)
    });
}

/// A loop driven by `run()` on its own thread, shut down (quiet period 0) when dropped.
pub struct Running {
    /// The loop's handle.
    pub handle: EventLoopHandle,
    /// The Rust id of the loop's thread.
    pub thread_id: ThreadId,
    /// The kernel id of the loop's thread.
    pub tid: u32,
    join: Option<JoinHandle<Result<(), DriveError>>>,
}

/// Starts driving `el` with `run()` on a new thread named `netloop-test-loop`.
pub fn spawn_loop(el: EventLoop) -> Running {
    let handle = el.handle();
    let (tx, rx) = mpsc::channel();
    let join = thread::Builder::new()
        .name("netloop-test-loop".into())
        .spawn(move || {
            let mut el = el;
            tx.send(current_tid()).unwrap();
            el.run()
        })
        .expect("spawn loop thread");
    let tid = recv(&rx, Duration::from_secs(2), "the loop thread to start");
    let thread_id = join.thread().id();
    Running {
        handle,
        thread_id,
        tid,
        join: Some(join),
    }
}

/// `spawn_loop(EventLoop::new())`.
pub fn start_loop() -> Running {
    spawn_loop(EventLoop::new().expect("create event loop"))
}

impl Running {
    /// Waits up to `within` for the loop to terminate (someone must have asked it to),
    /// then joins its thread and checks `run()` returned `Ok`.
    pub fn join(mut self, within: Duration) {
        self.handle
            .await_termination(within)
            .expect("the loop did not terminate in time");
        let join = self.join.take().expect("joined once");
        join.join().expect("loop thread panicked").expect("run() failed");
    }

    /// Graceful shutdown with quiet period 0, then [`join`](Self::join).
    pub fn shutdown(self, within: Duration) {
        // The termination future is not needed: `join` waits with a timeout.
        drop(
            self.handle
                .shutdown_gracefully_with(Duration::ZERO, within)
                .expect("valid shutdown parameters"),
        );
        self.join(within + Duration::from_secs(1));
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(join) = self.join.take() {
            let _ = self
                .handle
                .shutdown_gracefully_with(Duration::ZERO, Duration::from_secs(1));
            // Do not hang the test harness on a loop that is stuck (the failing test
            // already reported why); just leave its thread behind.
            if self.handle.await_termination(Duration::from_secs(2)).is_ok() {
                let _ = join.join();
            }
        }
    }
}

/// Counts its drops, to prove that closures and futures were released.
pub struct DropCounter(pub Arc<std::sync::atomic::AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Reports the thread it is dropped on.
pub struct DropOnThread(pub mpsc::Sender<(&'static str, ThreadId)>, pub &'static str);

impl Drop for DropOnThread {
    fn drop(&mut self) {
        let _ = self.0.send((self.1, thread::current().id()));
    }
}

/// A deterministic xorshift generator for "random" choices.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next pseudo-random number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}
