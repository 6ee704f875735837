//! Behaviour of `netloop-reactor` beyond the design's scenarios: typed errors for bad
//! arguments, the bounded inbox, panics, driving rules, I/O registrations, the
//! cooperative budget, wakeup accounting, where futures are dropped, and metrics.

mod common;

use std::future::{Future, poll_fn};
use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use mio::net::UnixStream;
use netloop_reactor::io::{Direction, Interest, PollEvented, Ready};
use netloop_reactor::{
    BuildError, ConfigError, DriveError, EventLoop, EventLoopBuilder, EventLoopHandle, LoopState, RejectReason,
    ScheduleError, SpawnLocalError, coop,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Runs `f` on the loop and returns its result.
fn on_loop<T: Send + 'static>(h: &EventLoopHandle, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    h.execute(move || tx.send(f()).unwrap()).unwrap();
    recv(&rx, secs(3), "a closure run on the loop")
}

// ---------------------------------------------------------------------------------
// Bad arguments: typed errors, never panics.
// ---------------------------------------------------------------------------------

#[test]
fn config_io_ratio_out_of_range_is_a_typed_error() {
    with_timeout(5, || {
        for ratio in [0, 101, u32::MAX] {
            match EventLoop::builder().io_ratio(ratio).build() {
                Err(BuildError::Config(ConfigError::IoRatio(got))) => assert_eq!(got, ratio),
                other => panic!("io_ratio {ratio}: expected ConfigError::IoRatio, got {other:?}"),
            }
            assert_eq!(
                EventLoopBuilder::new().io_ratio(ratio).validate(),
                Err(ConfigError::IoRatio(ratio))
            );
            let io_err = std::io::Error::from(EventLoop::builder().io_ratio(ratio).build().unwrap_err());
            assert_eq!(io_err.kind(), std::io::ErrorKind::InvalidInput);
        }
        for ratio in [1, 50, 100] {
            let mut el = EventLoop::builder().io_ratio(ratio).build().unwrap();
            let h = el.handle();
            let (tx, rx) = mpsc::channel();
            h.execute(move || tx.send(ratio).unwrap()).unwrap();
            el.run_once(Some(Duration::ZERO)).unwrap();
            assert_eq!(rx.try_recv(), Ok(ratio), "a loop with io_ratio {ratio} runs tasks");
        }
    });
}

#[test]
fn config_idle_spin_above_the_maximum_is_a_typed_error() {
    with_timeout(5, || {
        let max = netloop_reactor::MAX_IDLE_SPIN;
        for length in [max + Duration::from_nanos(1), Duration::MAX] {
            match EventLoop::builder().idle_spin(length).build() {
                Err(BuildError::Config(ConfigError::IdleSpin(got))) => assert_eq!(got, length),
                other => panic!("idle_spin {length:?}: expected ConfigError::IdleSpin, got {other:?}"),
            }
        }
        for length in [Duration::ZERO, Duration::from_nanos(1), max] {
            assert_eq!(EventLoopBuilder::new().idle_spin(length).validate(), Ok(()));
        }
    });
}

#[test]
fn config_zero_events_capacity_is_a_typed_error() {
    with_timeout(5, || {
        match EventLoop::builder().events_capacity(0).build() {
            Err(BuildError::Config(ConfigError::ZeroEventsCapacity)) => {}
            other => panic!("expected ConfigError::ZeroEventsCapacity, got {other:?}"),
        }
        // Capacity 1 is valid, and two ready sources are both served (over two selects).
        let r = spawn_loop(EventLoop::builder().events_capacity(1).build().unwrap());
        let (tx, rx) = mpsc::channel();
        let mut writers = vec![];
        for i in 0..2u8 {
            let (a, b) = UnixStream::pair().unwrap();
            writers.push(b);
            let a = r.handle.register(a, Interest::READABLE).unwrap();
            let tx = tx.clone();
            r.handle
                .spawn(async move {
                    let mut buf = [0u8; 1];
                    let n = poll_fn(|cx| a.poll_read_io(cx, |mut s| s.read(&mut buf)))
                        .await
                        .unwrap();
                    tx.send((i, n, buf[0])).unwrap();
                })
                .unwrap()
                .detach();
        }
        for (i, w) in writers.iter_mut().enumerate() {
            w.write_all(&[i as u8 + 10]).unwrap();
        }
        let mut got = vec![recv(&rx, secs(2), "reader 1"), recv(&rx, secs(2), "reader 2")];
        got.sort();
        assert_eq!(got, [(0, 1, 10), (1, 1, 11)]);
        r.shutdown(secs(1));
    });
}

#[test]
fn busy_events_capacity_zero_is_a_typed_error_and_one_still_serves_every_source() {
    with_timeout(10, || {
        match EventLoop::builder().busy_events_capacity(0).build() {
            Err(BuildError::Config(ConfigError::ZeroBusyEventsCapacity)) => {}
            other => panic!("expected ConfigError::ZeroBusyEventsCapacity, got {other:?}"),
        }
        // A task that wakes itself forever keeps the loop busy, so every select is
        // non-blocking and takes one event: the other ready sources wait in the
        // kernel, and are still all served.
        let r = spawn_loop(EventLoop::builder().busy_events_capacity(1).build().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let spinning = stop.clone();
        r.handle
            .spawn(poll_fn(move |cx| {
                if spinning.load(SeqCst) {
                    return Poll::Ready(());
                }
                cx.waker().wake_by_ref();
                Poll::Pending
            }))
            .unwrap()
            .detach();
        let (tx, rx) = mpsc::channel();
        let mut writers = vec![];
        for _ in 0..8u8 {
            let (a, b) = UnixStream::pair().unwrap();
            writers.push(b);
            let a = r.handle.register(a, Interest::READABLE).unwrap();
            let tx = tx.clone();
            r.handle
                .spawn(async move {
                    let mut buf = [0u8; 1];
                    poll_fn(|cx| a.poll_read_io(cx, |mut s| s.read(&mut buf)))
                        .await
                        .unwrap();
                    tx.send(buf[0]).unwrap();
                })
                .unwrap()
                .detach();
        }
        for (i, w) in writers.iter_mut().enumerate() {
            w.write_all(&[i as u8]).unwrap();
        }
        let mut got: Vec<u8> = (0..8).map(|i| recv(&rx, secs(5), &format!("reader {i}"))).collect();
        got.sort();
        assert_eq!(got, (0..8).collect::<Vec<u8>>());
        stop.store(true, SeqCst);
        r.shutdown(secs(1));
    });
}

#[test]
fn config_quiet_period_longer_than_timeout_is_a_typed_error_on_the_builder() {
    with_timeout(5, || {
        let res = EventLoop::builder()
            .shutdown_quiet_period(secs(3))
            .shutdown_timeout(secs(2))
            .build();
        match res {
            Err(BuildError::Config(ConfigError::QuietPeriodExceedsTimeout { quiet_period, timeout })) => {
                assert_eq!((quiet_period, timeout), (secs(3), secs(2)));
            }
            other => panic!("expected QuietPeriodExceedsTimeout, got {other:?}"),
        }
        // Against the default 15 s timeout too.
        assert!(matches!(
            EventLoop::builder().shutdown_quiet_period(secs(16)).build(),
            Err(BuildError::Config(ConfigError::QuietPeriodExceedsTimeout { .. }))
        ));
        // Equal is fine.
        EventLoop::builder()
            .shutdown_quiet_period(secs(2))
            .shutdown_timeout(secs(2))
            .build()
            .unwrap();
    });
}

#[test]
fn config_quiet_period_longer_than_timeout_is_a_typed_error_on_shutdown() {
    with_timeout(5, || {
        let r = start_loop();
        let h = r.handle.clone();
        match h.shutdown_gracefully_with(secs(2), secs(1)) {
            Err(ConfigError::QuietPeriodExceedsTimeout { quiet_period, timeout }) => {
                assert_eq!((quiet_period, timeout), (secs(2), secs(1)));
            }
            other => panic!("expected QuietPeriodExceedsTimeout, got {other:?}"),
        }
        assert!(!h.is_shutting_down(), "a rejected shutdown request changes nothing");
        assert_eq!(on_loop(&h, || 7), 7, "the loop still runs tasks");
        r.shutdown(secs(1));
    });
}

#[test]
fn zero_period_is_a_typed_error_for_fixed_rate_and_fixed_delay() {
    with_timeout(5, || {
        let r = start_loop();
        let h = r.handle.clone();
        let e = h.schedule_at_fixed_rate(ms(1), Duration::ZERO, || {}).unwrap_err();
        assert!(matches!(e, ScheduleError::ZeroPeriod), "{e:?}");
        assert!(e.to_string().contains("period"), "{e}");
        let e = h.schedule_with_fixed_delay(ms(1), Duration::ZERO, || {}).unwrap_err();
        assert!(matches!(e, ScheduleError::ZeroPeriod), "{e:?}");
        // The same call on the loop thread.
        let on = on_loop(&h, || {
            let h = EventLoopHandle::current().unwrap();
            (
                matches!(
                    h.schedule_at_fixed_rate(Duration::ZERO, Duration::ZERO, || {}),
                    Err(ScheduleError::ZeroPeriod)
                ),
                matches!(
                    h.schedule_with_fixed_delay(Duration::ZERO, Duration::ZERO, || {}),
                    Err(ScheduleError::ZeroPeriod)
                ),
            )
        });
        assert_eq!(on, (true, true));
        r.shutdown(secs(1));
        // After shutdown a valid period is rejected as Rejected(Shutdown).
        match h.schedule_at_fixed_rate(ms(1), ms(1), || {}) {
            Err(ScheduleError::Rejected(e)) => assert!(e.is_shutdown()),
            other => panic!("expected ScheduleError::Rejected, got {other:?}"),
        }
    });
}

// ---------------------------------------------------------------------------------
// The bounded inbox.
// ---------------------------------------------------------------------------------

#[test]
fn bounded_inbox_rejects_when_full_and_hands_the_closure_back() {
    with_timeout(5, || {
        // 1 is below the floor of 16.
        let mut el = EventLoop::builder().max_pending_tasks(1).build().unwrap();
        let h = el.handle();
        let ran = Arc::new(AtomicUsize::new(0));
        let task = |ran: &Arc<AtomicUsize>| {
            let ran = ran.clone();
            move || {
                ran.fetch_add(1, SeqCst);
            }
        };
        for i in 0..16 {
            h.execute(task(&ran))
                .unwrap_or_else(|e| panic!("submission #{i} under the floor of 16 rejected: {e}"));
        }
        assert_eq!(h.metrics().pending_tasks, 16);
        let e = h.execute(task(&ran)).unwrap_err();
        assert!(e.is_full() && !e.is_shutdown(), "{e:?}");
        assert_eq!(e.reason(), RejectReason::Full);
        assert!(e.to_string().contains("full"), "{e}");
        let back = e.into_task().expect("the rejected closure is handed back");
        back();
        assert_eq!(ran.load(SeqCst), 1, "the handed-back closure is the one submitted");
        let e = h.lazy_execute(task(&ran)).unwrap_err();
        assert!(e.is_full());
        assert_eq!(std::io::Error::from(e).kind(), std::io::ErrorKind::WouldBlock);

        // A rejected schedule is dropped on the submitting thread.
        let (tx, rx) = mpsc::channel();
        let guard = DropOnThread(tx, "scheduled");
        let e = h
            .schedule(ms(1), move || {
                let _ = &guard;
            })
            .unwrap_err();
        assert!(e.is_full());
        drop(e);
        let (_, dropped_on) = recv(&rx, secs(1), "the rejected scheduled closure to be dropped");
        assert_eq!(dropped_on, thread::current().id(), "dropped on the submitting thread");

        // Draining the inbox makes room again.
        el.run_once(Some(Duration::ZERO)).unwrap();
        assert_eq!(ran.load(SeqCst), 17);
        assert_eq!(h.metrics().pending_tasks, 0);
        h.execute(task(&ran))
            .expect("accepted again once the loop drained its inbox");
        el.run_once(Some(Duration::ZERO)).unwrap();
        assert_eq!(ran.load(SeqCst), 18);
    });
}

#[test]
fn bounded_inbox_also_bounds_spawn() {
    // The builder and inbox docs: `max_pending_tasks` is checked for every *new*
    // submission from another thread (execute, schedule, spawn); only wakes of futures
    // already spawned are never refused.
    with_timeout(5, || {
        let mut el = EventLoop::builder().max_pending_tasks(16).build().unwrap();
        let h = el.handle();
        for _ in 0..16 {
            h.execute(|| {}).unwrap();
        }
        assert!(h.execute(|| {}).unwrap_err().is_full(), "execute is bounded");
        let spawned = h.spawn(async { 1 });
        let pending = h.metrics().pending_tasks;
        el.run_once(Some(Duration::ZERO)).unwrap();
        match spawned {
            Err(e) => assert!(e.is_full(), "{e:?}"),
            Ok(_task) => panic!(
                "spawn from another thread was accepted into a full inbox (max_pending_tasks 16, \
                 {pending} pending after it): spawn bypasses the bound"
            ),
        }
    });
}

// ---------------------------------------------------------------------------------
// Panics are caught; the loop goes on.
// ---------------------------------------------------------------------------------

#[test]
fn panic_in_a_closure_is_caught_and_the_loop_goes_on() {
    with_timeout(5, || {
        let r = start_loop();
        r.handle.execute(|| panic!("closure panics on purpose")).unwrap();
        assert_eq!(on_loop(&r.handle, || "alive"), "alive");
        // Tail tasks and shutdown hooks too.
        r.handle
            .execute_after_iteration(|| panic!("tail task panics on purpose"))
            .unwrap();
        assert_eq!(on_loop(&r.handle, || "still alive"), "still alive");
        let hook_ran = Arc::new(AtomicBool::new(false));
        r.handle.add_shutdown_hook(|| panic!("hook panics on purpose")).unwrap();
        let flag = hook_ran.clone();
        r.handle.add_shutdown_hook(move || flag.store(true, SeqCst)).unwrap();
        assert_eq!(r.handle.state(), LoopState::Started);
        r.shutdown(secs(2));
        assert!(
            hook_ran.load(SeqCst),
            "a panicking shutdown hook does not stop the next one"
        );
    });
}

#[test]
fn panic_in_a_scheduled_task_is_caught_and_the_loop_goes_on() {
    with_timeout(5, || {
        let r = start_loop();
        let (tx, rx) = mpsc::channel();
        let f = r
            .handle
            .schedule(ms(5), || panic!("scheduled task panics on purpose"))
            .unwrap();
        r.handle.schedule(ms(20), move || tx.send("later").unwrap()).unwrap();
        assert_eq!(
            recv(&rx, secs(2), "the task scheduled after the panicking one"),
            "later"
        );
        assert!(f.is_done(), "the panicking one-shot task counts as done");
        r.shutdown(secs(1));
    });
}

#[test]
fn panic_in_a_spawned_future_is_reported_by_its_task_and_the_loop_goes_on() {
    with_timeout(5, || {
        let r = start_loop();
        let task = r.handle.spawn(async { panic!("future panics on purpose") }).unwrap();
        let outcome = catch_unwind(AssertUnwindSafe(|| futures::executor::block_on(task)));
        let payload = outcome.expect_err("awaiting the task of a panicked future re-raises the panic");
        let msg = payload.downcast_ref::<&str>().copied().unwrap_or("");
        assert!(msg.contains("on purpose"), "the original panic payload: {msg:?}");
        let task = r.handle.spawn(async { 5 }).unwrap();
        assert_eq!(futures::executor::block_on(task), 5, "the loop goes on");
        r.shutdown(secs(1));
    });
}

#[test]
fn panicking_periodic_tasks_are_cancelled() {
    with_timeout(5, || {
        let r = start_loop();
        for fixed_rate in [true, false] {
            let (tx, rx) = mpsc::channel();
            let mut n = 0;
            let body = move || {
                n += 1;
                tx.send(n).unwrap();
                if n == 3 {
                    panic!("periodic task panics on purpose");
                }
            };
            let f = if fixed_rate {
                r.handle.schedule_at_fixed_rate(Duration::ZERO, ms(5), body).unwrap()
            } else {
                r.handle.schedule_with_fixed_delay(Duration::ZERO, ms(5), body).unwrap()
            };
            for want in 1..=3 {
                assert_eq!(recv(&rx, secs(2), "a periodic run"), want);
            }
            wait_until(secs(1), "the panicking periodic task to be cancelled", || {
                f.is_cancelled()
            });
            // Cancelled and dropped: the sender is gone, nothing more arrives.
            match rx.recv_timeout(ms(200)) {
                Err(RecvTimeoutError::Disconnected) => {}
                other => panic!("fixed_rate={fixed_rate}: expected the task to be dropped, got {other:?}"),
            }
            assert!(!f.cancel(), "already cancelled");
        }
        assert_eq!(on_loop(&r.handle, || "alive"), "alive");
        r.shutdown(secs(1));
    });
}

// ---------------------------------------------------------------------------------
// Driving rules.
// ---------------------------------------------------------------------------------

#[test]
fn spawn_local_off_the_loop_thread_is_rejected() {
    with_timeout(5, || {
        // Not driven by anyone.
        let el = EventLoop::new().unwrap();
        let e = el.handle().spawn_local(async { Rc::new(1) }).unwrap_err();
        assert_eq!(e, SpawnLocalError::NotOnLoop);
        drop(el);

        let r = start_loop();
        // From a plain thread while the loop runs elsewhere.
        assert_eq!(r.handle.spawn_local(async {}).unwrap_err(), SpawnLocalError::NotOnLoop);
        // From the thread of *another* loop.
        let other = start_loop();
        let h = r.handle.clone();
        let res = on_loop(&other.handle, move || h.spawn_local(async {}).map(|_| ()));
        assert_eq!(res, Err(SpawnLocalError::NotOnLoop));
        // On the loop's own thread it works, with a !Send future.
        let (tx, rx) = mpsc::channel();
        r.handle
            .execute(move || {
                let h = EventLoopHandle::current().unwrap();
                let local = Rc::new(21);
                h.spawn_local(async move { tx.send(*local * 2).unwrap() })
                    .unwrap()
                    .detach();
            })
            .unwrap();
        assert_eq!(recv(&rx, secs(2), "the spawn_local future"), 42);
        other.shutdown(secs(1));
        r.shutdown(secs(1));
    });
}

#[test]
fn driving_a_loop_from_inside_a_task_is_a_nested_error() {
    with_timeout(5, || {
        let r = start_loop();
        let results = on_loop(&r.handle, || {
            let mut inner = EventLoop::new().unwrap();
            let a = inner.run_once(Some(Duration::ZERO)).map(|_| ());
            let b = inner.run();
            let c = inner.block_on(async { 1 }).map(|_| ());
            [a, b, c]
        });
        assert_eq!(
            results,
            [Err(DriveError::Nested); 3],
            "run_once / run / block_on inside a task"
        );
        assert_eq!(on_loop(&r.handle, || "alive"), "alive", "the outer loop is unharmed");
        r.shutdown(secs(1));

        // From block_on's future, for the same loop's thread.
        let mut outer = EventLoop::new().unwrap();
        let got = outer
            .block_on(async {
                let mut inner = EventLoop::new().unwrap();
                inner.block_on(async { 1 })
            })
            .unwrap();
        assert_eq!(got, Err(DriveError::Nested));
    });
}

#[test]
fn a_loop_is_pinned_to_the_thread_that_first_drove_it() {
    with_timeout(5, || {
        let mut el = EventLoop::new().unwrap();
        el.run_once(Some(Duration::ZERO)).unwrap();
        let res = thread::spawn(move || {
            let res = el.run_once(Some(Duration::ZERO)).map(|_| ());
            (res, el)
        })
        .join()
        .unwrap();
        assert_eq!(res.0, Err(DriveError::WrongThread));
        let mut el = res.1;
        assert_eq!(
            el.run_once(Some(Duration::ZERO)),
            Ok(LoopState::Started),
            "its own thread may still drive it"
        );
    });
}

// ---------------------------------------------------------------------------------
// I/O.
// ---------------------------------------------------------------------------------

/// Counts the polls of a future.
struct CountPolls<F> {
    inner: Pin<Box<F>>,
    polls: Arc<AtomicUsize>,
}

impl<F: Future> Future for CountPolls<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, SeqCst);
        self.inner.as_mut().poll(cx)
    }
}

/// Spawns `future` (detached) on the loop, counting its polls, and waits for its
/// first poll. Returns the count.
fn spawn_counting_polls<F>(r: &Running, future: F) -> Arc<AtomicUsize>
where
    F: Future<Output = ()> + Send + 'static,
{
    let polls = Arc::new(AtomicUsize::new(0));
    r.handle
        .spawn(CountPolls {
            inner: Box::pin(future),
            polls: polls.clone(),
        })
        .unwrap()
        .detach();
    wait_until(secs(2), "the task's first poll", || polls.load(SeqCst) >= 1);
    polls
}

/// A task waiting on readiness is woken once per registration, as when wakers are
/// taken: after one wake it is not woken again by later events until it waits again
/// (a loop task's waker stays in its slot, but disarmed).
#[test]
fn io_readiness_wakes_a_waiting_task_once_per_registration() {
    with_timeout(5, || {
        let r = start_loop();
        let (a, mut b) = UnixStream::pair().unwrap();
        let a = r.handle.register(a, Interest::READABLE).unwrap();
        // Registers its waker on the first poll only; later polls just return Pending.
        let mut registered = false;
        let waits_once = poll_fn(move |cx| {
            if !registered {
                registered = true;
                assert!(a.poll_read_ready(cx).is_pending(), "nothing to read yet");
            }
            std::task::Poll::<()>::Pending
        });
        let polls = spawn_counting_polls(&r, waits_once);
        wait_until_blocked(r.tid);
        // Three readable edges, each dispatched before the next is sent.
        for i in 1..=3 {
            let io_events = r.handle.metrics().io_events;
            b.write_all(&[i]).unwrap();
            wait_until(secs(2), "the readiness event", || {
                r.handle.metrics().io_events > io_events
            });
            wait_until_blocked(r.tid);
        }
        assert_eq!(
            polls.load(SeqCst),
            2,
            "the first poll, then one wake for the one registration"
        );
        r.shutdown(secs(1));
    });
}

#[test]
fn io_readiness_wakes_a_task_reading_a_unix_stream() {
    with_timeout(5, || {
        let r = start_loop();
        let (a, mut b) = UnixStream::pair().unwrap();
        let a = r.handle.register(a, Interest::READABLE).unwrap();
        assert_eq!(r.handle.metrics().registrations, 1);
        let (tx, rx) = mpsc::channel();
        let reader = async move {
            let mut buf = [0u8; 16];
            let n = poll_fn(|cx| a.poll_read_io(cx, |mut s| s.read(&mut buf))).await;
            tx.send(n.map(|n| buf[..n].to_vec())).unwrap();
        };
        let polls = spawn_counting_polls(&r, reader);
        // The reader has nothing to read: it parks and the loop blocks.
        wait_until_blocked(r.tid);
        assert!(
            matches!(rx.try_recv(), Err(mpsc::TryRecvError::Empty)),
            "nothing was read yet"
        );
        let io_events = r.handle.metrics().io_events;
        b.write_all(b"hello").unwrap();
        let got = recv(&rx, secs(2), "the reader to be woken by readiness").expect("read ok");
        assert_eq!(got, b"hello");
        assert!(
            polls.load(SeqCst) >= 2,
            "the reader was parked, then woken by the readiness event"
        );
        wait_until(secs(1), "io_events to count the readiness event", || {
            r.handle.metrics().io_events > io_events
        });
        // The registration went away with the finished task.
        wait_until(secs(1), "the registration to be dropped", || {
            r.handle.metrics().registrations == 0
        });
        r.shutdown(secs(1));
    });
}

/// A deferred source registers at its first use: with the loop driving that thread,
/// or with its fallback off every loop. Unused, it holds no registration, and
/// `into_inner` and drop work without one.
#[test]
fn a_deferred_poll_evented_registers_at_first_use() {
    with_timeout(5, || {
        let first = start_loop();
        let second = start_loop();
        let (a, mut b) = UnixStream::pair().unwrap();
        let pe = PollEvented::new_deferred(a, Interest::READABLE, first.handle.clone());
        assert!(pe.registered_loop().is_none(), "not registered before its first use");
        assert_eq!(first.handle.metrics().registrations, 0);
        // First used on `second`'s thread: registered there, not with the fallback.
        b.write_all(b"x").unwrap();
        let (pe, on) = on_loop(&second.handle, move || {
            let on = pe.registration().unwrap().handle();
            (pe, on)
        });
        assert!(on == second.handle, "registered with the loop that used it first");
        assert!(pe.registered_loop().unwrap() == second.handle);
        assert_eq!(
            (
                first.handle.metrics().registrations,
                second.handle.metrics().registrations
            ),
            (0, 1)
        );
        // Readiness reaches it: the byte written before registration is reported.
        let (tx, rx) = mpsc::channel();
        second
            .handle
            .spawn(async move {
                let mut buf = [0u8; 4];
                let n = poll_fn(|cx| pe.poll_read_io(cx, |mut s| s.read(&mut buf))).await;
                tx.send(n.map(|n| buf[..n].to_vec())).unwrap();
            })
            .unwrap()
            .detach();
        assert_eq!(recv(&rx, secs(2), "the deferred source's read").unwrap(), b"x");
        wait_until(secs(1), "the registration to go with its task", || {
            second.handle.metrics().registrations == 0
        });

        // First used off every loop: the fallback takes it.
        let (c, _d) = UnixStream::pair().unwrap();
        let pe = PollEvented::new_deferred(c, Interest::READABLE, first.handle.clone());
        assert!(pe.registration().unwrap().handle() == first.handle);
        assert_eq!(first.handle.metrics().registrations, 1);
        let c = pe.into_inner().expect("deregisters what first use registered");
        assert_eq!(first.handle.metrics().registrations, 0);

        // Never used: nothing to deregister, the source comes back whole.
        let pe = PollEvented::new_deferred(c, Interest::READABLE, first.handle.clone());
        let c = pe
            .into_inner()
            .expect("an unused deferred source has nothing to deregister");
        drop(PollEvented::new_deferred(c, Interest::READABLE, first.handle.clone()));
        assert_eq!(first.handle.metrics().registrations, 0);
        first.shutdown(secs(1));
        second.shutdown(secs(1));
    });
}

/// A deferred source whose loop shut down before its first use fails that use, and
/// each later one, with the shutdown error, not a panic; on another live loop's
/// thread too (it is not registered there); and `into_inner` gives it back.
#[test]
fn a_deferred_poll_evented_on_a_shut_down_loop_fails_each_use() {
    with_timeout(5, || {
        let r = start_loop();
        let other = start_loop();
        let handle = r.handle.clone();
        r.shutdown(secs(1));
        let (a, _b) = UnixStream::pair().unwrap();
        let pe = PollEvented::new_deferred(a, Interest::READABLE, handle.clone());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        for _ in 0..2 {
            match pe.poll_read_ready(&mut cx) {
                Poll::Ready(Err(e)) => assert!(netloop_reactor::is_loop_shut_down(&e), "{e}"),
                other => panic!("expected the shutdown error, got {other:?}"),
            }
        }
        assert!(pe.registered_loop().unwrap() == handle, "it stays with its own loop");
        let (c, _d) = UnixStream::pair().unwrap();
        let pe2 = PollEvented::new_deferred(c, Interest::READABLE, handle);
        let (pe2, failed) = on_loop(&other.handle, move || {
            let mut cx = Context::from_waker(std::task::Waker::noop());
            let failed = matches!(pe2.poll_read_ready(&mut cx), Poll::Ready(Err(ref e)) if netloop_reactor::is_loop_shut_down(e));
            (pe2, failed)
        });
        assert!(
            failed,
            "used on a live loop's thread, it still reports its own loop's shutdown"
        );
        assert_eq!(
            other.handle.metrics().registrations,
            0,
            "not registered with the live loop"
        );
        pe.into_inner().expect("nothing to deregister");
        drop(pe2);
        other.shutdown(secs(1));
    });
}

/// What a deferred source was assumed ready for still runs once after its loop shut
/// down (data already in the socket is read, as tokio's sockets read it); the
/// `WouldBlock` that follows clears it, and then every use reports the shutdown.
#[test]
fn a_deferred_source_of_a_shut_down_loop_reads_what_is_there_then_reports_shutdown() {
    with_timeout(5, || {
        let r = start_loop();
        let handle = r.handle.clone();
        r.shutdown(secs(1));
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(b"hi").unwrap();
        let pe = PollEvented::new_deferred(a, Interest::READABLE, handle).assuming_ready(Ready::READABLE);
        let mut buf = [0u8; 4];
        assert_eq!(pe.try_io(Direction::Read, |mut s| s.read(&mut buf)).unwrap(), 2);
        let e = pe.try_io(Direction::Read, |mut s| s.read(&mut buf)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        let e = pe.try_io(Direction::Read, |mut s| s.read(&mut buf)).unwrap_err();
        assert!(netloop_reactor::is_loop_shut_down(&e), "{e}");
    });
}

#[test]
fn a_registration_made_off_the_loop_is_read_there_after_the_kernel_returns_its_event() {
    // The loop reads a registration made on another thread as soon as a select returns
    // its event: nothing of ours orders the registering thread's writes before those
    // reads, only the kernel (epoll_ctl, then the epoll_wait that returns the event).
    // This thread does nothing else the loop could synchronize with until the loop has
    // counted the event (the metrics are relaxed loads), so under ThreadSanitizer (the
    // CI step) this checks that the kernel's edge is one TSan sees
    // (`io/registration_set.rs`).
    with_timeout(5, || {
        let r = start_loop();
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(b"x").unwrap();
        let events_before = r.handle.metrics().io_events;
        let a = r.handle.register(a, Interest::READABLE).unwrap();
        let deadline = Instant::now() + secs(3);
        while r.handle.metrics().io_events == events_before {
            assert!(Instant::now() < deadline, "the loop never counted the readable event");
            thread::yield_now();
        }
        drop(a);
        r.shutdown(secs(1));
    });
}

#[test]
fn dropping_a_poll_evented_lowers_registrations() {
    with_timeout(5, || {
        let r = start_loop();
        let h = &r.handle;
        assert_eq!(h.metrics().registrations, 0);
        let (a, b) = UnixStream::pair().unwrap();
        let a = h.register(a, Interest::READABLE).unwrap();
        let b = h.register(b, Interest::READABLE | Interest::WRITABLE).unwrap();
        assert_eq!(h.metrics().registrations, 2);
        drop(a);
        assert_eq!(h.metrics().registrations, 1, "dropping a PollEvented deregisters it");
        let b = b.into_inner().unwrap();
        assert_eq!(h.metrics().registrations, 0, "into_inner deregisters it");
        // Registering on the loop thread (PollEvented::new) and dropping it there.
        let counts = on_loop(h, move || {
            let h = EventLoopHandle::current().unwrap();
            let pe = PollEvented::new(b, Interest::READABLE).unwrap();
            let during = h.metrics().registrations;
            drop(pe);
            (during, h.metrics().registrations)
        });
        assert_eq!(counts, (1, 0));
        assert!(
            PollEvented::new(UnixStream::pair().unwrap().0, Interest::READABLE).is_err(),
            "off the loop"
        );
        r.shutdown(secs(1));
    });
}

#[test]
fn a_task_blocked_on_io_gets_an_error_when_the_loop_terminates() {
    with_timeout(5, || {
        let r = start_loop();
        let (a, b) = UnixStream::pair().unwrap();
        let a = r.handle.register(a, Interest::READABLE).unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = async move {
            let mut buf = [0u8; 16];
            let res = poll_fn(|cx| a.poll_read_io(cx, |mut s| s.read(&mut buf))).await;
            tx.send(res).unwrap();
        };
        spawn_counting_polls(&r, reader);
        let h = r.handle.clone();
        r.shutdown(secs(2));
        match rx.recv_timeout(secs(1)) {
            Ok(Err(e)) => assert!(e.to_string().contains("shut down"), "error: {e}"),
            Ok(Ok(n)) => panic!("read {n} bytes from a socket nobody wrote to"),
            Err(e) => panic!("the blocked reader got no error at termination ({e:?}): it was dropped unpolled"),
        }
        assert_eq!(h.metrics().registrations, 0);
        drop(b);
    });
}

/// Records the most reads one poll of a future made.
struct MaxPerPoll<F> {
    inner: Pin<Box<F>>,
    reads: Arc<AtomicU64>,
    max: Arc<AtomicU64>,
    polls: Arc<AtomicU64>,
}

impl<F: Future> Future for MaxPerPoll<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let before = self.reads.load(SeqCst);
        self.polls.fetch_add(1, SeqCst);
        let out = self.inner.as_mut().poll(cx);
        let did = self.reads.load(SeqCst) - before;
        self.max.fetch_max(did, SeqCst);
        out
    }
}

#[test]
fn coop_budget_an_always_ready_reader_cannot_starve_another_task() {
    with_timeout(5, || {
        let r = start_loop();
        // A stream whose peer has hung up: every read returns Ok(0) at once, forever,
        // and the readiness (read-closed) never clears.
        let (a, b) = UnixStream::pair().unwrap();
        drop(b);
        let a = r.handle.register(a, Interest::READABLE).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let (max, polls) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (done_tx, done_rx) = mpsc::channel();
        let reader = {
            let (stop, reads) = (stop.clone(), reads.clone());
            async move {
                let mut buf = [0u8; 8];
                while !stop.load(SeqCst) {
                    let n = poll_fn(|cx| a.poll_read_io(cx, |mut s| s.read(&mut buf)))
                        .await
                        .unwrap();
                    assert_eq!(n, 0, "EOF");
                    reads.fetch_add(1, SeqCst);
                }
                done_tx.send(()).unwrap();
            }
        };
        let reader = MaxPerPoll {
            inner: Box::pin(reader),
            reads: reads.clone(),
            max: max.clone(),
            polls: polls.clone(),
        };
        r.handle.spawn(reader).unwrap().detach();
        wait_until(secs(2), "the reader to start reading", || reads.load(SeqCst) > 0);

        // Another task must get its turn while the reader is still going.
        let (tx, rx) = mpsc::channel();
        let (stop2, reads2) = (stop.clone(), reads.clone());
        r.handle
            .spawn(async move {
                let seen = reads2.load(SeqCst);
                stop2.store(true, SeqCst);
                tx.send(seen).unwrap();
            })
            .unwrap()
            .detach();
        let reads_when_other_ran = match rx.recv_timeout(secs(2)) {
            Ok(n) => n,
            Err(e) => panic!(
                "the other task never ran ({e:?}): an always-ready reader starved the loop; reads {}, polls {}",
                reads.load(SeqCst),
                polls.load(SeqCst)
            ),
        };
        recv(&done_rx, secs(2), "the reader to stop");
        assert!(reads_when_other_ran > 0, "the reader made progress");
        assert!(polls.load(SeqCst) >= 2, "the reader yielded at least once");
        let max = max.load(SeqCst);
        assert!(
            max <= u64::from(coop::BUDGET),
            "one poll made {max} reads, more than the budget of {}",
            coop::BUDGET
        );
        r.shutdown(secs(1));
    });
}

/// Counts its wakes.
struct CountingWaker(AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn coop_budget_a_wait_with_the_budget_spent_waits_for_readiness_instead_of_yielding() {
    with_timeout(5, || {
        let r = start_loop();
        let (a, mut b) = UnixStream::pair().unwrap();
        let a = r.handle.register(a, Interest::READABLE).unwrap();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let (tx, rx) = mpsc::channel();
        let waker = std::task::Waker::from(counter.clone());
        let count = counter.clone();
        r.handle
            .spawn(async move {
                let mut cx = Context::from_waker(&waker);
                // Spend the task's budget: the unit that is refused defers one wake.
                while coop::poll_proceed(&mut cx).map(|unit| unit.made_progress()).is_ready() {}
                let wakes_after_spending = count.0.load(SeqCst);
                // Nothing to read: the wait registers the waker and does not wake it.
                let waited = a.poll_read_ready(&mut cx).is_pending();
                tx.send((wakes_after_spending, waited, count.0.load(SeqCst), a))
                    .unwrap();
            })
            .unwrap()
            .detach();
        let (spent, waited, after_wait, a) = recv(&rx, secs(2), "the task's budget spent");
        assert_eq!(spent, 0, "running out of budget defers the wake past the next I/O poll");
        assert!(waited, "no readiness yet");
        assert_eq!(after_wait, 0, "a wait is not a yield: no extra wake");
        wait_until(secs(2), "the deferred wake, once the loop polled for I/O", || {
            counter.0.load(SeqCst) == 1
        });
        // The registered waker is woken by the event.
        b.write_all(b"x").unwrap();
        wait_until(secs(2), "the event to wake the waiting waker", || {
            counter.0.load(SeqCst) == 2
        });
        drop(a);
        r.shutdown(secs(1));
    });
}

// ---------------------------------------------------------------------------------
// Wakeups, dropping on the loop thread, metrics.
// ---------------------------------------------------------------------------------

#[test]
fn closures_spawns_and_wakes_on_the_loop_thread_share_one_fifo() {
    with_timeout(5, || {
        let r = start_loop();
        let order = on_loop(&r.handle, || {
            let h = EventLoopHandle::current().unwrap();
            let log = Arc::new(Mutex::new(Vec::new()));
            let (l1, l2, l3, l4) = (log.clone(), log.clone(), log.clone(), log.clone());
            // A task that logs, yields (a same-thread wake: back of the queue), logs.
            h.spawn_local(async move {
                l1.lock().unwrap().push("task 1");
                let mut yielded = false;
                poll_fn(|cx| {
                    if yielded {
                        return Poll::Ready(());
                    }
                    yielded = true;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                })
                .await;
                l1.lock().unwrap().push("task 1 again");
            })
            .unwrap()
            .detach();
            h.execute(move || l2.lock().unwrap().push("closure 1")).unwrap();
            h.spawn_local(async move { l3.lock().unwrap().push("task 2") })
                .unwrap()
                .detach();
            h.execute(move || l4.lock().unwrap().push("closure 2")).unwrap();
            let log = log.clone();
            let (tx, rx) = mpsc::channel();
            h.execute(move || {
                // By now the yielded task went behind closure 2: it runs after this.
                let h = EventLoopHandle::current().unwrap();
                h.execute(move || tx.send(log.lock().unwrap().clone()).unwrap())
                    .unwrap();
            })
            .unwrap();
            rx
        });
        let order = recv(&order, secs(3), "the log");
        assert_eq!(order, ["task 1", "closure 1", "task 2", "closure 2", "task 1 again"]);
    });
}

#[test]
fn submissions_from_the_loop_thread_send_no_wakeups() {
    with_timeout(5, || {
        let r = start_loop();
        let (tx, rx) = mpsc::channel();
        r.handle
            .execute(move || {
                let h = EventLoopHandle::current().unwrap();
                let before = h.metrics();
                let ran = Arc::new(AtomicUsize::new(0));
                let inc = |ran: &Arc<AtomicUsize>| {
                    let ran = ran.clone();
                    move || {
                        ran.fetch_add(1, SeqCst);
                    }
                };
                for _ in 0..100 {
                    h.execute(inc(&ran)).unwrap();
                    h.lazy_execute(inc(&ran)).unwrap();
                }
                h.schedule(Duration::ZERO, inc(&ran)).unwrap();
                h.schedule(ms(1), inc(&ran)).unwrap();
                h.execute_after_iteration(inc(&ran)).unwrap();
                let mut left = 3;
                let tick = inc(&ran);
                let periodic = Arc::new(Mutex::new(None));
                let me = periodic.clone();
                let f = h
                    .schedule_at_fixed_rate(Duration::ZERO, ms(1), move || {
                        tick();
                        left -= 1;
                        if left == 0 {
                            me.lock()
                                .unwrap()
                                .as_ref()
                                .map(netloop_reactor::ScheduledHandle::cancel);
                        }
                    })
                    .unwrap();
                *periodic.lock().unwrap() = Some(f);
                // A future woken from the loop thread.
                let (wake_tx, wake_rx) = futures::channel::oneshot::channel::<()>();
                let ran2 = ran.clone();
                h.spawn(async move {
                    wake_rx.await.unwrap();
                    ran2.fetch_add(1, SeqCst);
                })
                .unwrap()
                .detach();
                let local = Rc::new(ran.clone());
                h.spawn_local(async move {
                    local.fetch_add(1, SeqCst);
                })
                .unwrap()
                .detach();
                h.execute(move || wake_tx.send(()).unwrap()).unwrap();
                // Check once everything above has run.
                let h2 = h.clone();
                h.schedule(ms(30), move || {
                    let after = h2.metrics();
                    tx.send((before, after, ran.load(SeqCst))).unwrap();
                })
                .unwrap();
            })
            .unwrap();
        let (before, after, ran) = recv(&rx, secs(2), "the on-loop submissions to finish");
        assert_eq!(ran, 200 + 2 + 1 + 3 + 1 + 1, "every on-loop submission ran");
        assert_eq!(
            after.wakeups_sent, before.wakeups_sent,
            "submissions on the loop thread wrote no eventfd"
        );
        assert_eq!(
            after.wakeups_suppressed, before.wakeups_suppressed,
            "and did not even consult next_wakeup"
        );
        r.shutdown(secs(1));
    });
}

/// The shape of h2's shutdown: a stream's destructor wakes its connection task while
/// holding the streams' lock, and the connection's destructor takes that lock. A loop
/// that ran the connection's destructor inside that wake would deadlock on it.
#[test]
fn a_destructor_waking_a_task_under_a_lock_at_termination_does_not_run_its_destructor_inside_the_wake() {
    struct Stream(Arc<Mutex<Option<std::task::Waker>>>);
    impl Drop for Stream {
        fn drop(&mut self) {
            let connection = self.0.lock().unwrap();
            if let Some(waker) = connection.as_ref() {
                waker.wake_by_ref();
            }
        }
    }
    struct Connection(Arc<Mutex<Option<std::task::Waker>>>, mpsc::Sender<bool>);
    impl Drop for Connection {
        fn drop(&mut self) {
            // `try_lock`, so that the failure shows as a message, not a hang.
            let _ = self.1.send(self.0.try_lock().is_ok());
        }
    }
    with_timeout(10, || {
        let r = start_loop();
        let (took_tx, took_rx) = mpsc::channel();
        let (polled_tx, polled_rx) = mpsc::channel();
        let streams = Arc::new(Mutex::new(None));
        // The connection is polled first: it leaves its waker where the stream finds it.
        let (s, p) = (streams.clone(), polled_tx.clone());
        r.handle
            .spawn(async move {
                let _connection = Connection(s.clone(), took_tx);
                poll_fn(|cx| {
                    *s.lock().unwrap() = Some(cx.waker().clone());
                    let _ = p.send(());
                    Poll::<()>::Pending
                })
                .await
            })
            .unwrap()
            .detach();
        recv(&polled_rx, secs(2), "the connection's first poll");
        r.handle
            .spawn(async move {
                let _stream = Stream(streams);
                let _ = polled_tx.send(());
                std::future::pending::<()>().await
            })
            .unwrap()
            .detach();
        recv(&polled_rx, secs(2), "the stream's first poll");
        r.shutdown(secs(3));
        assert!(
            recv(&took_rx, secs(1), "the connection's destructor"),
            "the connection's destructor ran inside the stream's wake, with the lock held"
        );
    });
}

#[test]
fn spawned_futures_are_dropped_on_the_loop_thread_at_termination() {
    with_timeout(5, || {
        let r = start_loop();
        let (drop_tx, drop_rx) = mpsc::channel();
        let (polled_tx, polled_rx) = mpsc::channel();

        // A Send future, spawned from this thread and detached, pending forever.
        let guard = DropOnThread(drop_tx.clone(), "send-detached");
        let p = polled_tx.clone();
        r.handle
            .spawn(async move {
                let _guard = guard;
                p.send(()).unwrap();
                std::future::pending::<()>().await
            })
            .unwrap()
            .detach();
        // A !Send future, spawned on the loop.
        let (d, p) = (drop_tx.clone(), polled_tx.clone());
        r.handle
            .execute(move || {
                let guard = Rc::new(DropOnThread(d, "local"));
                EventLoopHandle::current()
                    .unwrap()
                    .spawn_local(async move {
                        let _guard = guard;
                        p.send(()).unwrap();
                        std::future::pending::<()>().await
                    })
                    .unwrap()
                    .detach();
            })
            .unwrap();
        // A future whose task this thread cancels by dropping it.
        let guard = DropOnThread(drop_tx.clone(), "cancelled");
        let cancelled = r
            .handle
            .spawn(async move {
                let _guard = guard;
                polled_tx.send(()).unwrap();
                std::future::pending::<()>().await
            })
            .unwrap();
        for _ in 0..3 {
            recv(&polled_rx, secs(2), "the futures' first polls");
        }
        drop(cancelled);
        let (what, on) = recv(&drop_rx, secs(2), "the cancelled future to be dropped");
        assert_eq!(
            (what, on),
            ("cancelled", r.thread_id),
            "a cancelled future is dropped on the loop thread"
        );
        // One spawned just before shutdown, possibly never polled.
        let guard = DropOnThread(drop_tx, "late");
        r.handle
            .spawn(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            })
            .unwrap()
            .detach();
        let loop_thread = r.thread_id;
        r.shutdown(secs(2));
        let mut dropped: Vec<_> = (0..3)
            .map(|_| recv(&drop_rx, secs(1), "a future to be dropped"))
            .collect();
        dropped.sort_by_key(|(what, _)| *what);
        for (what, on) in &dropped {
            assert_eq!(*on, loop_thread, "the {what} future was dropped off the loop thread");
        }
        assert_eq!(
            dropped.iter().map(|d| d.0).collect::<Vec<_>>(),
            ["late", "local", "send-detached"]
        );
    });
}

#[test]
fn metrics_counters_move_as_expected() {
    with_timeout(5, || {
        // Driven step by step from this thread, so every number is exact.
        let mut el = EventLoop::new().unwrap();
        let h = el.handle();
        let m = h.metrics();
        assert_eq!(m.state, LoopState::NotStarted);
        assert_eq!(
            (m.iterations, m.tasks_run, m.pending_tasks, m.wakeups_sent),
            (0, 0, 0, 0)
        );
        assert_eq!(m.utilization, 0.0);

        for _ in 0..10 {
            h.execute(|| {}).unwrap();
        }
        h.lazy_execute(|| {}).unwrap();
        let m = h.metrics();
        assert_eq!(m.pending_tasks, 11, "queued submissions are pending");
        assert_eq!(m.wakeups_sent, 0, "a loop that is not blocked is never woken");
        assert_eq!(
            m.wakeups_suppressed, 10,
            "each execute found it awake (lazy ones do not count)"
        );

        el.run_once(Some(Duration::ZERO)).unwrap();
        let m = h.metrics();
        assert_eq!(m.state, LoopState::Started);
        assert_eq!((m.iterations, m.tasks_run, m.pending_tasks), (1, 11, 0));

        // Scheduled tasks.
        let a = h.schedule(secs(3600), || {}).unwrap();
        let _b = h.schedule(secs(3600), || {}).unwrap();
        let _c = h.schedule_at_fixed_rate(secs(3600), secs(1), || {}).unwrap();
        el.run_once(Some(Duration::ZERO)).unwrap();
        assert_eq!(h.metrics().scheduled_tasks, 3);
        assert!(a.cancel());
        el.run_once(Some(Duration::ZERO)).unwrap();
        assert_eq!(
            h.metrics().scheduled_tasks,
            2,
            "a cancel removes the task from the heap"
        );

        // Live futures.
        let task = h.spawn(std::future::pending::<()>()).unwrap();
        let before = h.metrics().tasks_run;
        el.run_once(Some(Duration::ZERO)).unwrap();
        let m = h.metrics();
        assert_eq!(m.live_tasks, 1);
        assert_eq!(m.tasks_run, before + 1, "one poll is one task run");
        drop(task);
        el.run_once(Some(Duration::ZERO)).unwrap();
        assert_eq!(h.metrics().live_tasks, 0, "a cancelled future is no longer live");

        // Tail tasks count as tasks run.
        let before = h.metrics().tasks_run;
        h.execute_after_iteration(|| {}).unwrap();
        el.run_once(Some(Duration::ZERO)).unwrap();
        assert_eq!(h.metrics().tasks_run, before + 1);

        // I/O events and registrations.
        let (a, mut b) = UnixStream::pair().unwrap();
        let a = h.register(a, Interest::READABLE).unwrap();
        assert_eq!(h.metrics().registrations, 1);
        let io_before = h.metrics().io_events;
        b.write_all(b"x").unwrap();
        el.run_once(Some(secs(2))).unwrap();
        assert!(h.metrics().io_events > io_before, "a readiness event is counted");
        drop(a);
        assert_eq!(h.metrics().registrations, 0);

        let m = h.metrics();
        assert_eq!(m.wakeups_received, 0, "nobody ever had to wake this loop");
        assert!((0.0..=1.0).contains(&m.utilization), "{m:?}");

        let _term = h.shutdown_gracefully_with(Duration::ZERO, secs(1)).unwrap();
        // Drive until terminated (one iteration would do; run_once never blocks here).
        for _ in 0..10 {
            if el.run_once(Some(ms(10))).unwrap() == LoopState::Terminated {
                break;
            }
        }
        let m = h.metrics();
        assert_eq!(m.state, LoopState::Terminated);
        assert_eq!(
            (m.pending_tasks, m.scheduled_tasks, m.live_tasks, m.registrations),
            (0, 0, 0, 0),
            "{m:?}"
        );
    });
}

#[test]
fn metrics_remote_submissions_wake_a_blocked_loop_once_and_are_suppressed_while_it_runs() {
    with_timeout(5, || {
        let r = start_loop();
        let h = r.handle.clone();
        wait_until_blocked(r.tid);
        let m0 = h.metrics();
        // Blocked: the first execute writes the eventfd.
        let latch = Latch::new();
        let (started_tx, started_rx) = mpsc::channel();
        let l = latch.clone();
        h.execute(move || {
            started_tx.send(()).unwrap();
            assert!(l.wait(secs(3)));
        })
        .unwrap();
        recv(&started_rx, secs(2), "the blocking task to start");
        let blocking_since = Instant::now();
        let m1 = h.metrics();
        assert_eq!(m1.wakeups_sent, m0.wakeups_sent + 1, "one wake for a blocked loop");
        // Running a task: ten more submissions need no wake.
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..10 {
            let done = done.clone();
            h.execute(move || {
                done.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        let m2 = h.metrics();
        assert_eq!(m2.wakeups_sent, m1.wakeups_sent, "no wake while the loop is awake");
        assert_eq!(m2.wakeups_suppressed, m1.wakeups_suppressed + 10);
        // Keep the task blocking for 40 ms, ten ticks of the coarse clock busy time is
        // measured on where there is no time-stamp counter, so that the busy time it
        // adds is well above the clock's grain.
        while blocking_since.elapsed() < Duration::from_millis(40) {
            std::thread::yield_now();
        }
        latch.open();
        wait_until(secs(2), "the ten tasks to run", || done.load(SeqCst) == 10);
        wait_until_blocked(r.tid);
        let m3 = h.metrics();
        assert_eq!(
            m3.wakeups_received,
            m0.wakeups_received + 1,
            "one wakeup received in all"
        );
        assert!(m3.tasks_run >= m0.tasks_run + 11);
        assert!(m3.iterations > m0.iterations);
        // 40 ms or more of blocking, measured to within a tick (4 ms) at each end.
        assert!(
            m3.busy >= m0.busy + Duration::from_millis(30),
            "time spent in the blocking task counts as busy: {:?} then {:?}",
            m0.busy,
            m3.busy
        );
        r.shutdown(secs(1));
    });
}

/// Starts a loop with idle spins of `length`, waits until it blocks, then submits a
/// task from this thread (which wakes it) and, `gap` after that task has run (this
/// thread staying on the CPU meanwhile), a second one. Returns the loop's metrics
/// before and after.
fn submit_twice_to_a_blocked_loop(
    length: Duration,
    gap: Duration,
) -> (netloop_reactor::LoopMetrics, netloop_reactor::LoopMetrics) {
    let r = spawn_loop(EventLoop::builder().idle_spin(length).build().unwrap());
    let h = r.handle.clone();
    wait_until_blocked(r.tid);
    let before = h.metrics();
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    h.execute(move || tx.send(()).unwrap()).unwrap();
    recv(&rx, secs(2), "the first task");
    let ran = Instant::now();
    while ran.elapsed() < gap {
        std::hint::spin_loop();
    }
    h.execute(move || tx2.send(()).unwrap()).unwrap();
    recv(&rx, secs(2), "the second task");
    let after = h.metrics();
    r.shutdown(secs(1));
    (before, after)
}

#[test]
fn a_loop_that_took_work_from_its_inbox_spins_so_the_next_submission_needs_no_wake() {
    with_timeout(20, || {
        // The longest spin (1 ms) catches the second task if it comes while the loop
        // spins: not before the loop has finished the iteration that ran the first (it
        // then takes the second in that iteration), nor after the spin, or while this
        // thread is kept off the CPU (other tests run alongside). The gap before the
        // second submission steps through the spin's length until one attempt lands in
        // it. With spinning off, none ever does.
        type Attempt = (netloop_reactor::LoopMetrics, netloop_reactor::LoopMetrics);
        let caught = |(before, after): &Attempt| {
            after.wakeups_sent == before.wakeups_sent + 1
                && after.idle_spins_found_work == before.idle_spins_found_work + 1
        };
        let mut attempts: Vec<Attempt> = Vec::new();
        while attempts.len() < 40 && !attempts.last().is_some_and(caught) {
            let gap = netloop_reactor::MAX_IDLE_SPIN * (attempts.len() % 20) as u32 / 20;
            attempts.push(submit_twice_to_a_blocked_loop(netloop_reactor::MAX_IDLE_SPIN, gap));
        }
        assert!(
            attempts.last().is_some_and(caught),
            "in no attempt was the second submission caught by a spin without a wake: {:?}",
            attempts
                .iter()
                .map(|(b, a)| (
                    a.wakeups_sent - b.wakeups_sent,
                    a.idle_spins_found_work - b.idle_spins_found_work
                ))
                .collect::<Vec<_>>()
        );
    });
}

#[test]
fn a_zero_idle_spin_never_spins() {
    with_timeout(10, || {
        let (before, after) = submit_twice_to_a_blocked_loop(Duration::ZERO, Duration::from_micros(200));
        assert_eq!((after.idle_spins, after.idle_spins_found_work), (0, 0));
        assert!(after.wakeups_sent > before.wakeups_sent);
    });
}

// ---------------------------------------------------------------------------------
// Shutdown and tail-task wakeups (design §3 to 5).
// ---------------------------------------------------------------------------------

/// After `h`'s loop was asked to shut down, expects its `run()` (already called, on
/// thread `t`) to terminate within 2 s. On failure, wakes the loop once with an
/// unrelated `execute` (so its thread does not leak) and reports whether that was all
/// it needed.
fn expect_termination(h: &EventLoopHandle, t: thread::JoinHandle<Result<(), DriveError>>, what: &str) {
    if let Err(e) = h.await_termination(secs(2)) {
        let stuck = h.metrics();
        let _ = h.execute(|| {});
        let after_nudge = h.await_termination(secs(1));
        panic!(
            "{what}: run() did not terminate within 2 s ({e:?}); state {:?}, iterations published {}. \
             After one unrelated execute woke the loop, await_termination gave {after_nudge:?}: \
             the shutdown request's wake was lost and the loop blocked in select",
            stuck.state, stuck.iterations
        );
    }
    t.join().unwrap().unwrap();
}

#[test]
fn shutdown_requested_while_the_loop_is_between_iterations_is_not_lost() {
    with_timeout(6, || {
        // The loop has run (so next_wakeup is AWAKE) but is not inside an iteration when
        // shutdown is requested: between two run_once calls here, or, on a loop driven
        // by run(), in the instant between one iteration's shutdown check and the next
        // iteration's select.
        let el = EventLoop::new().unwrap();
        let h = el.handle();
        let (ready_tx, ready_rx) = mpsc::channel();
        let go = Latch::new();
        let g = go.clone();
        let t = thread::spawn(move || {
            let mut el = el;
            el.run_once(Some(Duration::ZERO)).unwrap();
            ready_tx.send(()).unwrap();
            assert!(g.wait(secs(3)));
            el.run()
        });
        recv(&ready_rx, secs(2), "the first iteration");
        let _term = h.shutdown_gracefully_with(Duration::ZERO, secs(1)).unwrap();
        go.open();
        expect_termination(&h, t, "shutdown requested between two iterations");
    });
}

#[test]
fn shutdown_of_a_lazily_started_loop_starts_it_and_terminates() {
    with_timeout(6, || {
        type Slot = Arc<Mutex<Option<EventLoop>>>;
        fn lazily_started() -> (
            EventLoopHandle,
            Slot,
            mpsc::Receiver<thread::JoinHandle<Result<(), DriveError>>>,
        ) {
            let el = EventLoop::new().unwrap();
            let h = el.handle();
            let slot: Slot = Arc::new(Mutex::new(Some(el)));
            let (tx, rx) = mpsc::channel();
            let s = slot.clone();
            let tx = Mutex::new(tx);
            assert!(h.set_lazy_starter(move || {
                if let Some(el) = s.lock().unwrap().take() {
                    let t = thread::spawn(move || {
                        let mut el = el;
                        el.run()
                    });
                    tx.lock().unwrap().send(t).unwrap();
                }
            }));
            (h, slot, rx)
        }

        // Sanity: the first task starts it.
        let (h, _slot, started) = lazily_started();
        assert_eq!(on_loop(&h, || 1), 1);
        let t = recv(&started, secs(1), "the lazy start");
        let _term = h.shutdown_gracefully_with(Duration::ZERO, secs(1)).unwrap();
        h.await_termination(secs(2)).unwrap();
        t.join().unwrap().unwrap();

        // Shut down before any task: Netty starts the thread so that it can terminate.
        let (h, slot, started) = lazily_started();
        let _term = h.shutdown_gracefully_with(Duration::ZERO, secs(1)).unwrap();
        let start = started.recv_timeout(secs(1));
        let terminated = h.await_termination(secs(1));
        let state = h.state();
        if start.is_err() {
            // Break the starter -> slot -> loop cycle so the loop is dropped.
            drop(slot.lock().unwrap().take());
        } else {
            let _ = h.execute(|| {});
        }
        assert!(
            start.is_ok(),
            "shutdown_gracefully on a lazily started loop that never got a task never invoked the lazy starter, \
             so the loop never runs and never terminates (await_termination: {terminated:?}); state {state:?}"
        );
        assert_eq!(
            terminated,
            Ok(()),
            "the lazily started loop was started by the shutdown but did not terminate"
        );
    });
}

/// Waits for `rx`; on timeout, wakes the loop with an unrelated execute and reports
/// whether the task then ran.
fn expect_tail_task(rx: &mpsc::Receiver<()>, h: &EventLoopHandle, what: &str) {
    if let Err(e) = rx.recv_timeout(secs(2)) {
        let _ = h.execute(|| {});
        let after_nudge = rx.recv_timeout(secs(1));
        panic!(
            "{what}: the tail task did not run within 2 s ({e:?}); after one unrelated execute woke the loop: \
             {after_nudge:?}. The loop blocked in select although a tail task was queued"
        );
    }
}

#[test]
fn tail_task_queued_by_a_tail_task_runs_without_another_wake() {
    with_timeout(6, || {
        let r = start_loop();
        let (tx, rx) = mpsc::channel();
        let h = r.handle.clone();
        r.handle
            .execute_after_iteration(move || {
                h.execute_after_iteration(move || tx.send(()).unwrap()).unwrap();
            })
            .unwrap();
        expect_tail_task(&rx, &r.handle, "tail task queued from a tail task");
        r.shutdown(secs(1));
    });
}

#[test]
fn tail_task_queued_from_block_on_runs() {
    with_timeout(6, || {
        let el = EventLoop::new().unwrap();
        let h = el.handle();
        let (tx, rx) = mpsc::channel();
        let h2 = h.clone();
        let driver = thread::spawn(move || {
            let mut el = el;
            el.block_on(async move {
                let (done_tx, done_rx) = futures::channel::oneshot::channel();
                h2.execute_after_iteration(move || done_tx.send(()).unwrap()).unwrap();
                done_rx.await.unwrap();
                tx.send(()).unwrap();
            })
        });
        expect_tail_task(&rx, &h, "tail task queued from block_on's future");
        driver.join().unwrap().unwrap();
    });
}

/// `spawn_pinned` builds a `!Send` future on the loop from a `Send` closure, from any
/// thread, and the future is created and dropped on the loop's thread.
#[test]
fn spawn_pinned_builds_a_local_future_on_the_loop() {
    with_timeout(5, || {
        let mut el = EventLoop::new().unwrap();
        let h = el.handle();
        let loop_thread = Arc::new(Mutex::new(None));
        let lt = loop_thread.clone();
        let task = std::thread::spawn(move || {
            h.spawn_pinned(move || {
                let rc = Rc::new(std::thread::current().id());
                async move {
                    std::future::ready(()).await;
                    *lt.lock().unwrap() = Some(*rc);
                    *rc
                }
            })
            .unwrap()
        })
        .join()
        .unwrap();
        let ran_on = el.block_on(task).unwrap();
        assert_eq!(
            ran_on,
            std::thread::current().id(),
            "built and run on the loop's thread"
        );
        assert_eq!(*loop_thread.lock().unwrap(), Some(std::thread::current().id()));
    });
}

/// A `spawn_pinned` builder that panics fails its task (the awaiter sees the panic),
/// the task is not polled again, and the loop goes on.
#[test]
fn spawn_pinned_with_a_panicking_builder_fails_its_task_and_the_loop_goes_on() {
    with_timeout(5, || {
        let mut el = EventLoop::new().unwrap();
        let h = el.handle();
        let mut task = h
            .spawn_pinned(|| -> std::future::Ready<u32> { panic!("no future today") })
            .unwrap();
        let outcome = el
            .block_on(poll_fn(move |cx| {
                match catch_unwind(AssertUnwindSafe(|| Pin::new(&mut task).poll(cx))) {
                    Ok(Poll::Pending) => Poll::Pending,
                    Ok(Poll::Ready(n)) => Poll::Ready(Ok(n)),
                    Err(payload) => Poll::Ready(Err(payload)),
                }
            }))
            .unwrap();
        let payload = outcome.expect_err("the builder's panic reaches the awaiter");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"no future today"));
        let next = h.spawn(async { 7 }).unwrap();
        assert_eq!(el.block_on(next).unwrap(), 7, "the loop goes on");
    });
}

/// Netty's I/O ratio: after an iteration that processed I/O, tasks may run for
/// `(100 - io_ratio) / io_ratio` times the time the I/O took; after one without I/O, a
/// pass stops at its 64th task. With `io_ratio(1)` the share is 99 times the I/O time,
/// which 200 trivial tasks fit in, so one iteration with an I/O event runs them all.
#[test]
fn io_ratio_gives_tasks_a_time_share_only_after_io() {
    with_timeout(10, || {
        let mut el = EventLoop::builder().io_ratio(1).build().unwrap();
        let h = el.handle();
        let ran = Arc::new(AtomicUsize::new(0));
        let queue_trivial_tasks = |n: usize| {
            for _ in 0..n {
                let ran = ran.clone();
                h.execute(move || {
                    ran.fetch_add(1, SeqCst);
                })
                .unwrap();
            }
        };

        // No I/O: one pass stops at the 64th task, and the rest wait for later passes.
        queue_trivial_tasks(200);
        el.run_once(Some(Duration::ZERO)).unwrap();
        assert_eq!(ran.load(SeqCst), 64, "a pass without I/O runs 64 tasks");
        while ran.load(SeqCst) < 200 {
            el.run_once(Some(Duration::ZERO)).unwrap();
        }

        // With an I/O event: the I/O is timed and the tasks get 99 times that. A pass
        // preempted by the OS for longer than its share stops early, so allow a few
        // attempts; without the share (the pass after no I/O) none would go past 64.
        let (a, mut b) = UnixStream::pair().unwrap();
        let a = Arc::new(h.register(a, Interest::READABLE).unwrap());
        let mut best = 0;
        for _ in 0..3 {
            let reader = a.clone();
            let reads = Arc::new(AtomicUsize::new(0));
            let counted = reads.clone();
            h.spawn(async move {
                let mut buf = [0u8; 8];
                poll_fn(|cx| reader.poll_read_io(cx, |mut s| s.read(&mut buf)))
                    .await
                    .unwrap();
                counted.fetch_add(1, SeqCst);
            })
            .unwrap()
            .detach();
            el.run_once(Some(Duration::ZERO)).unwrap();
            assert_eq!(reads.load(SeqCst), 0, "the reader waits for the event");
            b.write_all(b"x").unwrap();
            ran.store(0, SeqCst);
            queue_trivial_tasks(200);
            el.run_once(Some(Duration::from_secs(1))).unwrap();
            best = best.max(ran.load(SeqCst));
            while ran.load(SeqCst) < 200 || reads.load(SeqCst) == 0 {
                el.run_once(Some(Duration::ZERO)).unwrap();
            }
            if best == 200 {
                break;
            }
        }
        assert_eq!(best, 200, "after I/O, one pass runs every task within its share");
    });
}

#[test]
fn the_task_panic_hook_sees_each_panic_on_the_loop_thread_and_the_loop_goes_on() {
    let seen: Arc<Mutex<Vec<(String, thread::ThreadId)>>> = Arc::default();
    let record = seen.clone();
    let mut event_loop = EventLoopBuilder::new()
        .on_task_panic(move |payload| {
            let message = payload.downcast_ref::<&str>().copied().unwrap_or("?").to_string();
            record.lock().unwrap().push((message, thread::current().id()));
        })
        .build()
        .unwrap();
    let handle = event_loop.handle();
    let failed = handle.spawn(async { panic!("boom") }).unwrap().fallible();
    let fine = handle.spawn(async { 7 }).unwrap();
    let (failed, fine) = event_loop
        .block_on(async move {
            // Both tasks run in spawn order: once `fine` is done, `failed` is too.
            let fine = fine.await;
            let failed = catch_unwind(AssertUnwindSafe(|| futures_lite_block(failed)));
            (failed.is_err(), fine)
        })
        .unwrap();
    assert!(failed, "the handle still resumes the panic");
    assert_eq!(fine, 7, "the loop went on");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0], ("boom".to_string(), thread::current().id()));
}

/// Polls `f` to completion on this thread; `f` must be ready without waiting.
fn futures_lite_block<F: Future + Unpin>(mut f: F) -> F::Output {
    let mut cx = Context::from_waker(std::task::Waker::noop());
    match Pin::new(&mut f).poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("expected a finished task"),
    }
}

/// A loop driven by `block_on` counts the time it is driven as busy even if it never
/// goes idle (tokio's current-thread `worker_total_busy_duration`), and not the time
/// between two drives.
#[test]
fn busy_time_counts_a_block_on_that_never_idles_and_not_the_gaps_between_drives() {
    with_timeout(10, || {
        let mut el = EventLoop::new().unwrap();
        let h = el.handle();
        // 40 ms of work with a task always queued: the loop never blocks in `select`.
        el.block_on(async {
            let started = Instant::now();
            while started.elapsed() < ms(40) {
                yield_once().await;
            }
        })
        .unwrap();
        let busy = h.metrics().busy;
        // Measured to within a tick (4 ms) of the coarse clock at each end.
        assert!(busy >= ms(30), "the driven time is busy: {busy:?}");
        // Not driven for 200 ms: none of it is busy.
        thread::sleep(ms(200));
        el.block_on(async {}).unwrap();
        let after = h.metrics().busy;
        assert!(after < busy + ms(100), "the gap was counted: {busy:?} then {after:?}");
    });
}

/// Pending once, waking itself: a task that stays runnable.
async fn yield_once() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}
