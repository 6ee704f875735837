//! Loom models of the semaphore: acquires racing releases, cancellations and close, with
//! every permit accounted for.

use super::*;
use crate::loom::sync::Arc;
use loom::thread;

/// Polls `fut` on this loom thread, parking between wakes (loom's `future`
/// module is behind a feature the workspace does not enable).
fn block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park();
    }
}

#[test]
fn acquire_release_with_a_cancelled_waiter() {
    loom::model(|| {
        let s = Arc::new(Semaphore::new(1));
        let t = spawn_acquire_release(&s);
        // A waiter for 2 that is queued (or served partly) and then dropped.
        {
            let mut w = s.acquire(2);
            poll_once(&mut w);
        }
        block_on(s.acquire(1)).unwrap();
        s.release(1);
        t.join().unwrap();
        assert_eq!(s.available_permits(), 1);
        assert_eq!(s.permits.load(AcquireOrd) & QUEUED, 0);
    });
}

#[test]
fn two_waiters_served_in_turn() {
    loom::model(|| {
        let s = Arc::new(Semaphore::new(0));
        let t = spawn_acquire_release(&s);
        s.release(1);
        block_on(s.acquire(1)).unwrap();
        s.release(1);
        t.join().unwrap();
        assert_eq!(s.available_permits(), 1);
    });
}

#[test]
fn close_while_waiting() {
    loom::model(|| {
        let s = Arc::new(Semaphore::new(0));
        let s2 = s.clone();
        let t = thread::spawn(move || {
            let _ = block_on(s2.acquire(1));
        });
        s.release(1);
        s.close();
        t.join().unwrap();
        // Either the waiter got the permit and kept it, or it is free.
        assert!(s.available_permits() <= 1);
        assert_eq!(s.permits.load(AcquireOrd) & QUEUED, 0);
    });
}

#[test]
fn partial_assignment_then_cancel_conserves_permits() {
    loom::model(|| {
        let s = Arc::new(Semaphore::new(0));
        let s2 = s.clone();
        // Releases while the waiter may be queued: it is then partly served.
        let t = thread::spawn(move || s2.release(1));
        let mut w = s.acquire(2);
        poll_once(&mut w);
        poll_once(&mut w);
        drop(w);
        t.join().unwrap();
        assert_eq!(s.available_permits(), 1);
        assert_eq!(s.permits.load(AcquireOrd) & QUEUED, 0);
    });
}

/// Polls `fut` once with a waker that does nothing, ignoring the outcome.
fn poll_once<F: Future + Unpin>(fut: &mut F) {
    let _ = Pin::new(fut).poll(&mut Context::from_waker(Waker::noop()));
}

/// A thread that takes one permit of `s`, waiting if need be, and gives it back.
fn spawn_acquire_release(s: &Arc<Semaphore>) -> thread::JoinHandle<()> {
    let s = s.clone();
    thread::spawn(move || {
        block_on(s.acquire(1)).unwrap();
        s.release(1);
    })
}
