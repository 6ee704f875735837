//! Unit tests of the channel's core, small enough to run under miri
//! (`cargo +nightly miri test -p netloop-sync mpsc`).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use super::list::{self, BLOCK_CAP, Read, TryPop};
use super::*;

fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn list_fifo_across_blocks_and_index_wraparound() {
    let (tx, mut rx) = list::list::<usize>(0usize.wrapping_sub(2 * BLOCK_CAP));
    for round in 0..3 {
        for i in 0..BLOCK_CAP + 3 {
            tx.push(round * 100 + i);
        }
        assert_eq!(rx.len(&tx), BLOCK_CAP + 3);
        for i in 0..BLOCK_CAP + 3 {
            match rx.try_pop(&tx) {
                TryPop::Value(v) => assert_eq!(v, round * 100 + i),
                _ => panic!("missing value"),
            }
        }
        assert!(rx.is_empty(&tx));
    }
    tx.close();
    assert!(matches!(rx.pop(&tx), Some(Read::Closed)));
    // SAFETY: no sender pushes any more; the list is not used afterwards.
    unsafe { rx.free_all(&tx) };
}

#[test]
fn dropping_the_receiver_drops_buffered_values() {
    let drops = StdArc::new(AtomicUsize::new(0));
    struct D(StdArc<AtomicUsize>);
    impl Drop for D {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let (tx, rx) = unbounded_channel();
    for _ in 0..BLOCK_CAP + 2 {
        tx.send(D(drops.clone())).unwrap();
    }
    drop(rx);
    assert_eq!(drops.load(Ordering::SeqCst), BLOCK_CAP + 2, "dropped with the receiver");
    assert!(tx.send(D(drops.clone())).is_err());
    drop(tx);
    assert_eq!(drops.load(Ordering::SeqCst), BLOCK_CAP + 3);
}

#[test]
fn bounded_capacity_permits_and_close() {
    let (tx, mut rx) = channel::<u32>(2);
    let p = tx.try_reserve().unwrap();
    assert_eq!(tx.capacity(), 1);
    tx.try_send(1).unwrap();
    assert!(matches!(tx.try_send(2), Err(error::TrySendError::Full(2))));
    rx.close();
    assert!(matches!(tx.try_send(3), Err(error::TrySendError::Closed(3))));
    p.send(2); // a permit reserved before the close still sends
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(error::TryRecvError::Disconnected));
    assert_eq!(futures::executor::block_on(rx.recv()), None);
}

#[test]
fn waiting_senders_are_served_in_order() {
    let (tx, mut rx) = channel::<u32>(1);
    tx.try_send(0).unwrap();
    let mut a = pin!(tx.send(1));
    let mut b = pin!(tx.reserve_many(1));
    let mut c = pin!(tx.send(3));
    assert!(poll_once(a.as_mut()).is_pending());
    assert!(poll_once(b.as_mut()).is_pending());
    assert!(poll_once(c.as_mut()).is_pending());
    assert_eq!(rx.try_recv(), Ok(0));
    // The freed slot went to `a`, the first in line: a newcomer finds none.
    assert!(tx.try_reserve().is_err());
    assert!(poll_once(c.as_mut()).is_pending());
    assert!(poll_once(a.as_mut()).is_ready());
    assert_eq!(rx.try_recv(), Ok(1));
    let permits = match poll_once(b.as_mut()) {
        Poll::Ready(Ok(p)) => p,
        _ => panic!("b is next"),
    };
    assert_eq!(permits.len(), 1);
    drop(permits); // unused: the slot moves on to `c`
    assert!(poll_once(c.as_mut()).is_ready());
    assert_eq!(rx.try_recv(), Ok(3));
}

#[test]
fn cancelled_reserve_gives_its_place_away() {
    let (tx, mut rx) = channel::<u32>(1);
    tx.try_send(0).unwrap();
    {
        let mut a = pin!(tx.reserve());
        assert!(poll_once(a.as_mut()).is_pending());
        assert_eq!(rx.try_recv(), Ok(0)); // granted to `a`...
    } // ...which is dropped: the slot comes back
    assert_eq!(tx.capacity(), 1);
    tx.try_send(1).unwrap();
    assert_eq!(rx.try_recv(), Ok(1));
}

#[test]
fn recv_many_and_counts() {
    let (tx, mut rx) = unbounded_channel::<u32>();
    let mut buf = Vec::new();
    assert_eq!(futures::executor::block_on(rx.recv_many(&mut buf, 0)), 0);
    for i in 0..5 {
        tx.send(i).unwrap();
    }
    assert_eq!(futures::executor::block_on(rx.recv_many(&mut buf, 3)), 3);
    assert_eq!(buf, [0, 1, 2]);
    let weak = tx.downgrade();
    assert_eq!((rx.sender_strong_count(), rx.sender_weak_count()), (1, 1));
    drop(tx);
    assert!(weak.upgrade().is_none());
    assert_eq!(futures::executor::block_on(rx.recv_many(&mut buf, 10)), 2);
    assert_eq!(futures::executor::block_on(rx.recv_many(&mut buf, 10)), 0);
}

#[test]
fn two_producer_threads() {
    let n = if cfg!(miri) { 40 } else { 2000 };
    let (tx, mut rx) = channel::<(u32, u32)>(4);
    let threads: Vec<_> = (0..2)
        .map(|p| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..n {
                    tx.blocking_send((p, i)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let mut next = [0, 0];
    while let Some((p, i)) = rx.blocking_recv() {
        assert_eq!(next[p as usize], i);
        next[p as usize] += 1;
    }
    assert_eq!(next, [n, n]);
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
#[cfg_attr(miri, ignore)] // large allocation, slow under miri
fn a_block_of_large_values_is_built_on_the_heap() {
    let (tx, mut rx) = unbounded_channel::<[u8; 1 << 16]>();
    tx.send([1; 1 << 16]).unwrap();
    assert_eq!(rx.try_recv().unwrap()[0], 1);
}
