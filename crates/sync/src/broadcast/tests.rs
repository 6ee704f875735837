//! Unit tests of the channel: a slot released by its last reader or by dropped receivers,
//! and a blocking receive.

use super::*;

#[test]
fn last_reader_releases_the_slot() {
    let (tx, mut rx1) = channel(4);
    let mut rx2 = tx.subscribe();
    let v = Arc::new(());
    tx.send(v.clone()).unwrap();
    assert_eq!(Arc::strong_count(&v), 2);
    let a = rx1.try_recv().unwrap();
    assert_eq!(Arc::strong_count(&v), 3);
    let b = rx2.try_recv().unwrap();
    assert_eq!(Arc::strong_count(&v), 3, "the last reader releases the slot's copy");
    drop((a, b));
    assert_eq!(Arc::strong_count(&v), 1);
}

#[test]
fn blocking_recv_waits_for_another_thread() {
    let (tx, mut rx) = channel(2);
    let sender = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(10));
        tx.send(5).unwrap();
    });
    assert_eq!(rx.blocking_recv(), Ok(5));
    sender.join().unwrap();
    assert_eq!(rx.blocking_recv(), Err(RecvError::Closed));
}

#[test]
fn dropping_a_receiver_releases_its_values() {
    let (tx, rx1) = channel(4);
    let mut rx2 = tx.subscribe();
    let v = Arc::new(());
    tx.send(v.clone()).unwrap();
    drop(rx1);
    assert_eq!(tx.len(), 1);
    drop(rx2.try_recv().unwrap());
    assert_eq!(Arc::strong_count(&v), 1);
    assert!(tx.is_empty());
}
