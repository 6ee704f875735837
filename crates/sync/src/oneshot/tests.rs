//! Unit tests of the channel: values and errors, the waker a poll leaves, close, and its
//! auto traits.

use super::*;
use futures::FutureExt;

#[test]
fn value_and_errors() {
    let (tx, mut rx) = channel::<String>();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert!(rx.is_empty());
    tx.send("hi".into()).unwrap();
    assert!(!rx.is_empty());
    assert_eq!(rx.try_recv().as_deref(), Ok("hi"));
    assert!(rx.is_terminated());
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));

    let (tx, rx) = channel::<u8>();
    drop(tx);
    assert_eq!(rx.now_or_never(), Some(Err(RecvError(()))));

    let (tx, mut rx) = channel::<u8>();
    rx.close();
    assert!(tx.is_closed());
    assert_eq!(tx.send(7), Err(7));
}

#[test]
fn a_value_unreceived_is_dropped_with_the_receiver() {
    let v = std::sync::Arc::new(());
    let (tx, rx) = channel();
    tx.send(v.clone()).unwrap();
    drop(rx);
    assert_eq!(std::sync::Arc::strong_count(&v), 1);
}

/// A waker that counts its wakes.
struct Count(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Count {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

fn counting_waker() -> (std::sync::Arc<Count>, Waker) {
    let count = std::sync::Arc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
    (count.clone(), Waker::from(count))
}

fn wakes(count: &Count) -> usize {
    count.0.load(std::sync::atomic::Ordering::SeqCst)
}

#[test]
fn a_second_poll_with_another_waker_replaces_the_first() {
    let (a, wa) = counting_waker();
    let (b, wb) = counting_waker();
    let (tx, mut rx) = channel::<u8>();
    assert!(Pin::new(&mut rx).poll(&mut Context::from_waker(&wa)).is_pending());
    assert!(Pin::new(&mut rx).poll(&mut Context::from_waker(&wa)).is_pending());
    assert!(Pin::new(&mut rx).poll(&mut Context::from_waker(&wb)).is_pending());
    tx.send(4).unwrap();
    assert_eq!((wakes(&a), wakes(&b)), (0, 1));
    let got = Pin::new(&mut rx).poll(&mut Context::from_waker(&wb));
    assert_eq!(got, Poll::Ready(Ok(4)));
    drop(rx);
    // Only the test's handles are left: the channel dropped the wakers it kept.
    assert_eq!(
        (std::sync::Arc::strong_count(&a), std::sync::Arc::strong_count(&b)),
        (2, 2)
    );

    let (_, wc) = counting_waker();
    let (tx, mut rx) = channel::<u8>();
    assert!(Pin::new(&mut rx).poll(&mut Context::from_waker(&wc)).is_pending());
    drop(tx);
    assert_eq!(wakes(&b), 1);
    let got = Pin::new(&mut rx).poll(&mut Context::from_waker(&wb));
    assert_eq!(got, Poll::Ready(Err(RecvError(()))));
}

#[test]
fn closed_wakes_the_last_waker_and_the_value_comes_back() {
    let (a, wa) = counting_waker();
    let (b, wb) = counting_waker();
    let (mut tx, mut rx) = channel::<String>();
    assert!(tx.poll_closed(&mut Context::from_waker(&wa)).is_pending());
    assert!(tx.poll_closed(&mut Context::from_waker(&wb)).is_pending());
    assert!(!tx.is_closed());
    rx.close();
    assert_eq!((wakes(&a), wakes(&b)), (0, 1));
    assert!(tx.poll_closed(&mut Context::from_waker(&wa)).is_ready());
    assert_eq!(tx.send("back".into()), Err("back".to_string()));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn a_value_sent_before_close_stays_receivable() {
    let (tx, mut rx) = channel::<Box<u8>>();
    tx.send(Box::new(1)).unwrap();
    rx.close();
    assert!(!rx.is_empty());
    assert_eq!(rx.now_or_never(), Some(Ok(Box::new(1))));

    let (tx, mut rx) = channel::<Box<u8>>();
    tx.send(Box::new(2)).unwrap();
    rx.close();
    drop(rx);
}

#[test]
fn debug_output() {
    let (tx, mut rx) = channel::<u8>();
    assert_eq!(format!("{tx:?}"), "Sender { is_closed: false, .. }");
    assert_eq!(
        format!("{rx:?}"),
        "Receiver { is_terminated: false, sender_done: false, closed: false }"
    );
    rx.close();
    drop(tx);
    assert_eq!(
        format!("{rx:?}"),
        "Receiver { is_terminated: false, sender_done: true, closed: true }"
    );
    let _ = rx.try_recv();
    assert_eq!(
        format!("{rx:?}"),
        "Receiver { is_terminated: true, sender_done: false, closed: false }"
    );
}

#[test]
fn auto_traits() {
    fn check<T: Send + Sync + Unpin>() {}
    check::<Sender<u8>>();
    check::<Receiver<u8>>();
    check::<Sender<std::cell::Cell<u8>>>();
    check::<Receiver<std::cell::Cell<u8>>>();
}

/// Unwind-safe as tokio's, except with tokio's `tracing`: then both ends hold
/// `tracing` spans, which are not, on tokio either.
#[test]
#[cfg(not(all(tokio_unstable, feature = "tracing")))]
fn unwind_safe() {
    fn check<T: UnwindSafe + RefUnwindSafe>() {}
    check::<Sender<u8>>();
    check::<Receiver<u8>>();
    check::<Sender<std::cell::Cell<u8>>>();
    check::<Receiver<std::cell::Cell<u8>>>();
}
