//! Loom models of the channel's state word: a send racing a receive, a close and either
//! half's drop, and a waker replaced while a send or close wakes it.

use super::*;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::SeqCst;
use loom::future::block_on;
use loom::thread;

/// A waker that counts its wakes (in a loom atomic, so the models see them).
struct Count(AtomicUsize);

impl std::task::Wake for Count {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counting_waker() -> (std::sync::Arc<Count>, Waker) {
    let count = std::sync::Arc::new(Count(AtomicUsize::new(0)));
    (count.clone(), Waker::from(count))
}

/// send racing recv: the receiver gets the value.
#[test]
fn send_vs_recv() {
    loom::model(|| {
        let (tx, rx) = channel::<u32>();
        let t = thread::spawn(move || tx.send(1).unwrap());
        assert_eq!(block_on(rx), Ok(1));
        t.join().unwrap();
    });
}

/// send racing the receiver's drop: the value is dropped exactly once, whichever
/// side wins (and handed back if the drop came first).
#[test]
fn send_vs_drop_of_receiver() {
    loom::model(|| {
        let v = Arc::new(());
        let (tx, rx) = channel::<Arc<()>>();
        let v2 = v.clone();
        let t = thread::spawn(move || match tx.send(v2) {
            Ok(()) => true,
            Err(back) => {
                drop(back);
                false
            }
        });
        drop(rx);
        t.join().unwrap();
        assert_eq!(Arc::strong_count(&v), 1);
    });
}

/// send racing a receiver that registered a waker and then drops: the value is
/// dropped exactly once, the waker too (loom reports a leaked `Arc`).
#[test]
fn send_vs_drop_of_registered_receiver() {
    loom::model(|| {
        let v = Arc::new(());
        let (tx, mut rx) = channel::<Arc<()>>();
        let v2 = v.clone();
        let t = thread::spawn(move || tx.send(v2).is_ok());
        let (_, w) = counting_waker();
        let first = Pin::new(&mut rx).poll(&mut Context::from_waker(&w));
        drop(first);
        drop(rx);
        t.join().unwrap();
        assert_eq!(Arc::strong_count(&v), 1);
    });
}

/// The sender's drop racing recv: the receiver resolves to the error.
#[test]
fn drop_of_sender_vs_recv() {
    loom::model(|| {
        let (tx, rx) = channel::<u32>();
        let t = thread::spawn(move || drop(tx));
        assert_eq!(block_on(rx), Err(RecvError(())));
        t.join().unwrap();
    });
}

/// close racing a sender waiting in closed() and then sending: the wait ends and
/// the send fails.
#[test]
fn close_vs_closed_and_send() {
    loom::model(|| {
        let (mut tx, mut rx) = channel::<u32>();
        let t = thread::spawn(move || {
            block_on(tx.closed());
            assert_eq!(tx.send(5), Err(5));
        });
        rx.close();
        t.join().unwrap();
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    });
}

/// close racing send: either the send failed, or the value stays receivable.
#[test]
fn close_vs_send() {
    loom::model(|| {
        let (tx, mut rx) = channel::<u32>();
        let t = thread::spawn(move || tx.send(9).is_ok());
        rx.close();
        let sent = t.join().unwrap();
        let got = rx.try_recv();
        if sent {
            assert_eq!(got, Ok(9));
        } else {
            assert_eq!(got, Err(TryRecvError::Closed));
        }
    });
}

/// A second poll with a different waker replaces the first while a send races:
/// if the second poll is pending, the send wakes the second waker.
#[test]
fn waker_replacement_vs_send() {
    loom::model(|| {
        let (tx, mut rx) = channel::<u32>();
        let t = thread::spawn(move || tx.send(3).unwrap());
        let (_, wa) = counting_waker();
        let (b, wb) = counting_waker();
        let mut rx = Pin::new(&mut rx);
        if let Poll::Ready(got) = rx.as_mut().poll(&mut Context::from_waker(&wa)) {
            assert_eq!(got, Ok(3));
        } else if let Poll::Ready(got) = rx.as_mut().poll(&mut Context::from_waker(&wb)) {
            assert_eq!(got, Ok(3));
        } else {
            t.join().unwrap();
            assert_eq!(b.0.load(SeqCst), 1);
            let got = rx.as_mut().poll(&mut Context::from_waker(&wb));
            assert_eq!(got, Poll::Ready(Ok(3)));
            return;
        }
        t.join().unwrap();
    });
}

/// The same on the sender's side: a second poll_closed with a different waker
/// while the receiver closes.
#[test]
fn closed_waker_replacement_vs_close() {
    loom::model(|| {
        let (mut tx, mut rx) = channel::<u32>();
        let t = thread::spawn(move || rx.close());
        let (_, wa) = counting_waker();
        let (b, wb) = counting_waker();
        if tx.poll_closed(&mut Context::from_waker(&wa)).is_pending()
            && tx.poll_closed(&mut Context::from_waker(&wb)).is_pending()
        {
            t.join().unwrap();
            assert_eq!(b.0.load(SeqCst), 1);
            assert!(tx.poll_closed(&mut Context::from_waker(&wb)).is_ready());
            return;
        }
        t.join().unwrap();
    });
}
