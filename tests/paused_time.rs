//! tokio's `test-util` paused clock: `start_paused`, `pause`, `advance`, `resume`.

use std::time::Duration;

use netloop::runtime::Builder;
use netloop::time::{self, Instant};

fn paused_runtime() -> netloop::runtime::Runtime {
    let mut b = Builder::new_current_thread();
    b.enable_all().start_paused(true);
    b.build().unwrap()
}

#[test]
fn an_hour_long_sleep_completes_at_once_when_paused() {
    let rt = paused_runtime();
    let real = std::time::Instant::now();
    rt.block_on(async {
        let start = Instant::now();
        time::sleep(Duration::from_secs(3600)).await;
        assert!(
            start.elapsed() >= Duration::from_secs(3600),
            "virtual time moved by the full hour"
        );
    });
    assert!(real.elapsed() < Duration::from_secs(5), "but real time did not");
}

#[test]
fn timeout_fires_in_virtual_time_and_order_is_kept() {
    let rt = paused_runtime();
    rt.block_on(async {
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        for ms in [300u64, 100, 200] {
            let tx = tx.clone();
            netloop::spawn(async move {
                time::sleep(Duration::from_millis(ms)).await;
                tx.unbounded_send(ms).unwrap();
            });
        }
        drop(tx);
        let mut order = vec![];
        while let Some(v) = futures::StreamExt::next(&mut rx).await {
            order.push(v);
        }
        assert_eq!(order, vec![100, 200, 300]);
        let never = std::future::pending::<()>();
        assert!(time::timeout(Duration::from_secs(30), never).await.is_err());
    });
}

#[test]
fn advance_fires_due_timers_before_returning() {
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        time::pause();
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let f = fired.clone();
        netloop::spawn(async move {
            time::sleep(Duration::from_secs(10)).await;
            f.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        netloop::task::yield_now().await; // let it register its timer
        time::advance(Duration::from_secs(9)).await;
        assert!(!fired.load(std::sync::atomic::Ordering::SeqCst));
        time::advance(Duration::from_secs(1)).await;
        netloop::task::yield_now().await;
        assert!(fired.load(std::sync::atomic::Ordering::SeqCst));
        let before = Instant::now();
        time::resume();
        assert!(Instant::now() >= before, "time continues from where it stood");
    });
}

#[test]
#[should_panic(expected = "current_thread")]
fn pause_outside_a_current_thread_runtime_panics() {
    let rt = Builder::new_multi_thread().worker_threads(1).build().unwrap();
    rt.block_on(async { time::pause() });
}

#[test]
fn start_paused_on_multi_thread_is_an_error() {
    let err = Builder::new_multi_thread().start_paused(true).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn paused_time_does_not_jump_while_a_blocking_task_runs() {
    netloop_tests::test_body(|| {
        let rt = paused_runtime();
        rt.block_on(async {
            // The blocking task takes 50 ms of real time, far beyond the 1 ms timeout,
            // but paused time must not jump to the timeout while it runs.
            let out = time::timeout(
                Duration::from_millis(1),
                netloop::task::spawn_blocking(|| {
                    std::thread::sleep(Duration::from_millis(50));
                    7
                }),
            )
            .await
            .expect("time jumped past the timeout while the blocking task ran");
            assert_eq!(out.unwrap(), 7);
        });
    });
}

#[test]
fn paused_time_jumps_again_once_an_unawaited_blocking_task_ends() {
    netloop_tests::test_body(|| {
        let rt = paused_runtime();
        let real = std::time::Instant::now();
        rt.block_on(async {
            let blocking = netloop::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(1)));
            // Nobody awaits the handle yet: when the task ends, the loop may jump.
            time::sleep(Duration::from_secs(3600)).await;
            blocking.await.unwrap();
        });
        assert!(real.elapsed() < Duration::from_secs(10), "{:?}", real.elapsed());
    });
}

#[test]
fn many_short_sleeps_each_complete_at_their_deadline_in_virtual_time() {
    // Tasks sleeping random short spans keep filing timers around the timing wheel's
    // block boundaries; with the clock paused, each sleep must end at its deadline (the
    // clock jumps there), never a wheel turn later.
    let rt = paused_runtime();
    let real = std::time::Instant::now();
    let worst = rt.block_on(async {
        let tasks: Vec<_> = (0..4u64)
            .map(|t| {
                netloop::spawn(async move {
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (t + 1);
                    let mut worst = Duration::ZERO;
                    for _ in 0..1000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let deadline = Instant::now() + Duration::from_micros(500 + x % 90_000);
                        time::sleep_until(deadline).await;
                        worst = worst.max(Instant::now() - deadline);
                    }
                    worst
                })
            })
            .collect();
        let mut worst = Duration::ZERO;
        for task in tasks {
            worst = worst.max(task.await.unwrap());
        }
        worst
    });
    assert!(
        worst < Duration::from_millis(2),
        "a sleep ended {worst:?} after its deadline"
    );
    assert!(real.elapsed() < Duration::from_secs(20), "virtual time, not real time");
}

/// In a paused runtime's context (`enter`) but outside its `block_on`, `Instant::now`
/// reads the paused clock, as tokio's does: a sleep made there ends at its paused
/// deadline, and the time it took is measured on the same clock.
#[test]
fn now_in_an_entered_paused_runtime_is_the_paused_time() {
    let rt = paused_runtime();
    let _guard = rt.enter();
    let before = Instant::now();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(Instant::now(), before, "the clock is paused outside block_on too");
    let sleep = time::sleep(Duration::from_millis(3));
    assert_eq!(sleep.deadline(), before + Duration::from_millis(3));
    rt.block_on(sleep);
    assert_eq!(
        before.elapsed(),
        Duration::from_millis(3),
        "auto-advanced to the deadline"
    );
    // A runtime whose clock runs is read as real time.
    let running = Builder::new_current_thread().enable_all().build().unwrap();
    let _inner = running.enter();
    let real = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    assert!(real.elapsed() >= Duration::from_millis(2));
}

/// Counts the wakes of the waker made from it.
struct WakeCount(std::sync::atomic::AtomicUsize);

impl std::task::Wake for WakeCount {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `Sleep::reset` keeps the waker of the last poll, as tokio's does (tokio-util's
/// `DelayQueue` counts on it): the task is woken at the new deadline, earlier or later,
/// never at the old one, and at once for a deadline that has passed.
#[test]
fn reset_wakes_the_last_poller_at_the_new_deadline_only() {
    use std::future::Future;
    use std::sync::Arc;
    use std::sync::atomic::Ordering::SeqCst;
    use std::task::{Context, Waker};

    let rt = paused_runtime();
    rt.block_on(async {
        // In a task: the sleeps are the loop's own timers.
        netloop::spawn(async {
            let count = Arc::new(WakeCount(std::sync::atomic::AtomicUsize::new(0)));
            let waker = Waker::from(count.clone());
            // A `Context` is not `Send`: one per poll.
            let poll = |s: std::pin::Pin<&mut time::Sleep>| s.poll(&mut Context::from_waker(&waker));
            let start = Instant::now();
            let ms = Duration::from_millis;

            let mut later = Box::pin(time::sleep_until(start + ms(100)));
            assert!(poll(later.as_mut()).is_pending());
            later.as_mut().reset(start + ms(300));
            time::sleep_until(start + ms(200)).await;
            assert_eq!(count.0.load(SeqCst), 0, "woken at the deadline it was moved from");
            time::sleep_until(start + ms(301)).await;
            assert_eq!(count.0.load(SeqCst), 1, "not woken at the new deadline");
            assert!(poll(later.as_mut()).is_ready());

            let mut earlier = Box::pin(time::sleep_until(start + ms(1_000)));
            assert!(poll(earlier.as_mut()).is_pending());
            earlier.as_mut().reset(start + ms(500));
            time::sleep_until(start + ms(501)).await;
            assert_eq!(count.0.load(SeqCst), 2, "not woken at the earlier deadline");
            assert!(poll(earlier.as_mut()).is_ready());

            let mut past = Box::pin(time::sleep_until(start + ms(2_000)));
            assert!(poll(past.as_mut()).is_pending());
            past.as_mut().reset(start + ms(400));
            assert_eq!(count.0.load(SeqCst), 3, "not woken by a reset into the past");
            assert!(poll(past.as_mut()).is_ready());
        })
        .await
        .unwrap();
    });
}
