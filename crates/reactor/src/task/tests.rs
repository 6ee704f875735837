//! The task's own contract: who drops what where, reference accounting, both wake
//! paths, and the join handshake. (The loop-level behaviour is in `tests/`.)

use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, ThreadId};
use std::time::Duration;

use crate::EventLoop;

/// Records the thread it is dropped on.
struct DropSpy(Arc<Mutex<Option<ThreadId>>>);

impl Drop for DropSpy {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(thread::current().id());
    }
}

fn spy() -> (DropSpy, Arc<Mutex<Option<ThreadId>>>) {
    let slot = Arc::new(Mutex::new(None));
    (DropSpy(slot.clone()), slot)
}

/// A task that never finishes, holding a spy that records where its future is dropped.
fn spawn_pending(h: &crate::EventLoopHandle) -> (crate::Task<()>, Arc<Mutex<Option<ThreadId>>>) {
    let (spy, dropped_on) = spy();
    let task = h
        .spawn(async move {
            let _spy = spy;
            std::future::pending::<()>().await;
        })
        .unwrap();
    (task, dropped_on)
}

/// Pending until `n` polls have happened, waking itself each time (a yield).
fn yields(n: usize) -> impl Future<Output = usize> {
    let mut polls = 0;
    poll_fn(move |cx| {
        polls += 1;
        if polls > n {
            Poll::Ready(polls)
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
}

#[test]
fn yields_keep_the_reference_count_and_run_to_completion() {
    let mut ev = EventLoop::new().unwrap();
    let task = ev.handle().spawn(yields(1000)).unwrap();
    assert_eq!(task.refs(), 2, "the loop's reference and the handle's");
    let (polls, refs) = ev
        .block_on(async move {
            let mut task = task;
            let polls = (&mut task).await;
            (polls, task.refs())
        })
        .unwrap();
    assert_eq!(polls, 1001);
    assert_eq!(refs, 1, "after completion only the handle holds a reference");
}

#[test]
fn a_task_that_yields_goes_behind_the_queued_ones() {
    let mut ev = EventLoop::new().unwrap();
    let h = ev.handle();
    let order = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..3)
        .map(|i| {
            let order = order.clone();
            h.spawn(async move {
                order.lock().unwrap().push((i, 0));
                yields(1).await;
                order.lock().unwrap().push((i, 1));
            })
            .unwrap()
        })
        .collect();
    ev.block_on(async move {
        for t in tasks {
            t.await;
        }
    })
    .unwrap();
    assert_eq!(*order.lock().unwrap(), [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]);
}

/// A waker that counts its wakes.
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn remote_wakes_coalesce_and_release_their_references() {
    let mut ev = EventLoop::new().unwrap();
    let (waker_tx, waker_rx) = mpsc::channel::<Waker>();
    let task = ev
        .handle()
        .spawn(async move {
            let mut sent = false;
            let mut polls = 0;
            poll_fn(move |cx| {
                polls += 1;
                if !sent {
                    sent = true;
                    waker_tx.send(cx.waker().clone()).unwrap();
                }
                if polls >= 3 { Poll::Ready(polls) } else { Poll::Pending }
            })
            .await
        })
        .unwrap();
    // Wake from 4 threads, many times each, while the loop is not running: the task
    // must be queued once, not once per wake, and no reference may leak.
    ev.block_on(async { yields(2).await }).unwrap();
    let waker = waker_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let w = waker.clone();
            thread::spawn(move || {
                for _ in 0..100 {
                    w.wake_by_ref();
                }
                w.wake();
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    // The loop's live-task set borrows the loop's reference: it adds none.
    assert_eq!(task.refs(), 4, "loop + handle + test's waker + one remote wake");
    ev.block_on(async { yields(2).await }).unwrap();
    assert_eq!(task.refs(), 3, "the remote wake was consumed");
    assert!(!task.is_finished(), "one coalesced wake, one poll");
    waker.wake();
    let polls = ev.block_on(task).unwrap();
    assert_eq!(polls, 3);
}

#[test]
fn dropping_the_handle_cancels_on_the_loop_thread() {
    let mut ev = EventLoop::new().unwrap();
    let (task, dropped_on) = spawn_pending(&ev.handle());
    ev.block_on(yields(2)).unwrap();
    let loop_thread = thread::current().id();
    // Dropped on another thread: the cancel travels to the loop as a remote wake.
    thread::spawn(move || drop(task)).join().unwrap();
    assert_eq!(*dropped_on.lock().unwrap(), None, "not dropped off the loop");
    ev.block_on(yields(2)).unwrap();
    assert_eq!(*dropped_on.lock().unwrap(), Some(loop_thread));
}

#[test]
fn a_detached_output_is_dropped_on_the_loop_thread() {
    let mut ev = EventLoop::new().unwrap();
    let (spy, dropped_on) = spy();
    ev.handle().spawn(async move { spy }).unwrap().detach();
    ev.block_on(yields(2)).unwrap();
    assert_eq!(*dropped_on.lock().unwrap(), Some(thread::current().id()));
}

#[test]
fn a_detached_output_is_dropped_when_the_task_completes_not_with_its_last_waker() {
    let mut ev = EventLoop::new().unwrap();
    let (spy, dropped_on) = spy();
    let (waker_tx, waker_rx) = mpsc::channel();
    ev.handle()
        .spawn(async move {
            poll_fn(|cx| {
                waker_tx.send(cx.waker().clone()).unwrap();
                Poll::Ready(())
            })
            .await;
            spy
        })
        .unwrap()
        .detach();
    ev.block_on(yields(2)).unwrap();
    // The waker keeps the block alive; the output must be gone already.
    let waker = waker_rx.try_recv().expect("the task ran");
    assert_eq!(*dropped_on.lock().unwrap(), Some(thread::current().id()));
    drop(waker);
}

#[test]
fn an_output_left_in_a_dropped_handle_is_dropped_with_it() {
    let mut ev = EventLoop::new().unwrap();
    let (spy, dropped_on) = spy();
    let task = ev.handle().spawn(async move { spy }).unwrap();
    ev.block_on(yields(2)).unwrap();
    assert!(task.is_finished());
    assert_eq!(*dropped_on.lock().unwrap(), None, "kept for the handle");
    let other = thread::spawn(move || {
        drop(task);
        thread::current().id()
    })
    .join()
    .unwrap();
    assert_eq!(*dropped_on.lock().unwrap(), Some(other));
}

#[test]
fn the_join_handle_wakes_its_latest_waker_from_another_thread() {
    let mut ev = EventLoop::new().unwrap();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = (Mutex::new(go_tx), Arc::new(Mutex::new(go_rx)));
    let task = ev
        .handle()
        .spawn(poll_fn(move |cx| {
            // Ready once the test says so; re-polled by yielding.
            if go_rx.lock().unwrap().try_recv().is_ok() {
                Poll::Ready(7)
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }))
        .unwrap();
    let (first, second) = (
        Arc::new(Count(AtomicUsize::new(0))),
        Arc::new(Count(AtomicUsize::new(0))),
    );
    let mut task = task;
    let poll_with = |task: &mut crate::Task<i32>, w: &Arc<Count>| {
        let waker = Waker::from(w.clone());
        Pin::new(task).poll(&mut Context::from_waker(&waker))
    };
    assert!(poll_with(&mut task, &first).is_pending());
    assert!(poll_with(&mut task, &first).is_pending(), "same waker kept");
    assert!(poll_with(&mut task, &second).is_pending(), "replaced");
    go_tx.lock().unwrap().send(()).unwrap();
    ev.block_on(yields(3)).unwrap();
    assert_eq!((first.0.load(SeqCst), second.0.load(SeqCst)), (0, 1));
    assert_eq!(poll_with(&mut task, &second), Poll::Ready(7));
}

#[test]
fn a_panic_resumes_where_the_task_is_awaited_and_the_loop_goes_on() {
    let mut ev = EventLoop::new().unwrap();
    let h = ev.handle();
    let bad = h.spawn(async { panic!("on purpose") }).unwrap();
    let bad_fallible = h.spawn(async { panic!("on purpose too") }).unwrap().fallible();
    let good = h.spawn(async { 5 }).unwrap();
    let out = ev.block_on(async move {
        let a = catch_unwind(AssertUnwindSafe(|| futures_lite_block(bad)));
        let b = catch_unwind(AssertUnwindSafe(|| futures_lite_block(bad_fallible)));
        (a.is_err(), b.is_err(), good.await)
    });
    assert_eq!(out.unwrap(), (true, true, 5));
}

/// Polls an already finished task once (it must be ready).
fn futures_lite_block<F: Future + Unpin>(mut f: F) -> F::Output {
    let waker = Waker::noop();
    match Pin::new(&mut f).poll(&mut Context::from_waker(waker)) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("expected a finished task"),
    }
}

#[test]
fn termination_closes_live_tasks_and_fallible_handles_see_none() {
    let mut ev = EventLoop::new().unwrap();
    let h = ev.handle();
    let (task, dropped_on) = spawn_pending(&h);
    let task = task.fallible();
    ev.block_on(yields(2)).unwrap();
    let _ = h.shutdown_gracefully_with(Duration::ZERO, Duration::from_secs(1));
    ev.run().unwrap();
    assert_eq!(*dropped_on.lock().unwrap(), Some(thread::current().id()));
    assert!(task.is_finished());
    assert_eq!(futures_lite_block(task), None);
}

#[test]
fn a_spawn_rejected_after_termination_drops_the_future_on_the_caller() {
    let mut ev = EventLoop::new().unwrap();
    let h = ev.handle();
    let _ = h.shutdown_gracefully_with(Duration::ZERO, Duration::from_secs(1));
    ev.run().unwrap();
    let (spy, dropped_on) = spy();
    assert!(h.spawn(async move { drop(spy) }).is_err());
    assert_eq!(*dropped_on.lock().unwrap(), Some(thread::current().id()));
}

#[test]
fn abort_drops_the_future_at_its_next_turn_and_the_handle_sees_none() {
    let mut ev = EventLoop::new().unwrap();
    let (task, dropped_on) = spawn_pending(&ev.handle());
    let task = task.fallible();
    ev.block_on(yields(2)).unwrap();
    let abort = task.abort_handle();
    assert!(!abort.is_finished() && !abort.is_aborted());
    // From another thread, twice: one turn, one drop.
    let a2 = abort.clone();
    thread::spawn(move || {
        a2.abort();
        a2.abort();
    })
    .join()
    .unwrap();
    assert!(abort.is_aborted());
    assert_eq!(ev.block_on(task).unwrap(), None);
    assert_eq!(*dropped_on.lock().unwrap(), Some(thread::current().id()));
    assert!(abort.is_finished(), "the abort handle outlives the task handle");
}

#[test]
fn abort_after_completion_keeps_the_output() {
    let mut ev = EventLoop::new().unwrap();
    let task = ev.handle().spawn(async { 9 }).unwrap();
    ev.block_on(yields(2)).unwrap();
    task.abort();
    assert_eq!(ev.block_on(task).unwrap(), 9);
}

#[test]
fn tasks_spawned_on_the_loop_thread_run_and_free_like_remote_ones() {
    // Spawned on the loop's own thread, a task has no padding after its stage (see
    // `raw::TaskCell`); every path that frees or reads it must agree on that layout
    // (miri checks the deallocation size).
    let mut ev = EventLoop::new().unwrap();
    let (future_spy, dropped_on) = spy();
    let (out_spy, out_dropped_on) = spy();
    let remote = ev.handle().spawn(yields(3)).unwrap();
    let (sum, detached_output_kept) = ev
        .block_on(async move {
            let here = crate::EventLoopHandle::current().unwrap();
            let joined = here.spawn(yields(5)).unwrap();
            let local = here
                .spawn_local(async move {
                    let _spy = future_spy;
                    yields(2).await
                })
                .unwrap();
            here.spawn(async move { out_spy }).unwrap().detach();
            let cancelled = here.spawn(yields(100)).unwrap();
            drop(cancelled);
            let kept = here.spawn(async { [7u8; 300] }).unwrap();
            let sum = joined.await + local.await + remote.await;
            (sum, kept.await)
        })
        .unwrap();
    assert_eq!(sum, 6 + 3 + 4);
    assert_eq!(detached_output_kept, [7u8; 300]);
    let me = Some(thread::current().id());
    assert_eq!(*dropped_on.lock().unwrap(), me);
    assert_eq!(*out_dropped_on.lock().unwrap(), me);
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn handles_dropped_and_detached_while_their_tasks_finish_on_another_thread() {
    // The handle's release (one compare-exchange that clears HANDLE and drops its
    // reference) races the loop finishing the task. Whatever the interleaving, every
    // output and every unfinished future is dropped exactly once, and (under miri)
    // every block is freed.
    const TASKS: usize = if cfg!(miri) { 12 } else { 300 };
    let ev = EventLoop::new().unwrap();
    let h = ev.handle();
    let runner = thread::spawn(move || {
        let mut ev = ev;
        ev.run().unwrap();
    });
    let outputs = Arc::new(AtomicUsize::new(0));
    let outputs_made = Arc::new(AtomicUsize::new(0));
    let futures_dropped = Arc::new(AtomicUsize::new(0));
    for i in 0..TASKS {
        let (made, out) = (outputs_made.clone(), outputs.clone());
        let guard = Counted(futures_dropped.clone());
        let task = h
            .spawn(async move {
                let _guard = guard;
                yields(i % 3).await;
                made.fetch_add(1, SeqCst);
                Counted(out)
            })
            .unwrap();
        match i % 3 {
            0 => task.detach(),
            1 => drop(task), // cancels, unless the task already finished
            _ => {
                // Let it run a little, then give the handle up while it may be
                // finishing.
                thread::yield_now();
                task.detach();
            }
        }
    }
    drop(
        h.shutdown_gracefully_with(Duration::ZERO, Duration::from_secs(5))
            .unwrap(),
    );
    h.await_termination(Duration::from_secs(10)).unwrap();
    runner.join().unwrap();
    assert_eq!(futures_dropped.load(SeqCst), TASKS, "every future dropped once");
    assert_eq!(
        outputs.load(SeqCst),
        outputs_made.load(SeqCst),
        "every output made was dropped once"
    );
}

/// A join handle's waker that, woken, says so and holds the waking thread until the
/// test lets it go. It waits on a relaxed flag, which orders nothing: whatever the test
/// thread did before letting it go is ordered before what the woken thread does next
/// only by the code under test.
struct HoldingWaker {
    woken: Mutex<mpsc::Sender<()>>,
    resume: Arc<std::sync::atomic::AtomicBool>,
}

impl Wake for HoldingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let _ = self.woken.lock().unwrap().send(());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !self.resume.load(std::sync::atomic::Ordering::Relaxed) && std::time::Instant::now() < deadline {
            thread::yield_now();
        }
    }
}

#[test]
fn the_loop_frees_a_task_whose_output_another_thread_took_while_it_woke_the_handle() {
    // Finishing, the loop publishes the outcome, wakes the handle's waker, and only then
    // releases its own reference. Here the handle takes the output and is dropped in
    // between (its waker holds the loop's thread until then), so the loop's release is
    // the last and frees the block: the handle's writes to the stage must happen before
    // that free (the acquire in `ref_dec`). Blocking-pool tasks awaited from a loop take
    // this path whenever the awaiting thread is quick. Under ThreadSanitizer (the CI
    // step) this checks the edge is one TSan sees.
    let ev = EventLoop::new().unwrap();
    let h = ev.handle();
    let runner = thread::spawn(move || {
        let mut ev = ev;
        ev.run().unwrap();
    });
    let go = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut task = h
        .spawn({
            let go = go.clone();
            poll_fn(move |cx| {
                if go.load(SeqCst) {
                    Poll::Ready(vec![7u8; 100])
                } else {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            })
        })
        .unwrap();
    let (woken_tx, woken_rx) = mpsc::channel();
    let resume = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waker = Waker::from(Arc::new(HoldingWaker {
        woken: Mutex::new(woken_tx),
        resume: resume.clone(),
    }));
    assert!(Pin::new(&mut task).poll(&mut Context::from_waker(&waker)).is_pending());
    go.store(true, SeqCst);
    woken_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the handle's waker is woken as the task completes");
    // The loop's thread is inside the wake: its reference is still held.
    assert_eq!(task.refs(), 2, "the loop's and the handle's");
    let out = Pin::new(&mut task).poll(&mut Context::from_waker(Waker::noop()));
    assert_eq!(out, Poll::Ready(vec![7u8; 100]));
    drop(task);
    resume.store(true, std::sync::atomic::Ordering::Relaxed);
    drop(
        h.shutdown_gracefully_with(Duration::ZERO, Duration::from_secs(5))
            .unwrap(),
    );
    h.await_termination(Duration::from_secs(10)).unwrap();
    runner.join().unwrap();
}

#[test]
fn a_remote_task_block_goes_back_to_its_loop_and_serves_the_next_remote_spawn() {
    // Spawned from outside the loop, a task's block comes from the loop's block cache
    // and returns there when the last reference goes, with every field dropped (miri
    // reports a leak of the join waker or the output otherwise). A task spawned on the
    // loop's own thread does not use the cache.
    let mut ev = EventLoop::new().unwrap();
    let h = ev.handle();
    let blocks = &h.shared.blocks;
    // Both remote spawns are of one future type, so of one size class.
    async fn job(spy: Option<DropSpy>) -> Option<DropSpy> {
        yields(2).await;
        spy
    }
    let (spy, dropped_on) = spy();
    let first = h.spawn(job(Some(spy))).unwrap();
    assert_eq!(blocks.cached(), 0);
    // Awaited from the loop, so the handle parks a waker in the task first.
    let spy = ev.block_on(first).unwrap();
    assert_eq!(blocks.cached(), 1, "the finished task's block is kept");
    drop(spy);
    assert!(dropped_on.lock().unwrap().is_some());

    let second = h.spawn(job(None)).unwrap();
    assert_eq!(blocks.cached(), 0, "the next remote spawn of that size takes it");
    assert!(ev.block_on(second).unwrap().is_none());
    assert_eq!(blocks.cached(), 1);

    let on_loop = ev
        .block_on(async {
            let here = crate::EventLoopHandle::current().unwrap();
            here.spawn(yields(1)).unwrap().await
        })
        .unwrap();
    assert_eq!(on_loop, 2);
    assert_eq!(blocks.cached(), 1, "local spawns neither take nor return blocks");
}

#[test]
fn termination_survives_a_live_task_that_frees_another_as_it_is_dropped() {
    // The live-task set borrows each task's waker. At termination, dropping the first
    // task's future drops the handle of the second, which cancels it: its future is
    // dropped and its block freed while termination is still walking the set. Its
    // entry must be gone by then (miri reports a use after free otherwise).
    let mut ev = EventLoop::new().unwrap();
    let h = ev.handle();
    let (spy, second_dropped_on) = spy();
    let (started_tx, started_rx) = mpsc::channel();
    h.spawn(async move {
        // Pend once, so this task enters the set before the second one.
        yields(1).await;
        let here = crate::EventLoopHandle::current().unwrap();
        let _second = here
            .spawn(async move {
                let _spy = spy;
                std::future::pending::<()>().await;
            })
            .unwrap();
        started_tx.send(()).unwrap();
        std::future::pending::<()>().await;
    })
    .unwrap()
    .detach();
    ev.block_on(yields(3)).unwrap();
    started_rx.try_recv().expect("both tasks started");
    assert_eq!(h.metrics().live_tasks, 2);
    drop(ev);
    assert_eq!(*second_dropped_on.lock().unwrap(), Some(thread::current().id()));
}

/// Blocks on this thread's loop's own free lists (the caller must be on a loop).
fn local_blocks() -> usize {
    crate::context::with_core(|core| core.expect("on a loop").local.blocks.cached())
}

#[test]
fn a_local_task_block_goes_back_to_its_loop_thread_and_serves_the_next_local_spawn() {
    // Spawned on the loop's own thread, a task's block comes from that thread's free
    // list and returns there when the last reference goes on that thread, with every
    // field dropped (miri reports a leak otherwise). The shared cache is not used.
    let mut ev = EventLoop::new().unwrap();
    let h = ev.handle();
    let (spy, dropped_on) = spy();
    // Both spawns are of one future type, so of one size class.
    async fn job(spy: Option<DropSpy>) -> Option<DropSpy> {
        yields(2).await;
        spy
    }
    ev.block_on(async move {
        let here = crate::EventLoopHandle::current().unwrap();
        let before = local_blocks();
        let first = here.spawn(job(Some(spy))).unwrap();
        assert_eq!(local_blocks(), before);
        let spy = first.await;
        assert_eq!(local_blocks(), before + 1, "the finished task's block is kept");
        drop(spy);

        let second = here.spawn(job(None)).unwrap();
        assert_eq!(local_blocks(), before, "the next local spawn of that size takes it");
        assert!(second.await.is_none());
        assert_eq!(local_blocks(), before + 1);
    })
    .unwrap();
    assert!(dropped_on.lock().unwrap().is_some());
    assert_eq!(h.shared.blocks.cached(), 0, "local spawns leave the shared cache alone");
}

#[test]
fn a_local_task_freed_on_another_thread_goes_back_to_the_allocator() {
    // The last reference to a locally spawned task can be dropped on another thread
    // (here its handle). That thread cannot touch the loop's free list: the block goes
    // to the allocator (miri checks the layout it is freed with, and reports a leak
    // if it is kept nowhere).
    let mut ev = EventLoop::new().unwrap();
    let (task, before) = ev
        .block_on(async {
            let here = crate::EventLoopHandle::current().unwrap();
            let before = local_blocks();
            let task = here.spawn(yields(1)).unwrap();
            yields(4).await;
            assert!(task.is_finished());
            (task, before)
        })
        .unwrap();
    assert_eq!(task.refs(), 1, "only the handle is left");
    thread::spawn(move || drop(task)).join().unwrap();
    let after = ev.block_on(async { local_blocks() }).unwrap();
    assert_eq!(after, before, "the block did not come back to the loop's list");
    assert_eq!(ev.handle().shared.blocks.cached(), 0, "nor to the shared cache");
}
