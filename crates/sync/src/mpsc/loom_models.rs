//! Loom models of the channel's lock-free core: the block list (two producers, one
//! consumer, across a block boundary, with block recycling) and the receiver's waker
//! handshake (a send racing the receiver's registration is never lost).

use std::task::Poll;

use super::list::{self, Read, TryPop};
use super::rx_waker::RxWaker;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::SeqCst;

/// Two producers push one value each into slots 1 and 2 (slot 0 is filled first), so
/// one of them crosses into the second block (two slots per block under loom) while
/// the consumer pops: nothing is lost or duplicated, and the close marker comes last.
#[test]
fn block_list_two_producers_cross_a_block() {
    loom::model(|| {
        let (tx, mut rx) = list::list::<usize>(0);
        let tx = Arc::new(tx);
        tx.push(0);
        let handles: Vec<_> = (1..3)
            .map(|p| {
                let tx = tx.clone();
                loom::thread::spawn(move || tx.push(p))
            })
            .collect();
        let mut got = Vec::new();
        while got.len() < 3 {
            match rx.try_pop(&tx) {
                TryPop::Value(v) => got.push(v),
                TryPop::Closed => panic!("closed early"),
                TryPop::Empty | TryPop::Busy => loom::thread::yield_now(),
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        tx.close();
        assert!(matches!(rx.pop(&tx), Some(Read::Closed)));
        assert_eq!(got[0], 0);
        got.sort();
        assert_eq!(got, [0, 1, 2]);
        // SAFETY: every producer is joined; the list is not used afterwards.
        unsafe { rx.free_all(&tx) };
    });
}

/// One producer pushes past several blocks while the consumer pops, so emptied
/// blocks get released and recycled behind the producer's back.
#[test]
fn block_list_recycles_blocks() {
    loom::model(|| {
        let (tx, mut rx) = list::list::<usize>(0);
        let tx = Arc::new(tx);
        let t = {
            let tx = tx.clone();
            loom::thread::spawn(move || {
                for i in 0..5 {
                    tx.push(i);
                }
            })
        };
        let mut next = 0;
        while next < 5 {
            match rx.pop(&tx) {
                Some(Read::Value(v)) => {
                    assert_eq!(v, next);
                    next += 1;
                }
                Some(Read::Closed) => panic!("closed early"),
                None => loom::thread::yield_now(),
            }
        }
        t.join().unwrap();
        // SAFETY: the producer is joined; the list is not used afterwards.
        unsafe { rx.free_all(&tx) };
    });
}

/// The receiver's protocol (look, register, look again) against a sender's (push,
/// wake): either the receiver sees the value or it is woken.
#[test]
fn rx_waker_no_lost_wake() {
    loom::model(|| {
        let (tx, mut rx) = list::list::<usize>(0);
        let shared = Arc::new((tx, RxWaker::new()));
        let sender = {
            let shared = shared.clone();
            loom::thread::spawn(move || {
                shared.0.push(7);
                shared.1.wake();
            })
        };
        let got = loom::future::block_on(std::future::poll_fn(|cx| {
            for attempt in 0..2 {
                if let Some(Read::Value(v)) = rx.pop(&shared.0) {
                    return Poll::Ready(v);
                }
                if attempt == 0 {
                    shared.1.register(cx.waker());
                }
            }
            Poll::Pending
        }));
        assert_eq!(got, 7);
        sender.join().unwrap();
        // SAFETY: the sender is joined; the list is not used afterwards.
        unsafe { rx.free_all(&shared.0) };
    });
}

/// Two wakers racing a registration: the registered task is woken at least once
/// after its registration, whoever wins.
#[test]
fn rx_waker_concurrent_wakes() {
    loom::model(|| {
        let cell = Arc::new(RxWaker::new());
        let flag = Arc::new(AtomicUsize::new(0));
        let wakers: Vec<_> = (0..2)
            .map(|_| {
                let (cell, flag) = (cell.clone(), flag.clone());
                loom::thread::spawn(move || {
                    flag.fetch_add(1, SeqCst);
                    cell.wake();
                })
            })
            .collect();
        loom::future::block_on(std::future::poll_fn(|cx| {
            if flag.load(SeqCst) == 2 {
                return Poll::Ready(());
            }
            cell.register(cx.waker());
            if flag.load(SeqCst) == 2 {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        for w in wakers {
            w.join().unwrap();
        }
    });
}
