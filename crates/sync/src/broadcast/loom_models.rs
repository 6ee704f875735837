//! Loom models of the broadcast channel: sends racing receives, receive
//! cancellations and receiver drops.

use super::channel;
use super::error::{RecvError, TryRecvError};
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::future::block_on;
use loom::thread;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Counts its clones and drops, so a model can check that every copy of every value
/// is dropped exactly once.
struct Tracked {
    clones: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
}

impl Clone for Tracked {
    fn clone(&self) -> Self {
        self.clones.fetch_add(1, SeqCst);
        Tracked {
            clones: self.clones.clone(),
            drops: self.drops.clone(),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, SeqCst);
    }
}

/// One sender sends two values while one receiver waits for both and another is
/// dropped: the waiting receiver gets both (no lost wake-up), and once both
/// receivers are done every copy has been dropped exactly once, before the sender
/// goes.
#[test]
fn send_vs_recv_vs_receiver_drop() {
    loom::model(|| {
        let clones = Arc::new(AtomicUsize::new(0));
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, mut rx1) = channel::<Tracked>(2);
        let rx2 = tx.subscribe();
        let value = Tracked {
            clones: clones.clone(),
            drops: drops.clone(),
        };

        let sender = thread::spawn(move || {
            for _ in 0..2 {
                let copy = value.clone();
                assert!(tx.send(copy).is_ok());
            }
            drop(value);
            tx
        });
        let receiver = thread::spawn(move || {
            for _ in 0..2 {
                drop(block_on(rx1.recv()).unwrap());
            }
            rx1
        });
        drop(rx2);

        let tx = sender.join().unwrap();
        let rx1 = receiver.join().unwrap();
        // 1 original + its clones (2 sent + 2 handed to rx1), all dropped already.
        assert_eq!(drops.load(SeqCst), 1 + clones.load(SeqCst));
        drop((tx, rx1));
        assert_eq!(drops.load(SeqCst), 1 + clones.load(SeqCst));
    });
}

/// A receive that registered its waker and is then cancelled while a send takes
/// the waiter queue: neither side trips over the other's node, and the value is
/// still there for the next receive.
#[test]
fn cancelled_recv_vs_send() {
    loom::model(|| {
        let (tx, mut rx) = channel::<u32>(2);
        let sender = thread::spawn(move || {
            tx.send(7).unwrap();
            tx
        });
        {
            let mut recv = pin!(rx.recv());
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(value) = recv.as_mut().poll(&mut cx) {
                assert_eq!(value, Ok(7));
                drop(sender.join().unwrap());
                return;
            }
        }
        let tx = sender.join().unwrap();
        assert_eq!(rx.try_recv(), Ok(7));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx);
        assert_eq!(block_on(rx.recv()), Err(RecvError::Closed));
    });
}

/// The last sender's drop races a waiting receive: the receive wakes with `Closed`.
#[test]
fn sender_drop_wakes_waiting_recv() {
    loom::model(|| {
        let (tx, mut rx) = channel::<u32>(1);
        let sender = thread::spawn(move || drop(tx));
        assert_eq!(block_on(rx.recv()), Err(RecvError::Closed));
        sender.join().unwrap();
    });
}
