//! The loop's timing wheel seen from `sleep`: timers registered on their own loop,
//! pushed back, moved to another thread, dropped elsewhere, and fired in deadline
//! order. Lower bounds are exact; upper bounds are generous.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use netloop::event_loop::EventLoopHandle;
use netloop::runtime::Runtime;
use netloop::time::{self, Instant, Sleep};
use netloop_tests::{WAIT, current, single_loop, test_body};

const MS: Duration = Duration::from_millis(1);
const LATE: Duration = Duration::from_secs(2);

/// Polls `sleep` once with a waker that does nothing.
fn poll_once(sleep: &mut Pin<Box<Sleep>>) -> Poll<()> {
    sleep.as_mut().poll(&mut Context::from_waker(Waker::noop()))
}

/// Timers waiting in the runtime's loops, once each loop has finished an iteration
/// (a task run on every loop, awaited, makes each publish its counters), waiting up to
/// [`WAIT`] for the count to become `expected`.
fn timers_waiting(rt: &Runtime, expected: usize) -> usize {
    let loops = rt.handle().event_loops();
    for l in loops.iter() {
        let (tx, rx) = mpsc::channel();
        l.execute(move || tx.send(()).expect("the test waits"))
            .expect("the loop is running");
        rx.recv_timeout(WAIT).expect("the loop ran the task");
    }
    // The counters are published at the end of the iteration that ran the task.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let n: usize = loops.iter().map(|l| l.metrics().scheduled_tasks).sum();
        if n == expected || std::time::Instant::now() > deadline {
            return n;
        }
        std::thread::yield_now();
    }
}

#[test]
fn a_sleep_pushed_back_many_times_fires_once_after_its_last_deadline() {
    test_body(|| {
        let rt = single_loop();
        let (start, last, woke) = rt.block_on(async {
            netloop::spawn(async {
                let start = Instant::now();
                let mut idle = Box::pin(time::sleep(20 * MS));
                assert!(poll_once(&mut idle).is_pending(), "registered on its loop");
                let mut last = idle.deadline();
                // An idle timeout pushed back by twenty requests.
                for _ in 0..20 {
                    time::sleep(2 * MS).await;
                    last = Instant::now() + 20 * MS;
                    idle.as_mut().reset(last);
                    assert!(!idle.is_elapsed());
                }
                idle.as_mut().await;
                (start, last, Instant::now())
            })
            .await
            .expect("the task ran")
        });
        assert!(woke >= last, "fired {:?} before its last deadline", last - woke);
        assert!(woke - start < 40 * MS + LATE);
        assert_eq!(timers_waiting(&rt, 0), 0, "nothing left in the wheel");
    });
}

#[test]
fn moving_a_sleep_earlier_fires_at_the_earlier_deadline() {
    test_body(|| {
        let rt = current();
        rt.block_on(async {
            let start = Instant::now();
            let mut sleep = Box::pin(time::sleep(Duration::from_secs(3600)));
            assert!(poll_once(&mut sleep).is_pending());
            sleep.as_mut().reset(start + 10 * MS);
            sleep.as_mut().await;
            assert!(start.elapsed() >= 10 * MS);
            assert!(start.elapsed() < LATE);
        });
    });
}

#[test]
fn a_sleep_registered_on_its_loop_completes_when_awaited_on_another_thread() {
    test_body(|| {
        let rt = single_loop();
        let (tx, rx) = mpsc::channel();
        rt.spawn(async move {
            let mut sleep = Box::pin(time::sleep(30 * MS));
            assert!(poll_once(&mut sleep).is_pending(), "registered on its loop");
            tx.send(sleep).expect("the test waits");
        });
        let sleep = rx.recv_timeout(WAIT).expect("the task sent its sleep");
        let deadline = sleep.deadline();
        // Awaited off the loops, in block_on: the timer moves to the shared path.
        rt.block_on(sleep);
        assert!(Instant::now() >= deadline);
        assert_eq!(timers_waiting(&rt, 0), 0);
    });
}

#[test]
fn a_local_timer_dropped_on_another_thread_leaves_the_wheel() {
    test_body(|| {
        let rt = single_loop();
        let (tx, rx) = mpsc::channel();
        rt.spawn(async move {
            let mut sleeps: Vec<_> = (0..100)
                .map(|_| Box::pin(time::sleep(Duration::from_secs(3600))))
                .collect();
            for s in &mut sleeps {
                assert!(poll_once(s).is_pending());
            }
            tx.send(sleeps).expect("the test waits");
        });
        let sleeps = rx.recv_timeout(WAIT).expect("the task sent its sleeps");
        assert_eq!(timers_waiting(&rt, 100), 100);
        drop(sleeps);
        assert_eq!(timers_waiting(&rt, 0), 0, "each drop sent its loop a cancel");
    });
}

#[test]
fn timers_on_one_loop_fire_in_deadline_order_and_never_early() {
    test_body(|| {
        let rt = single_loop();
        let fired = Arc::new(Mutex::new(Vec::new()));
        rt.block_on(async {
            let start = Instant::now() + 20 * MS;
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            let mut tasks = Vec::new();
            for i in 0..2_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // 0 to 300 ms, many sharing a millisecond and some an exact deadline.
                let deadline = start + Duration::from_micros(if i % 10 == 0 { 5_000 } else { x % 300_000 });
                let fired = fired.clone();
                tasks.push(netloop::spawn(async move {
                    // A sleep is filed in the wheel only if its first poll finds its
                    // deadline ahead. One whose deadline passed before its task first
                    // ran completes in that poll (tokio's does too), possibly before
                    // earlier timers already due: the order is a property of filed ones.
                    let mut sleep = Box::pin(time::sleep_until(deadline));
                    let mut filed = None;
                    std::future::poll_fn(|cx| {
                        let polled = sleep.as_mut().poll(cx);
                        filed.get_or_insert(polled.is_pending());
                        polled
                    })
                    .await;
                    let now = Instant::now();
                    assert!(now >= deadline, "fired {:?} early", deadline - now);
                    fired.lock().unwrap().push((deadline, filed == Some(true)));
                }));
            }
            for t in tasks {
                t.await.expect("a timer task panicked");
            }
        });
        let fired = fired.lock().unwrap();
        assert_eq!(fired.len(), 2_000);
        let filed: Vec<Instant> = fired.iter().filter(|(_, filed)| *filed).map(|(d, _)| *d).collect();
        assert!(filed.windows(2).all(|w| w[0] <= w[1]), "woken out of deadline order");
    });
}

#[test]
fn paused_time_takes_a_postponed_deadline_up() {
    test_body(|| {
        let rt = current();
        rt.block_on(async {
            time::pause();
            let start = Instant::now();
            let mut sleep = Box::pin(time::sleep(Duration::from_secs(10)));
            assert!(poll_once(&mut sleep).is_pending());
            sleep.as_mut().reset(start + Duration::from_secs(20));
            time::advance(Duration::from_secs(15)).await;
            assert!(
                poll_once(&mut sleep).is_pending(),
                "the old deadline passed: nothing fires"
            );
            assert!(!sleep.is_elapsed());
            time::advance(Duration::from_secs(5)).await;
            assert!(sleep.is_elapsed() || poll_once(&mut sleep).is_ready());
            assert_eq!(Instant::now() - start, Duration::from_secs(20));
        });
    });
}

#[test]
fn a_scheduled_closure_can_be_postponed_until_it_runs() {
    test_body(|| {
        let rt = single_loop();
        let l: EventLoopHandle = rt.handle().event_loops().get(0).expect("one loop").clone();
        let (tx, rx) = mpsc::channel();
        let start = std::time::Instant::now();
        let handle = l
            .schedule(20 * MS, move || {
                tx.send(std::time::Instant::now()).expect("the test waits")
            })
            .expect("the loop is running");
        assert!(handle.postpone(start + 60 * MS), "pending: postponed");
        let ran = rx.recv_timeout(WAIT).expect("the closure ran");
        assert!(ran - start >= 60 * MS, "ran {:?} after scheduling", ran - start);
        assert!(!handle.postpone(start + Duration::from_secs(1)), "too late once it ran");
        // Marked done once the closure has returned, just after it sent.
        let deadline = std::time::Instant::now() + WAIT;
        while !handle.is_done() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(handle.is_done());
    });
}

#[test]
fn a_sleep_never_completes_early_while_its_loop_shuts_down() {
    test_body(|| {
        let rt = single_loop();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let (tx, rx) = mpsc::channel();
        rt.spawn(async move {
            let mut sleep = Box::pin(time::sleep(Duration::from_secs(3600)));
            assert!(poll_once(&mut sleep).is_pending(), "registered on its loop");
            go_rx.await.expect("the test sends");
            // The loop is shutting down gracefully and has dropped its timers unfired.
            let polled = poll_once(&mut sleep);
            tx.send((polled.is_ready(), sleep.is_elapsed()))
                .expect("the test waits");
        });
        assert_eq!(timers_waiting(&rt, 1), 1);
        let group = rt.handle().event_loops();
        group
            .shutdown_gracefully(Duration::from_secs(2), Duration::from_secs(5))
            .expect("valid shutdown periods");
        // A task run after the request: its iteration ends by dropping the loop's timers
        // (Netty's confirmShutdown), so the sleep's task, woken after, finds it gone.
        let (ran_tx, ran_rx) = mpsc::channel();
        let l = group.get(0).expect("one loop");
        l.execute(move || ran_tx.send(()).expect("the test waits"))
            .expect("a shutting-down loop still runs tasks");
        ran_rx.recv_timeout(WAIT).expect("the loop ran the task");
        assert!(l.is_shutting_down() && !l.is_shutdown(), "within the quiet period");
        go_tx.send(()).expect("the task waits");
        let (ready, elapsed) = rx.recv_timeout(WAIT).expect("the task polled its sleep");
        assert!(
            !ready && !elapsed,
            "a sleep an hour away completed during the quiet period"
        );
    });
}

#[test]
fn is_elapsed_after_a_reset_sees_the_moved_deadline_pass_without_a_poll() {
    test_body(|| {
        let rt = current();
        rt.block_on(async {
            time::pause();
            let start = Instant::now();
            let mut sleep = Box::pin(time::sleep(10 * MS));
            assert!(poll_once(&mut sleep).is_pending());
            sleep.as_mut().reset(start + 20 * MS);
            time::advance(15 * MS).await;
            assert!(!sleep.is_elapsed(), "only the old deadline passed");
            time::advance(35 * MS).await;
            assert!(sleep.is_elapsed(), "the moved deadline passed too");
            assert!(poll_once(&mut sleep).is_ready());
        });
    });
}

#[test]
fn a_sleep_handed_to_another_task_on_its_loop_wakes_that_task() {
    // The first task's poll files the timer with its waker; the second task's polls must
    // put its own waker in the entry (a poll that skips the entry may only do so for the
    // task whose waker it holds), or the firing would wake the finished first task.
    test_body(|| {
        let rt = single_loop();
        rt.block_on(async {
            let (tx, rx) = futures::channel::oneshot::channel::<Pin<Box<Sleep>>>();
            let first = netloop::spawn(async move {
                let mut sleep = Box::pin(time::sleep(30 * MS));
                assert!(futures::poll!(sleep.as_mut()).is_pending());
                assert!(
                    futures::poll!(sleep.as_mut()).is_pending(),
                    "polled twice by its first task"
                );
                assert!(tx.send(sleep).is_ok(), "the receiver waits");
            });
            first.await.unwrap();
            let second = netloop::spawn(async move {
                let mut sleep = rx.await.unwrap();
                // Polled twice by the second task before it fires, then awaited.
                assert!(futures::poll!(sleep.as_mut()).is_pending());
                assert!(futures::poll!(sleep.as_mut()).is_pending());
                let start = Instant::now();
                time::timeout(WAIT, sleep).await.unwrap();
                start.elapsed()
            });
            // Woken by its own firing, not by something later (the timeout's timer).
            assert!(
                second.await.unwrap() < LATE,
                "the sleep did not wake the task that awaited it"
            );
        });
    });
}

// Sleeps polled in the body of a multi-thread runtime's `block_on` (where `#[main]`'s
// own code runs) live in the parked thread's own timer store (time/parked.rs).

#[test]
fn sleeps_in_block_on_fire_in_deadline_order_and_never_early() {
    test_body(|| {
        let rt = netloop_tests::multi();
        rt.block_on(async {
            let start = Instant::now();
            let order = Arc::new(Mutex::new(Vec::new()));
            let sleeps = [30u32, 10, 20].map(|ms| {
                let order = order.clone();
                async move {
                    let deadline = start + MS * ms;
                    time::sleep_until(deadline).await;
                    assert!(Instant::now() >= deadline, "a sleep of {ms} ms completed early");
                    order.lock().unwrap().push(ms);
                }
            });
            let [a, b, c] = sleeps;
            futures::join!(a, b, c);
            assert_eq!(*order.lock().unwrap(), [10, 20, 30]);
            assert!(start.elapsed() < LATE);

            // A pending sleep of the body is the parked thread's, not a loop's.
            let mut sleep = Box::pin(time::sleep(Duration::from_secs(3600)));
            assert!(poll_once(&mut sleep).is_pending());
            assert_eq!(timers_waiting(&rt, 0), 0, "the sleep went to a loop");
        });
    });
}

#[test]
fn a_timeout_and_a_reset_in_block_on_take_their_new_deadlines() {
    test_body(|| {
        let rt = netloop_tests::multi();
        rt.block_on(async {
            let err = time::timeout(5 * MS, std::future::pending::<()>()).await;
            assert!(err.is_err(), "the timeout elapsed");

            let start = Instant::now();
            let mut sleep = Box::pin(time::sleep(Duration::from_secs(3600)));
            assert!(poll_once(&mut sleep).is_pending());
            // Earlier: filed anew; later: the entry is postponed in place.
            sleep.as_mut().reset(start + 5 * MS);
            sleep.as_mut().reset(start + 20 * MS);
            (&mut sleep).await;
            assert!(
                Instant::now() >= start + 20 * MS,
                "the sleep ignored its later deadline"
            );
            assert!(sleep.is_elapsed());
        });
    });
}

#[test]
fn a_sleep_polled_in_block_on_and_moved_to_a_task_still_fires() {
    test_body(|| {
        let rt = netloop_tests::multi();
        // Moved while block_on goes on: the parked thread fires it for the task.
        let task = rt.block_on(async {
            let mut sleep = Box::pin(time::sleep(20 * MS));
            assert!(poll_once(&mut sleep).is_pending());
            let deadline = sleep.deadline();
            let task = netloop::spawn(async move {
                (&mut sleep).await;
                Instant::now() >= deadline
            });
            time::sleep(40 * MS).await;
            task.await.expect("the task ran")
        });
        assert!(task, "it fired early");

        // Moved and block_on returns at once: a loop takes the store over.
        let (tx, rx) = mpsc::channel();
        rt.block_on(async {
            let mut sleep = Box::pin(time::sleep(20 * MS));
            assert!(poll_once(&mut sleep).is_pending());
            let deadline = sleep.deadline();
            // A future that polls the sleep only when it is woken: the wake must come
            // from the store's new owner.
            let mut parked = futures::future::FutureExt::shared(async move {
                (&mut sleep).await;
                Instant::now() >= deadline
            });
            assert!(poll_once_any(&mut parked).is_pending());
            netloop::spawn(async move { tx.send(parked.await).unwrap() });
        });
        assert_eq!(
            rx.recv_timeout(LATE),
            Ok(true),
            "the sleep fired after block_on returned, not early"
        );
    });
}

fn poll_once_any<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
#[should_panic(expected = "A Tokio 1.x context was found, but it is being shutdown.")]
fn a_sleep_in_block_on_after_its_runtime_shut_down_panics() {
    let rt = netloop_tests::multi();
    let _enter = rt.enter();
    let sleep = time::sleep(10 * MS);
    rt.shutdown_timeout(Duration::from_secs(5));
    netloop::runtime::Handle::current().block_on(sleep);
}

/// A sleep of `block_on`'s body handed over to a loop, polled after its runtime
/// shut down, panics with tokio's words (tokio's `poll_elapsed` asserts it) rather
/// than waiting forever.
#[test]
fn a_handed_over_sleep_polled_after_shutdown_panics() {
    test_body(|| {
        let rt = netloop_tests::multi();
        // Out of `block_on` in an `Option`: the sleep is handed on, not awaited.
        let mut sleep = rt
            .block_on(async {
                let mut sleep = Box::pin(time::sleep(Duration::from_secs(3600)));
                assert!(poll_once(&mut sleep).is_pending());
                Some(sleep)
            })
            .expect("the sleep");
        drop(rt);
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll_once(&mut sleep)));
        assert!(polled.is_err(), "pending forever: {polled:?}");
    });
}

/// Timers made and polled on a thread that drives no loop (one that entered the
/// runtime) spread over the runtime's loops, in this thread's own round-robin.
#[test]
fn timers_made_off_the_loops_spread_over_them() {
    test_body(|| {
        let rt = netloop_tests::multi();
        let _entered = rt.enter();
        let mut sleeps: Vec<_> = (0..8)
            .map(|_| Box::pin(time::sleep(Duration::from_secs(3600))))
            .collect();
        for sleep in &mut sleeps {
            assert!(poll_once(sleep).is_pending());
        }
        assert_eq!(timers_waiting(&rt, 8), 8);
        let per_loop: Vec<usize> = rt
            .handle()
            .event_loops()
            .iter()
            .map(|l| l.metrics().scheduled_tasks)
            .collect();
        assert_eq!(per_loop, [4, 4], "spread evenly over both loops");
        drop(sleeps);
    });
}
