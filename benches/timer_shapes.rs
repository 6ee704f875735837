// The timer workloads of `examples/timers_report.rs`, written once against a runtime
// named `rt` and included into one module per runtime (`use netloop as rt;`,
// `use tokio as rt;`), so both runtimes run the same source.
//
// Every shape runs in a task spawned from `block_on` of a runtime built by the caller,
// and polls its sleeps with that task's waker, as a program's sleeps are polled; it
// returns the time it took, measured inside the task (runtime start-up and the spawn
// are not counted).

use std::future::{Future, poll_fn};
use std::hint::black_box;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rt::time::{Instant, Sleep};

/// A timer that is never meant to fire during a run.
const FAR: Duration = Duration::from_secs(3600);
/// The idle timeout of the reset shape.
const IDLE: Duration = Duration::from_secs(60);

/// A current-thread runtime with time enabled: each shape's timers live on one thread.
pub fn current_thread() -> rt::runtime::Runtime {
    rt::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("build a current-thread runtime")
}

/// A multi-thread runtime with 2 workers and time enabled.
pub fn two_workers() -> rt::runtime::Runtime {
    rt::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("build a multi-thread runtime")
}

/// Where a shape's sleeps are created and polled.
#[derive(Clone, Copy)]
pub enum Place {
    /// In a task spawned from `block_on`, with the task's own waker.
    Task,
    /// In the body of `block_on` itself, with its waker: where `#[main]`'s own code runs.
    BlockOn,
}

/// Runs `shape` at `place` of `rt`, with the waker of whatever polls it there.
fn run_at<F, S>(rt: &rt::runtime::Runtime, place: Place, shape: S) -> Duration
where
    S: FnOnce(Waker) -> F + Send + 'static,
    F: Future<Output = Duration> + Send + 'static,
{
    rt.block_on(async move {
        let shape = async move {
            let waker = poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
            shape(waker).await
        };
        match place {
            Place::Task => rt::spawn(shape).await.expect("a timer shape panicked"),
            Place::BlockOn => shape.await,
        }
    })
}

/// Runs `shape` in a task of `rt`, with the task's own waker.
fn in_task<F, S>(rt: &rt::runtime::Runtime, shape: S) -> Duration
where
    S: FnOnce(Waker) -> F + Send + 'static,
    F: Future<Output = Duration> + Send + 'static,
{
    run_at(rt, Place::Task, shape)
}

/// The order in which the reset shape visits its connections.
#[derive(Clone, Copy)]
pub enum Order {
    /// In the order their timeouts were created (a prefetcher's best case).
    Created,
    /// Scattered, as requests arrive on a server's connections: a stride of 7,919
    /// (a prime) through the connections, which visits each once per round.
    Scattered,
}

impl Order {
    /// The `i`th connection visited, of `n`.
    fn nth(self, i: usize, n: usize) -> usize {
        match self {
            Order::Created => i,
            Order::Scattered => (i * 7919) % n,
        }
    }
}

/// `n` times: create a one-hour sleep, poll it once (registering it), drop it
/// (cancelling it).
pub fn sleep_poll_drop_each(rt: &rt::runtime::Runtime, n: usize) -> Duration {
    sleep_poll_drop_each_at(rt, Place::Task, n)
}

/// [`sleep_poll_drop_each`] at `place`.
pub fn sleep_poll_drop_each_at(rt: &rt::runtime::Runtime, place: Place, n: usize) -> Duration {
    run_at(rt, place, move |waker| async move {
        let mut cx = Context::from_waker(&waker);
        let start = std::time::Instant::now();
        for _ in 0..n {
            let mut sleep = pin!(rt::time::sleep(FAR));
            black_box(sleep.as_mut().poll(&mut cx).is_pending());
        }
        start.elapsed()
    })
}

/// Creates and polls `n` boxed one-hour sleeps (1M pending timers), then drops them all
/// in creation order. The vector is allocated before the clock starts.
pub fn sleep_poll_all_then_drop(rt: &rt::runtime::Runtime, n: usize) -> Duration {
    in_task(rt, move |waker| async move {
        let mut cx = Context::from_waker(&waker);
        let mut sleeps: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(n);
        let start = std::time::Instant::now();
        for _ in 0..n {
            let mut sleep = Box::pin(rt::time::sleep(FAR));
            black_box(sleep.as_mut().poll(&mut cx).is_pending());
            sleeps.push(sleep);
        }
        sleeps.drain(..).for_each(drop);
        start.elapsed()
    })
}

/// Distinct whole seconds over which [`spread_sleeps_poll_all_then_drop_at`] spreads
/// its deadlines.
pub const SPREAD_SECONDS: u64 = 1_000;

/// Creates `n` boxed sleeps whose deadlines are spread over [`SPREAD_SECONDS`]
/// distinct seconds (1 s to 1,000 s from now, round-robin), polls each once, all in
/// one poll of whatever runs at `place`, then drops them all in creation order: the
/// timers of a server's many connections, each with its own deadline.
pub fn spread_sleeps_poll_all_then_drop_at(rt: &rt::runtime::Runtime, place: Place, n: usize) -> Duration {
    run_at(rt, place, move |waker| async move {
        let mut cx = Context::from_waker(&waker);
        let mut sleeps: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(n);
        let start = std::time::Instant::now();
        let now = Instant::now();
        for i in 0..n {
            let deadline = now + Duration::from_secs(1 + i as u64 % SPREAD_SECONDS);
            let mut sleep = Box::pin(rt::time::sleep_until(deadline));
            black_box(sleep.as_mut().poll(&mut cx).is_pending());
            sleeps.push(sleep);
        }
        sleeps.drain(..).for_each(drop);
        start.elapsed()
    })
}

/// `conns` connections' idle timeouts: each a 60 s sleep, registered by a poll; then
/// `resets` rounds in which every connection sees a request, so its timeout is reset
/// to 60 s from now and polled again; then every connection closes (its sleep is
/// dropped). One clock reading per round; connections visited in `order`.
pub fn idle_timeouts_reset(rt: &rt::runtime::Runtime, conns: usize, resets: usize, order: Order) -> Duration {
    idle_timeouts_reset_at(rt, Place::Task, conns, resets, order)
}

/// [`idle_timeouts_reset`] at `place`.
pub fn idle_timeouts_reset_at(
    rt: &rt::runtime::Runtime,
    place: Place,
    conns: usize,
    resets: usize,
    order: Order,
) -> Duration {
    run_at(rt, place, move |waker| async move {
        let mut cx = Context::from_waker(&waker);
        let mut timeouts: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(conns);
        let start = std::time::Instant::now();
        for _ in 0..conns {
            let mut sleep = Box::pin(rt::time::sleep(IDLE));
            black_box(sleep.as_mut().poll(&mut cx).is_pending());
            timeouts.push(sleep);
        }
        for _ in 0..resets {
            let deadline = Instant::now() + IDLE;
            for i in 0..conns {
                let sleep = &mut timeouts[order.nth(i, conns)];
                sleep.as_mut().reset(deadline);
                black_box(sleep.as_mut().poll(&mut cx).is_pending());
            }
        }
        timeouts.drain(..).for_each(drop);
        start.elapsed()
    })
}

/// How late timers fired: nanoseconds per timer, and how many fired early.
pub struct Lateness {
    pub late_nanos: Vec<u64>,
    pub early: usize,
    pub took: Duration,
}

/// `n` timers with deadlines spread evenly over `span`, each awaited by a task of its
/// own (spawned in batches); each task records how long after its deadline it woke.
pub fn firing(rt: &rt::runtime::Runtime, n: usize, span: Duration) -> Lateness {
    let early = Arc::new(AtomicU64::new(0));
    let early2 = early.clone();
    rt.block_on(async move {
        let start = std::time::Instant::now();
        // Deadlines start a little after the spawning ends, so no timer is already
        // due when its task first polls it.
        let first = Instant::now() + Duration::from_secs(2);
        let step = span / n as u32;
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let deadline = first + step * i as u32;
            let early = early2.clone();
            handles.push(rt::spawn(async move {
                rt::time::sleep_until(deadline).await;
                let now = Instant::now();
                if now < deadline {
                    early.fetch_add(1, Relaxed);
                }
                now.saturating_duration_since(deadline).as_nanos() as u64
            }));
        }
        let mut late_nanos = Vec::with_capacity(n);
        for h in handles {
            late_nanos.push(h.await.expect("a timer task panicked"));
        }
        Lateness {
            late_nanos,
            early: early.load(Relaxed) as usize,
            took: start.elapsed(),
        }
    })
}

/// The floors of the shapes above: the same loops doing only what any runtime's timer
/// must (the clock read that fixes a sleep's deadline, the boxed future of a runtime's
/// `Sleep` size, a write per reset), with no timer at all. What a runtime measures
/// above this is its timer's own cost.
pub mod floor {
    use super::*;

    /// A future's box of `rt::time::Sleep`'s size.
    type SleepSized = [u8; std::mem::size_of::<Sleep>()];

    pub fn each(n: usize) -> Duration {
        let start = std::time::Instant::now();
        for _ in 0..n {
            black_box(Instant::now() + FAR);
        }
        start.elapsed()
    }

    pub fn all_then_drop(n: usize) -> Duration {
        let mut boxes: Vec<Box<(Instant, SleepSized)>> = Vec::with_capacity(n);
        let start = std::time::Instant::now();
        for _ in 0..n {
            boxes.push(black_box(Box::new((Instant::now() + FAR, [0; std::mem::size_of::<Sleep>()]))));
        }
        boxes.drain(..).for_each(drop);
        start.elapsed()
    }

    pub fn idle_timeouts_reset(conns: usize, resets: usize, order: Order) -> Duration {
        let mut timeouts: Vec<Box<(Instant, SleepSized)>> = Vec::with_capacity(conns);
        let start = std::time::Instant::now();
        for _ in 0..conns {
            timeouts.push(black_box(Box::new((Instant::now() + IDLE, [0; std::mem::size_of::<Sleep>()]))));
        }
        for _ in 0..resets {
            let deadline = Instant::now() + IDLE;
            for i in 0..conns {
                let t = &mut timeouts[order.nth(i, conns)];
                black_box(&mut **t).0 = deadline;
            }
        }
        timeouts.drain(..).for_each(drop);
        start.elapsed()
    }
}
