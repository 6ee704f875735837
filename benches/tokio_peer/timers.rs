//! Tokio peers of shape (c): `tokio::time::sleep(1 h)` registered by one poll, then
//! dropped (which cancels it).

use std::future::Future;
use std::hint::black_box;
use std::pin::{Pin, pin};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use netloop_benches::TIMER_DELAY;
use tokio::runtime::{Builder, Runtime};
use tokio::time::Sleep;

/// A current-thread runtime with the timer enabled.
pub fn current_thread() -> Runtime {
    Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime")
}

/// `n` times: create a sleep, poll it once (registering it with the timer), drop it.
pub fn sleep_poll_drop_each(rt: &Runtime, n: usize) -> Duration {
    rt.block_on(async move {
        let mut cx = Context::from_waker(Waker::noop());
        let start = Instant::now();
        for _ in 0..n {
            let mut sleep = pin!(tokio::time::sleep(TIMER_DELAY));
            black_box(sleep.as_mut().poll(&mut cx).is_pending());
        }
        start.elapsed()
    })
}

/// Create and poll `n` sleeps (boxed, kept in a vector allocated before the clock
/// starts), then drop them all in creation order.
pub fn sleep_poll_all_then_drop(rt: &Runtime, n: usize) -> Duration {
    rt.block_on(async move {
        let mut cx = Context::from_waker(Waker::noop());
        let mut sleeps: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(n);
        let start = Instant::now();
        for _ in 0..n {
            let mut sleep = Box::pin(tokio::time::sleep(TIMER_DELAY));
            black_box(sleep.as_mut().poll(&mut cx).is_pending());
            sleeps.push(sleep);
        }
        sleeps.drain(..).for_each(drop);
        start.elapsed()
    })
}
