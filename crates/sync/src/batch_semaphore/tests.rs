//! Unit tests of the semaphore: partial assignment in arrival order, a dropped waiter's
//! share returned, close.

use super::*;
use std::task::Waker;

fn poll(f: &mut Acquire<'_>) -> Poll<Result<(), AcquireError>> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn partial_assignment_and_fifo() {
    let s = Semaphore::new(2);
    let mut big = s.acquire(5);
    assert!(poll(&mut big).is_pending());
    assert_eq!(s.available_permits(), 0);
    let mut small = s.acquire(1);
    assert!(poll(&mut small).is_pending());
    s.release(2);
    assert!(poll(&mut big).is_pending(), "4 of 5");
    assert!(poll(&mut small).is_pending(), "the big one is first");
    s.release(2);
    assert!(matches!(poll(&mut big), Poll::Ready(Ok(()))));
    assert!(matches!(poll(&mut small), Poll::Ready(Ok(()))));
    assert_eq!(s.available_permits(), 0);
    s.release(6);
    assert_eq!(s.available_permits(), 6);
}

#[test]
fn dropping_a_waiter_returns_its_share() {
    let s = Semaphore::new(3);
    let mut big = s.acquire(5);
    assert!(poll(&mut big).is_pending());
    let mut small = s.acquire(2);
    assert!(poll(&mut small).is_pending());
    drop(big);
    assert!(matches!(poll(&mut small), Poll::Ready(Ok(()))));
    assert_eq!(s.available_permits(), 1);
    // A served but never polled future gives back everything.
    let mut w = s.acquire(2);
    assert!(poll(&mut w).is_pending());
    s.release(2);
    drop(w);
    assert_eq!(s.available_permits(), 3);
}

#[test]
fn close_fails_waiters_and_keeps_count() {
    let s = Semaphore::new(1);
    let mut w = s.acquire(3);
    assert!(poll(&mut w).is_pending());
    s.close();
    assert!(matches!(poll(&mut w), Poll::Ready(Err(_))));
    drop(w);
    assert_eq!(s.available_permits(), 1);
    assert_eq!(s.try_acquire(1), Err(TryAcquireError::Closed));
    s.release(2);
    assert_eq!(s.available_permits(), 3);
    assert_eq!(s.forget_permits(5), 3);
    assert!(s.is_closed());
}
