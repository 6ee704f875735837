//! `time`: sleep, timeout, interval, Instant. Lower bounds are exact; upper bounds are
//! generous, because a loaded two-core machine may run a timer late but never early.

use std::pin::Pin;
use std::time::Duration;

use netloop::time::error::Elapsed;
use netloop::time::{self, Instant, MissedTickBehavior, Sleep};
use netloop_tests::{current, multi, test_body};

const MS: Duration = Duration::from_millis(1);
/// A bound no timer should miss by, even on a loaded machine.
const LATE: Duration = Duration::from_secs(2);

#[test]
fn sleep_waits_at_least_the_duration() {
    test_body(|| {
        for rt in [multi(), current()] {
            rt.block_on(async {
                for ms in [0u64, 1, 5, 20] {
                    let d = Duration::from_millis(ms);
                    let start = Instant::now();
                    time::sleep(d).await;
                    let took = start.elapsed();
                    assert!(took >= d, "sleep({d:?}) took {took:?}");
                    assert!(took < d + LATE);
                }
            });
        }
    });
}

#[test]
fn sleep_until_and_a_deadline_in_the_past() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let deadline = Instant::now() + 15 * MS;
            let sleep = time::sleep_until(deadline);
            assert_eq!(sleep.deadline(), deadline);
            sleep.await;
            assert!(Instant::now() >= deadline);
            // Deadlines already passed complete at once.
            let start = Instant::now();
            time::sleep_until(Instant::now() - 50 * MS).await;
            time::sleep(Duration::ZERO).await;
            assert!(start.elapsed() < LATE);
        });
    });
}

#[test]
fn sleep_reset_deadline_and_is_elapsed() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            // A long sleep shortened by reset.
            let start = Instant::now();
            let mut sleep = Box::pin(time::sleep(Duration::from_secs(60)));
            assert!(!sleep.is_elapsed());
            assert!(futures::poll!(sleep.as_mut()).is_pending());
            let new_deadline = Instant::now() + 20 * MS;
            sleep.as_mut().reset(new_deadline);
            assert_eq!(sleep.deadline(), new_deadline);
            sleep.as_mut().await;
            assert!(Instant::now() >= new_deadline);
            assert!(start.elapsed() < LATE);
            assert!(sleep.is_elapsed());

            // A completed sleep reset into the future waits again.
            let again = Instant::now() + 10 * MS;
            sleep.as_mut().reset(again);
            assert!(!sleep.is_elapsed());
            sleep.as_mut().await;
            assert!(Instant::now() >= again);

            // A short sleep pushed later by reset does not fire at its first deadline.
            let mut sleep: Pin<Box<Sleep>> = Box::pin(time::sleep(5 * MS));
            assert!(futures::poll!(sleep.as_mut()).is_pending());
            let later = Instant::now() + 40 * MS;
            sleep.as_mut().reset(later);
            sleep.as_mut().await;
            assert!(Instant::now() >= later, "the sleep fired at its old deadline");

            // Duration::MAX does not overflow.
            let mut forever = Box::pin(time::sleep(Duration::MAX));
            assert!(futures::poll!(forever.as_mut()).is_pending());
            assert!(!forever.is_elapsed());
            forever.as_mut().reset(Instant::now() + MS);
            forever.await;
        });
    });
}

#[test]
fn timeout_and_timeout_at() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            // The future wins.
            assert_eq!(time::timeout(Duration::from_secs(5), async { 1 }).await, Ok(1));
            let quick = time::timeout(Duration::from_secs(5), time::sleep(5 * MS)).await;
            assert!(quick.is_ok());
            // The deadline wins, never before it.
            let start = Instant::now();
            let err: Elapsed = time::timeout(30 * MS, std::future::pending::<()>()).await.unwrap_err();
            assert!(start.elapsed() >= 30 * MS);
            assert!(start.elapsed() < 30 * MS + LATE);
            assert_eq!(err.to_string(), "deadline has elapsed");
            let io: std::io::Error = err.into();
            assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
            // timeout_at.
            let deadline = Instant::now() + 20 * MS;
            assert!(time::timeout_at(deadline, std::future::pending::<()>()).await.is_err());
            assert!(Instant::now() >= deadline);
            // A future ready at once wins even with a zero timeout, as in tokio.
            assert_eq!(time::timeout(Duration::ZERO, async { 2 }).await, Ok(2));
            // A huge timeout does not overflow.
            assert_eq!(time::timeout(Duration::MAX, async { 3 }).await, Ok(3));
            // Accessors.
            let mut t = time::timeout(Duration::from_secs(1), async { 4 });
            let _ = t.get_ref();
            let _ = t.get_mut();
            assert_eq!(t.into_inner().await, 4);
        });
    });
}

#[test]
fn timeout_on_a_spawned_task() {
    test_body(|| {
        let rt = multi();
        let (slow, fast) = rt.block_on(async {
            let slow = time::timeout(10 * MS, netloop::spawn(time::sleep(Duration::from_secs(60)))).await;
            let fast = time::timeout(Duration::from_secs(5), netloop::spawn(async { 5 })).await;
            (slow.is_err(), fast.unwrap().unwrap())
        });
        assert!(slow);
        assert_eq!(fast, 5);
    });
}

#[test]
fn interval_ticks_at_the_period() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let period = 10 * MS;
            let start = Instant::now();
            let mut every = time::interval(period);
            assert_eq!(every.period(), period);
            assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Burst);
            let first = every.tick().await;
            assert!(first >= start, "the first tick is immediate");
            let mut prev = first;
            for _ in 0..4 {
                let t = every.tick().await;
                assert_eq!(t - prev, period, "ticks are scheduled a period apart");
                assert!(Instant::now() >= t, "a tick completed before its instant");
                prev = t;
            }
            assert!(start.elapsed() >= 4 * period);
        });
    });
}

#[test]
fn interval_at_starts_at_the_given_instant() {
    test_body(|| {
        let rt = current();
        rt.block_on(async {
            let start = Instant::now() + 20 * MS;
            let mut every = time::interval_at(start, 5 * MS);
            assert_eq!(every.tick().await, start);
            assert!(Instant::now() >= start);
            assert_eq!(every.tick().await, start + 5 * MS);
        });
    });
}

#[test]
fn interval_reset_restarts_the_schedule() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let period = 20 * MS;
            let mut every = time::interval(period);
            every.tick().await;
            let reset_at = Instant::now();
            every.reset();
            let t = every.tick().await;
            assert!(t >= reset_at + period, "the next tick is a period after the reset");
            assert!(Instant::now() >= t);

            every.reset_immediately();
            let start = Instant::now();
            every.tick().await;
            assert!(start.elapsed() < LATE);

            let after = Instant::now();
            every.reset_after(15 * MS);
            assert!(every.tick().await >= after + 15 * MS);

            let at = Instant::now() + 10 * MS;
            every.reset_at(at);
            assert_eq!(every.tick().await, at);
        });
    });
}

/// Ticks an interval once, falls 75 ms behind a 20 ms period, then ticks again.
/// Returns the start, the instants of the following ticks and when the late tick was
/// taken.
async fn fall_behind(behavior: MissedTickBehavior, ticks: usize) -> (Instant, Vec<Instant>, Instant) {
    let period = 20 * MS;
    let start = Instant::now();
    let mut every = time::interval_at(start, period);
    every.set_missed_tick_behavior(behavior);
    assert_eq!(every.missed_tick_behavior(), behavior);
    assert_eq!(every.tick().await, start);
    time::sleep(75 * MS).await;
    let late = Instant::now();
    let mut out = Vec::new();
    for _ in 0..ticks {
        out.push(every.tick().await);
        assert!(
            Instant::now() >= *out.last().unwrap(),
            "a tick completed before its instant"
        );
    }
    (start, out, late)
}

#[test]
fn missed_tick_behavior_burst() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let (start, ticks, _) = fall_behind(MissedTickBehavior::Burst, 5).await;
            // The missed ticks come at once, on the original schedule, then it goes on.
            for (k, t) in ticks.iter().enumerate() {
                assert_eq!(*t, start + 20 * MS * (k as u32 + 1), "burst tick {k}");
            }
        });
    });
}

#[test]
fn missed_tick_behavior_delay() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let period = 20 * MS;
            let (_, ticks, late) = fall_behind(MissedTickBehavior::Delay, 3).await;
            // The first late tick is the missed one; then a new schedule starting a
            // period after it (Burst would put the next tick before `late`).
            assert!(ticks[0] < late);
            assert!(
                ticks[1] >= late + period,
                "delay: {:?} after the late tick",
                ticks[1] - late
            );
            assert!(ticks[2] >= ticks[1] + period);
        });
    });
}

#[test]
fn missed_tick_behavior_skip() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            let period = 20 * MS;
            let (_, ticks, late) = fall_behind(MissedTickBehavior::Skip, 3).await;
            assert!(ticks[0] < late);
            // Then back on the original grid, skipping what was missed.
            assert!(ticks[1] > late, "skip: a missed tick was not skipped");
            for pair in ticks.windows(2) {
                let gap = (pair[1] - pair[0]).as_nanos();
                assert!(
                    gap > 0 && gap % period.as_nanos() == 0,
                    "skip: a {gap} ns step is off the grid"
                );
            }
        });
    });
}

#[test]
#[should_panic(expected = "`period` must be non-zero.")]
fn interval_with_a_zero_period_panics() {
    let _ = time::interval(Duration::ZERO);
}

#[test]
#[should_panic(expected = "`period` must be non-zero.")]
fn interval_at_with_a_zero_period_panics() {
    let _ = time::interval_at(Instant::now(), Duration::ZERO);
}

#[test]
fn sleep_outside_a_runtime_panics() {
    let msg = netloop_tests::panic_message(|| time::sleep(MS));
    assert!(msg.contains("no reactor running"), "{msg}");
}

#[test]
fn instant_arithmetic() {
    let a = Instant::now();
    let b = a + 10 * MS;
    assert_eq!(b - a, 10 * MS);
    assert_eq!(a - b, Duration::ZERO, "saturates like tokio's");
    assert_eq!(b.duration_since(a), 10 * MS);
    assert_eq!(a.duration_since(b), Duration::ZERO);
    assert_eq!(a.saturating_duration_since(b), Duration::ZERO);
    assert_eq!(a.checked_duration_since(b), None);
    assert_eq!(b.checked_duration_since(a), Some(10 * MS));
    assert_eq!(b - 10 * MS, a);
    assert_eq!(a.checked_add(10 * MS), Some(b));
    assert_eq!(b.checked_sub(10 * MS), Some(a));
    let mut c = a;
    c += 5 * MS;
    c -= 5 * MS;
    assert_eq!(c, a);
    let std = a.into_std();
    assert_eq!(Instant::from_std(std), a);
    assert_eq!(Instant::from(std), a);
    assert_eq!(std::time::Instant::from(a), std);
    assert!(b > a);
    assert!(!format!("{a:?}").is_empty());
    assert!(Instant::now() >= a);
}

#[test]
fn many_concurrent_timers_fire_in_deadline_order_on_one_loop() {
    test_body(|| {
        let rt = netloop_tests::single_loop();
        let fired = rt.block_on(async {
            let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            // Deadlines ahead of the moment their tasks first poll them, unless the
            // machine holds the loop's thread back longer than that: a sleep whose
            // deadline passed before its first poll completes in that poll (tokio's
            // does too), possibly before earlier timers already due, so only the
            // sleeps filed in the wheel are ordered.
            let base = Instant::now() + 50 * MS;
            let mut handles = Vec::new();
            for i in (0..50u32).rev() {
                let order = order.clone();
                handles.push(netloop::spawn(async move {
                    let mut sleep = Box::pin(time::sleep_until(base + MS * (i % 25)));
                    let mut filed = None;
                    std::future::poll_fn(|cx| {
                        let polled = sleep.as_mut().poll(cx);
                        filed.get_or_insert(polled.is_pending());
                        polled
                    })
                    .await;
                    if filed == Some(true) {
                        order.lock().unwrap().push(i % 25);
                    }
                }));
            }
            for h in handles {
                time::timeout(Duration::from_secs(3), h).await.unwrap().unwrap();
            }
            std::sync::Arc::try_unwrap(order).unwrap().into_inner().unwrap()
        });
        let mut sorted = fired.clone();
        sorted.sort();
        assert_eq!(fired, sorted, "timers on one loop fire in deadline order");
    });
}

/// `sleep_until` reads no clock: a deadline the loop's timer clock has passed is found
/// at the first poll, which completes, as a task's first poll after its loop's last turn
/// would find it in tokio's wheel.
#[test]
fn a_deadline_passed_before_the_loops_last_turn_completes_at_the_first_poll() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            netloop::spawn(async {
                let deadline = Instant::now();
                // A turn of the loop after the deadline: its timer clock passes it.
                time::sleep(MS).await;
                let mut sleep = std::pin::pin!(time::sleep_until(deadline));
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(std::future::Future::poll(sleep.as_mut(), &mut cx).is_ready());
                assert!(sleep.is_elapsed());
            })
            .await
            .unwrap();
        });
    });
}

/// A sleep whose deadline has passed is not elapsed until it completes (tokio's
/// `immediate_sleep`): `is_elapsed` reports the timer, not the clock.
#[netloop::test(start_paused = true)]
async fn a_past_deadline_is_not_elapsed_before_the_sleep_completes() {
    let now = Instant::now();
    let sleep = time::sleep_until(now);
    netloop::pin!(sleep);
    assert!(!sleep.is_elapsed());
    sleep.as_mut().await;
    assert!(now.elapsed() <= MS, "paused time did not move");
    assert!(sleep.is_elapsed());
}

/// A future that spends its whole budget on every poll still times out: the deadline
/// is looked at without a budget (tokio's `timeout_is_not_exhausted_by_future`).
#[test]
fn a_budget_hungry_future_still_times_out() {
    // Bounded by the test body's limit: without the fix no timeout ever fires.
    test_body(|| {
        current().block_on(async {
            let busy = async {
                loop {
                    netloop::task::consume_budget().await;
                }
            };
            let timed_out = time::timeout(MS, busy).await;
            assert!(timed_out.is_err(), "the busy future never ends on its own");
        })
    });
}

/// A sleep that has completed stays ready, whatever the task's budget: polling it again
/// spends none and is never turned away.
#[test]
fn a_completed_sleep_is_ready_without_budget() {
    test_body(|| {
        current().block_on(async {
            let mut sleep = std::pin::pin!(time::sleep(MS));
            sleep.as_mut().await;
            std::future::poll_fn(|cx| {
                while let std::task::Poll::Ready(spent) = netloop::task::coop::poll_proceed(cx) {
                    spent.made_progress();
                }
                assert!(sleep.as_mut().poll(cx).is_ready(), "a completed sleep was turned away");
                std::task::Poll::Ready(())
            })
            .await;
        });
    });
}

/// A deadline long past is found at the first poll on a loop whose wheel had
/// no timer (tokio's driver moves its wheel's `elapsed` at every park; the loop's
/// `timer_now` moves only while timers wait): the first timer of an idle wheel reads
/// the clock.
#[test]
fn a_deadline_long_past_completes_at_the_first_poll_on_a_timerless_loop() {
    test_body(|| {
        let rt = multi();
        rt.block_on(async {
            netloop::spawn(async {
                let deadline = Instant::now();
                std::thread::sleep(20 * MS);
                // Turns of the loop after the deadline, with no timer filed.
                for _ in 0..3 {
                    netloop::task::yield_now().await;
                }
                let mut sleep = std::pin::pin!(time::sleep_until(deadline));
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(
                    std::future::Future::poll(sleep.as_mut(), &mut cx).is_ready(),
                    "a deadline 20 ms past is pending at the first poll"
                );
                let err = std::future::Future::poll(
                    std::pin::pin!(time::timeout_at(deadline, std::future::pending::<()>())),
                    &mut cx,
                );
                assert!(
                    matches!(err, std::task::Poll::Ready(Err(_))),
                    "timeout_at(past) pending"
                );
            })
            .await
            .unwrap();
        });
    });
}
