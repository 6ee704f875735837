//! Loom models of the watch channel's version handshake.

use super::channel;
use loom::future::block_on;
use loom::thread;

/// A send racing `changed()`: the receiver always sees the change (no lost
/// wake-up), and the value it then borrows is the one sent.
#[test]
fn send_vs_changed() {
    loom::model(|| {
        let (tx, mut rx) = channel(0u32);
        let sender = thread::spawn(move || {
            tx.send(1).unwrap();
            tx
        });
        block_on(rx.changed()).unwrap();
        assert_eq!(*rx.borrow_and_update(), 1);
        let tx = sender.join().unwrap();
        assert!(!rx.has_changed().unwrap());
        drop(tx);
    });
}

/// Two sends and the last sender's drop race a receiver that waits twice: it sees a
/// change, then either the second change or the close, and never waits forever.
#[test]
fn sends_and_close_vs_changed() {
    loom::model(|| {
        let (tx, mut rx) = channel(0u32);
        let sender = thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        block_on(rx.changed()).unwrap();
        let first = *rx.borrow_and_update();
        assert!(first == 1 || first == 2);
        match block_on(rx.changed()) {
            Ok(()) => assert_eq!(*rx.borrow_and_update(), 2),
            Err(_) => assert_eq!(first, 2),
        }
        sender.join().unwrap();
        assert!(block_on(rx.changed()).is_err());
    });
}

/// The last receiver's drop racing `Sender::closed()`: the sender wakes.
#[test]
fn receiver_drop_vs_closed() {
    loom::model(|| {
        let (tx, rx) = channel(0u32);
        let receiver = thread::spawn(move || drop(rx));
        block_on(tx.closed());
        receiver.join().unwrap();
    });
}
