//! tokio's `test-util` clock control: `pause`, `resume`, `advance`.
//!
//! Only on a current-thread runtime, whose single loop is driven by the thread in
//! `block_on`: a paused clock stands still, and when the loop has nothing to do it
//! jumps straight to the next timer, so tests of long timeouts run instantly.

use std::future::poll_fn;
use std::task::Poll;
use std::time::Duration;

use netloop_reactor::EventLoopHandle;

use crate::context;
use crate::runtime::flavor::RuntimeFlavor;

#[track_caller]
fn current_loop(what: &str) -> EventLoopHandle {
    let flavor = context::with_current(|rt| rt.map(|rt| rt.flavor));
    match (EventLoopHandle::current(), flavor) {
        (Some(l), Some(RuntimeFlavor::CurrentThread)) => l,
        _ => panic!("`time::{what}()` requires a `current_thread` netloop runtime, called from inside it"),
    }
}

/// Freezes time. Panics if it is already frozen or outside a current-thread runtime.
#[track_caller]
pub fn pause() {
    // A `panic!` in a closure would report the closure's location, not the caller's.
    if let Err(e) = current_loop("pause").clock().pause() {
        panic!("{e}");
    }
}

/// Lets frozen time run again from where it stands. Panics if it is not frozen.
#[track_caller]
pub fn resume() {
    if let Err(e) = current_loop("resume").clock().resume() {
        panic!("{e}");
    }
}

/// Moves frozen time forward by `duration`, then returns once every timer due by then
/// has fired (and the tasks it woke were queued ahead of this one).
#[track_caller]
#[expect(
    clippy::redundant_async_block,
    reason = "the async block makes the future !Unpin, as tokio's"
)]
pub fn advance(duration: Duration) -> impl std::future::Future<Output = ()> {
    let event_loop = current_loop("advance");
    if let Err(e) = event_loop.clock().advance(duration) {
        panic!("{e}");
    }
    let now = event_loop.clock().now_instant();
    let mut registered = false;
    let wait = poll_fn(move |cx| {
        if registered {
            return Poll::Ready(());
        }
        registered = true;
        // A wake at "now" sorts after every timer due by now, so they fire first.
        match event_loop.schedule_wake(now, cx.waker().clone()) {
            Ok(_) => Poll::Pending,
            Err(_) => Poll::Ready(()),
        }
    });
    // An async block, so that the future is `!Unpin` as tokio's (an `async fn`) is.
    async move { wait.await }
}
