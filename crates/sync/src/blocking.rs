//! Waiting for a future on a thread that is not a loop's: the `blocking_*` calls.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Runs `future` to completion on this thread, parking it between wakes.
///
/// # Panics
///
/// On a loop's thread or inside a runtime's `block_on`, with tokio's message: the
/// thread would stop driving the tasks that could complete `future`.
#[track_caller]
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    if !netloop_reactor::may_block() {
        panic!(
            "Cannot block the current thread from within a runtime. This happens because a function attempted \
             to block the current thread while the thread is being used to drive asynchronous tasks."
        );
    }
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park();
    }
}
