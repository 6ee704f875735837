//! loom models of the task's cross-thread protocol, on the real `raw`, `join` and
//! `runnable` code: the loop thread finishing a task races the handle being dropped,
//! detached or polled on another thread.
//!
//! The loop side is driven by hand (poll through the vtable, then `complete`), as
//! `Runnable::run` does, so no event loop runs; the task's `Shared` is real (its
//! inbox and wakeup word are loom-modelled, its mio waker is a real eventfd).
//!
//! What loom explores is the state word (reference count, outcome, `HANDLE`,
//! `JOIN_WAKER`, `CANCEL`, `NOTIFIED`): a lost join wake shows as a deadlock, a lost
//! or extra reference as a block that is not freed. The stage and the waker slot are
//! plain `UnsafeCell`s that loom does not track; the ordering of their accesses is
//! checked by miri instead (the `tests` module runs under miri). Deleting the join wake
//! in `finish`, the reference release in `release`, or the release of a wake that
//! finds its task finished (`wake_remote`), makes these models fail.
//!
//! The last model puts a task's waker in an I/O registration (`Readiness`, whose
//! atomics and waiters' lock are loom's too) and races its wait against the event.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p netloop-reactor --lib --release loom_models`.

use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use loom::sync::Notify;
use loom::sync::atomic::AtomicUsize;
use loom::sync::atomic::Ordering::SeqCst;
use loom::thread;

use super::header::{Header, header};
use super::runnable::finish;
use super::spawn_unchecked as new_unchecked;
use super::state::COMPLETE;
use super::waker::raw_waker;
use crate::config::EventLoopBuilder;
use crate::shared::{LoopRunnable, Shared};
use crate::sys::WAKER_TOKEN;

/// The loop's own step after a poll that returned `Ready`.
///
/// # Safety
/// As `finish`: on the task's owner thread, the outcome stored, the task not listed.
unsafe fn complete(ptr: NonNull<Header>) {
    // SAFETY: per the contract; an unlisted task needs no local half.
    unsafe { finish::<Arc<Shared>>(ptr, COMPLETE, None) };
}

/// A loop's shared half without a loop: what a task needs to exist.
fn shared() -> Arc<Shared> {
    let poll = mio::Poll::new().expect("epoll");
    let waker = mio::Waker::new(poll.registry(), WAKER_TOKEN).expect("eventfd");
    let registry = poll.registry().try_clone().expect("registry");
    Arc::new(Shared::new(
        waker,
        registry,
        None,
        EventLoopBuilder::new().shutdown_params(),
        None,
    ))
}

/// The task's output: counts its drops.
struct Output(Arc<AtomicUsize>);

impl Drop for Output {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A raw task pointer that may cross to the model's loop thread.
struct SendPtr(NonNull<Header>);
// SAFETY: only the loop thread of the model uses it, as the loop's own reference.
unsafe impl Send for SendPtr {}

/// Spawns the "loop": one turn of the task that completes it, as `Runnable::run`
/// does for a task whose poll returns `Ready`.
fn run_to_completion(runnable: LoopRunnable) -> thread::JoinHandle<()> {
    let ptr = SendPtr(runnable.ptr());
    std::mem::forget(runnable); // it borrows the loop's reference, which `complete` releases
    thread::spawn(move || {
        let ptr = ptr.0;
        // SAFETY: this thread owns the task from here on, as its loop would, and the
        // loop's reference keeps it alive until `complete` releases it.
        unsafe {
            let h = header(ptr);
            let mut cx = Context::from_waker(Waker::noop());
            assert!((h.vtable.poll)(ptr, &mut cx), "the future is ready at once");
            complete(ptr);
        }
    })
}

/// A task whose future returns an `Output` at its first poll.
fn ready_task(shared: &Arc<Shared>, drops: &Arc<AtomicUsize>) -> (LoopRunnable, super::Task<Output>) {
    let drops = drops.clone();
    // SAFETY: the future is `Send` and polled and dropped by one thread at a time.
    unsafe { new_unchecked(shared, async move { Output(drops) }, None, 0) }
}

/// Drops what the model left in the inbox (a cancel's wake holds a reference).
fn drain(shared: &Shared) {
    while let Some(task) = shared.inbox.pop() {
        drop(task);
    }
}

#[test]
fn a_handle_dropped_or_detached_while_the_task_completes_frees_everything_once() {
    for detach in [false, true] {
        loom::model(move || {
            let shared = shared();
            let drops = Arc::new(AtomicUsize::new(0));
            let (runnable, task) = ready_task(&shared, &drops);
            let lp = run_to_completion(runnable);
            if detach {
                task.detach();
            } else {
                drop(task); // a cancel request too, which the finished task ignores
            }
            lp.join().unwrap();
            drain(&shared);
            assert_eq!(drops.load(SeqCst), 1, "the output is dropped exactly once");
            assert_eq!(Arc::strong_count(&shared), 1, "the task block was freed");
        });
    }
}

/// A waker that a model thread can wait on.
struct Signal(Notify);

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.0.notify();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.notify();
    }
}

#[test]
fn the_handle_is_woken_when_the_task_completes_on_another_thread() {
    loom::model(|| {
        let shared = shared();
        let drops = Arc::new(AtomicUsize::new(0));
        let (runnable, mut task) = ready_task(&shared, &drops);
        let signal = Arc::new(Signal(Notify::new()));
        let waker = Waker::from(signal.clone());
        let lp = run_to_completion(runnable);
        // The JOIN_WAKER handshake: either the output is there, or the waker stored
        // now is woken when it is. A lost wake leaves this thread waiting: loom reports
        // the deadlock.
        let output = loop {
            let mut cx = Context::from_waker(&waker);
            match Pin::new(&mut task).poll(&mut cx) {
                Poll::Ready(output) => break output,
                Poll::Pending => signal.0.wait(),
            }
        };
        drop(output);
        assert_eq!(drops.load(SeqCst), 1);
        lp.join().unwrap();
        drop(task);
        drain(&shared);
        assert_eq!(Arc::strong_count(&shared), 1, "the task block was freed");
    });
}

#[test]
fn a_wake_from_another_thread_racing_completion_leaks_nothing() {
    // The future pends once, handing its waker to another thread; that thread wakes
    // the task while the loop polls it to completion. The wake either finds the task
    // finished and does nothing, or queues a remote runnable holding a reference of its
    // own; either way, once the inbox is drained, every reference is gone.
    loom::model(|| {
        let shared = shared();
        let drops = Arc::new(AtomicUsize::new(0));
        let handed = Arc::new(Handoff {
            waker: std::sync::Mutex::new(None),
            ready: Notify::new(),
        });
        let (runnable, task) = {
            let (drops, handed) = (drops.clone(), handed.clone());
            let mut polls = 0;
            let future = std::future::poll_fn(move |cx| {
                polls += 1;
                if polls == 1 {
                    *handed.waker.lock().unwrap() = Some(cx.waker().clone());
                    handed.ready.notify();
                    Poll::Pending
                } else {
                    Poll::Ready(Output(drops.clone()))
                }
            });
            // SAFETY: the future is `Send`; one thread at a time polls and drops it.
            unsafe { new_unchecked(&shared, future, None, 0) }
        };
        task.detach();
        let ptr = SendPtr(runnable.ptr());
        std::mem::forget(runnable);
        let lp = thread::spawn(move || {
            let ptr = ptr.0;
            // SAFETY: as in `run_to_completion`: this thread is the task's loop, and
            // the waker it polls with borrows the loop's reference (never dropped).
            unsafe {
                let h = header(ptr);
                let waker = std::mem::ManuallyDrop::new(Waker::from_raw(raw_waker(ptr)));
                let mut cx = Context::from_waker(&waker);
                assert!(!(h.vtable.poll)(ptr, &mut cx), "pends first");
                assert!((h.vtable.poll)(ptr, &mut cx), "then completes");
                complete(ptr);
            }
        });
        // loom's `Notify` may wake spuriously: wait until the waker is there.
        let waker = loop {
            if let Some(waker) = handed.waker.lock().unwrap().take() {
                break waker;
            }
            handed.ready.wait();
        };
        waker.wake();
        lp.join().unwrap();
        drain(&shared);
        assert_eq!(drops.load(SeqCst), 1, "the output is dropped exactly once");
        assert_eq!(Arc::strong_count(&shared), 1, "the task block was freed");
    });
}

/// The pending future's waker, handed to the waking thread.
struct Handoff {
    waker: std::sync::Mutex<Option<Waker>>,
    ready: Notify,
}

/// How the task's slot stands when the race below begins.
#[derive(Clone, Copy, Debug)]
enum Slot {
    /// Empty: the task registers under the waiters' lock.
    Empty,
    /// Armed with the task's waker: polled again before any event, it skips the lock.
    Armed,
    /// Holding the task's waker, woken by an earlier event: it re-arms the slot with a
    /// compare-and-swap, without the lock.
    Woken,
}

/// A loop task waiting on a socket's readiness (`Readiness`), and the loop recording
/// an event for it on another thread, from each [`Slot`] state: either the task sees
/// the readiness, or the event wakes it (a remote runnable in the inbox). Without the
/// readiness check after registering, with an armed slot not woken, or with the
/// re-arming exchange not checked again, the wake is lost and the model fails.
#[test]
fn a_task_waiting_on_readiness_racing_an_event_is_woken_or_sees_it() {
    use crate::io::readiness::Readiness;
    use crate::io::{Direction, Ready};

    for before in [Slot::Empty, Slot::Armed, Slot::Woken] {
        loom::model(move || {
            let shared = shared();
            // SAFETY: the future is `Send`; it is never polled, only its waker is used.
            let (runnable, task) = unsafe { new_unchecked(&shared, std::future::pending::<()>(), None, 0) };
            task.detach();
            let io = Arc::new(Readiness::new(0));
            let header_ptr = runnable.ptr();
            let ptr = SendPtr(header_ptr);
            let poll_ready = move |io: &Readiness| {
                let ptr = &ptr;
                // SAFETY: the waker borrows the reference the runnable holds until the
                // end of the model (never dropped); the slot clones its own.
                let waker = std::mem::ManuallyDrop::new(unsafe { Waker::from_raw(raw_waker(ptr.0)) });
                io.poll_ready(&mut Context::from_waker(&waker), Direction::Read)
            };
            if matches!(before, Slot::Armed | Slot::Woken) {
                assert!(poll_ready(&io).is_pending());
            }
            if matches!(before, Slot::Woken) {
                // An earlier event wakes the task; it runs (its remote wake is taken
                // and spent, as `Runnable::run` does) and drains the socket.
                let mut others = Vec::new();
                io.set_readiness(Ready::READABLE, &|_| false, &mut others);
                assert!(others.is_empty(), "a loop task's waker stays in its slot");
                spend_remote_wake(&shared, header_ptr);
                let seen = io.ready_now(Direction::Read).expect("the earlier event");
                io.clear_readiness(seen);
            }
            let lp = {
                let io = io.clone();
                thread::spawn(move || {
                    let mut others = Vec::new();
                    io.set_readiness(Ready::READABLE, &|_| false, &mut others);
                    assert!(others.is_empty(), "a loop task's waker stays in its slot");
                })
            };
            let polled = poll_ready(&io);
            lp.join().unwrap();
            assert!(
                polled.is_ready() || !shared.inbox.is_empty(),
                "the task neither saw the event nor was woken by it ({before:?})"
            );
            drain(&shared);
            drop(io); // the slot's waker releases its reference
            drop(runnable); // cancels the never-run task and releases the loop's reference
            drain(&shared);
            assert_eq!(Arc::strong_count(&shared), 1, "the task block was freed");
        });
    }
}

/// Takes the task's remote wake from the inbox and spends it as the loop's turn does:
/// later wakes from other threads need a runnable of their own again.
fn spend_remote_wake(shared: &Shared, ptr: NonNull<Header>) {
    let task = shared.inbox.pop().expect("the task was woken");
    // SAFETY: the model holds the loop's reference until its end.
    unsafe { header(ptr) }
        .state
        .fetch_and(!super::state::NOTIFIED, std::sync::atomic::Ordering::AcqRel);
    drop(task);
}

/// A task that was never polled moves to another loop (`Runnable::rebind`) while its
/// abort handle cancels it on another thread. Either the abort comes first (the move
/// refuses, and the abort's wake goes to the first loop) or it finds the task moving
/// or moved (it sends no wake while `MOVING`, and the turn, wherever it runs, sees
/// `CANCEL`). Either way the turn closes the task without polling it, and every
/// reference is released once.
#[test]
fn a_move_racing_an_abort_loses_nothing() {
    loom::model(|| {
        let (first, second) = (shared(), shared());
        let drops = Arc::new(AtomicUsize::new(0));
        let (runnable, task) = ready_task(&first, &drops);
        // SAFETY: just spawned, and the future and its output are `Send`.
        let runnable = unsafe { runnable.into_movable() };
        let abort = task.abort_handle();
        let aborter = thread::spawn(move || abort.abort());
        // SAFETY: this thread created the task and holds its one turn: its owner.
        let moved = unsafe { runnable.rebind(&second) };
        aborter.join().unwrap();
        let (runnable, owner) = match moved {
            Ok(runnable) => (runnable, &second),
            Err(runnable) => (runnable, &first),
        };
        // SAFETY: the task is alive (the turn borrows the owner's reference).
        assert!(Arc::ptr_eq(
            unsafe { super::header::scheduler::<Arc<Shared>>(runnable.ptr()) },
            owner
        ));
        let (selector, _, _) = crate::sys::Selector::new(8, None).expect("epoll");
        let core = crate::core::Core::with_ring(owner.clone(), selector, None);
        // SAFETY: `core` is the local half of the task's owner, on this thread alone.
        unsafe { runnable.run(&core) };
        assert_eq!(drops.load(SeqCst), 0, "an aborted task was polled");
        assert!(task.is_finished());
        drop(task);
        drain(&first);
        drain(&second);
    });
}

/// Counts a destructor's runs, and whether each could take the lock it needs.
struct Connection {
    streams: Arc<loom::sync::Mutex<Option<Waker>>>,
    took_lock: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Inside the stream's wake this would find the lock held (a plain `lock` would
        // deadlock, as h2's does).
        if self.streams.try_lock().is_ok() {
            self.took_lock.fetch_add(1, SeqCst);
        }
        self.dropped.fetch_add(1, SeqCst);
    }
}

/// Wakes the connection task with the streams' lock held, as h2's `RecvStream` does.
struct Stream(Arc<loom::sync::Mutex<Option<Waker>>>);

impl Drop for Stream {
    fn drop(&mut self) {
        let streams = self.0.lock().unwrap();
        if let Some(waker) = streams.as_ref() {
            waker.wake_by_ref();
        }
    }
}

/// A loop terminates with two waiting tasks shaped as h2's stream and connection,
/// while another thread wakes the connection (an event on another loop, say). Whatever
/// the interleaving, each future is dropped once, on the loop's thread, by the
/// termination sweep (`Core::close_tasks`), the remote wake's reference is released
/// once (through the inbox, the orphans, or at once after the sweep), and both blocks
/// are freed; the connection's destructor never runs inside the other thread's wake.
///
/// The model drives no loop context (under loom the model's threads share one OS
/// thread, and with it the context's thread-local), so the stream destructor's own wake
/// takes the remote path here: that the sweep never closes a task inside a local wake
/// is checked by `behaviour.rs::a_destructor_waking_a_task_under_a_lock_at_termination_…`
/// and `tests/unwritten_contracts.rs`, on real loops.
#[test]
fn termination_racing_a_remote_wake_drops_each_future_once_on_the_loop() {
    loom::model(|| {
        let shared = shared();
        let (selector, _, _) = crate::sys::Selector::new(8, None).expect("epoll");
        let core = crate::core::Core::with_ring(shared.clone(), selector, None);
        let streams = Arc::new(loom::sync::Mutex::new(None::<Waker>));
        let (took_lock, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let connection = Connection {
            streams: streams.clone(),
            took_lock: took_lock.clone(),
            dropped: dropped.clone(),
        };
        let s = streams.clone();
        let connection_future = std::future::poll_fn(move |cx| {
            let _keep = &connection;
            *s.lock().unwrap() = Some(cx.waker().clone());
            Poll::<()>::Pending
        });
        let stream = Stream(streams.clone());
        let stream_future = async move {
            let _keep = &stream;
            std::future::pending::<()>().await
        };
        // SAFETY: both futures are `Send`; this thread polls and drops them (it is their
        // loop: `core` is the local half of their owner).
        let (first, c_task) = unsafe { new_unchecked(&shared, connection_future, None, 1) };
        // SAFETY: as above.
        let (second, s_task) = unsafe { new_unchecked(&shared, stream_future, None, 2) };
        c_task.detach();
        s_task.detach();
        // SAFETY: `core` is the owner's local half, on this thread; each turn lists its
        // pending task.
        unsafe {
            first.run(&core);
            second.run(&core);
        }
        drain(&shared);
        let waker = streams.lock().unwrap().clone().expect("the connection's waker");
        let other = thread::spawn(move || waker.wake());
        // `terminate`'s steps on the loop's thread.
        shared.inbox.close();
        core.local.state.set(crate::LoopState::Terminated);
        core.close_tasks();
        other.join().unwrap();
        *crate::sync::lock(&shared.orphans) = None;
        drain(&shared);
        assert_eq!(dropped.load(SeqCst), 1, "the connection's future is dropped once");
        assert_eq!(
            took_lock.load(SeqCst),
            1,
            "its destructor ran outside the stream's lock"
        );
        drop(core);
        // The connection's waker, left in the streams' slot, holds the last reference.
        drop(streams.lock().unwrap().take());
        assert_eq!(Arc::strong_count(&shared), 1, "both task blocks were freed");
    });
}
