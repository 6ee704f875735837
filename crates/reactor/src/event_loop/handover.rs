//! Who owns a loop's state while its thread blocks in place: the loop's thread or its
//! stand-in (`stand_in.rs`). A protocol of its own, so that its loom model sees nothing
//! else.
//!
//! The loop's thread *offers* its state as it enters the blocking closure. The
//! stand-in *takes* it only once the offer has stood for a while, so a closure that
//! returns sooner costs no hand-over at all: the loop's thread *withdraws* the offer
//! and goes on. Once the state is taken, the loop's thread *asks for it back* and waits
//! until the stand-in *gives it back*:
//!
//! ```text
//! IDLE --offer--> OFFERED --take--> TAKEN --ask back--> ASKED --give back--> IDLE
//!                 OFFERED --withdraw--> IDLE
//! IDLE --close--> CLOSED (the stand-in thread ends)
//! ```
//!
//! Every transition but `take` and `give back` is the loop thread's. The state is the
//! loop thread's in IDLE and OFFERED (in OFFERED it touches it no more until a
//! `withdraw` succeeds or it gets it back) and the stand-in's in TAKEN and ASKED. Each
//! change of owner is a release by the side that gives and an acquire by the side
//! that receives, so every write of one side happens before the other's next read.

#[cfg(loom)]
use loom::thread::{self, Thread};
#[cfg(not(loom))]
use std::thread::{self, Thread};

use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};

use crate::sync::{AtomicUsize, Mutex, lock};

const IDLE: usize = 0;
const OFFERED: usize = 1;
const TAKEN: usize = 2;
const ASKED: usize = 3;
const CLOSED: usize = 4;

/// How long the loop's thread spins for its state to come back before it parks. The
/// stand-in gives it back as soon as the task it polls returns, usually sooner than a
/// parked thread can be woken.
#[cfg(not(loom))]
const SPIN_FOR_GIVE_BACK: std::time::Duration = std::time::Duration::from_micros(50);

/// The hand-over between one loop's thread and its stand-in; `T` goes with an offer.
pub(super) struct Handover<T> {
    state: AtomicUsize,
    /// What goes with the offer, from `offer` until `take` or `withdraw`.
    offer: Mutex<Option<T>>,
    /// The loop's thread, unparked when the state comes back.
    owner: Thread,
}

impl<T> Handover<T> {
    /// A hand-over owned by the calling thread (the loop's).
    pub(super) fn new() -> Handover<T> {
        Handover {
            state: AtomicUsize::new(IDLE),
            offer: Mutex::new(None),
            owner: thread::current(),
        }
    }

    /// Loop thread, in IDLE: offers the state, with `with`. The caller then wakes the
    /// stand-in, and touches the state no more until [`withdraw`](Self::withdraw)
    /// succeeds or [`wait_given_back`](Self::wait_given_back) returns. Outside IDLE
    /// (an offer made while an earlier one is out, from inside its closure) nothing
    /// changes and `with` is given back.
    pub(super) fn offer(&self, with: T) -> Result<(), T> {
        // Only the loop's thread leaves IDLE, so IDLE seen here stays until the swap.
        if self.state.load(Acquire) != IDLE {
            return Err(with);
        }
        *lock(&self.offer) = Some(with);
        let prev = self.state.swap(OFFERED, Release);
        debug_assert_eq!(prev, IDLE, "an offer while the state is away");
        Ok(())
    }

    /// Loop thread, after `offer`: takes the offer back if the stand-in has not taken
    /// it (then the state is the loop's again, and what went with the offer is
    /// returned); `None` if it has.
    pub(super) fn withdraw(&self) -> Option<T> {
        match self.state.compare_exchange(OFFERED, IDLE, AcqRel, Acquire) {
            Ok(_) => lock(&self.offer).take(),
            Err(_) => None,
        }
    }

    /// Loop thread, after a `withdraw` that found the state taken: asks for it back.
    /// The caller then interrupts the stand-in and calls `wait_given_back`.
    pub(super) fn ask_back(&self) {
        let prev = self.state.swap(ASKED, AcqRel);
        debug_assert_eq!(prev, TAKEN, "asked back what was not taken");
    }

    /// Loop thread, after `ask_back`: returns once the stand-in has given the state back.
    /// Spins for [`SPIN_FOR_GIVE_BACK`] first, then parks.
    pub(super) fn wait_given_back(&self) {
        #[cfg(not(loom))]
        {
            let started = std::time::Instant::now();
            while started.elapsed() < SPIN_FOR_GIVE_BACK {
                if self.state.load(Acquire) == IDLE {
                    return;
                }
                std::hint::spin_loop();
            }
        }
        while self.state.load(Acquire) != IDLE {
            thread::park();
        }
    }

    /// Loop thread, in IDLE: tells the stand-in to end. The caller then wakes it.
    pub(super) fn close(&self) {
        self.state.store(CLOSED, Release);
    }

    /// Stand-in: is an offer standing?
    pub(super) fn is_offered(&self) -> bool {
        self.state.load(Acquire) == OFFERED
    }

    /// Stand-in: has the loop's thread closed the hand-over?
    pub(super) fn is_closed(&self) -> bool {
        self.state.load(Acquire) == CLOSED
    }

    /// Stand-in: takes the state if it is still offered, with what went with the offer.
    pub(super) fn take(&self) -> Option<T> {
        self.state.compare_exchange(OFFERED, TAKEN, AcqRel, Acquire).ok()?;
        lock(&self.offer).take()
    }

    /// Stand-in, holding the state: does the loop's thread want it back?
    pub(super) fn is_asked_back(&self) -> bool {
        self.state.load(Acquire) == ASKED
    }

    /// Stand-in, holding the state, once asked: gives it back and wakes the loop's thread.
    pub(super) fn give_back(&self) {
        let prev = self.state.swap(IDLE, Release);
        debug_assert_eq!(prev, ASKED, "gave back what was not asked for");
        self.owner.unpark();
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::Handover;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::thread;

    /// An offer that the stand-in takes or the loop's thread withdraws, in any order:
    /// the state (a cell loom watches for concurrent access) is only ever touched by its
    /// owner, and the loop's thread always gets it back.
    #[test]
    fn withdraw_races_take_and_one_side_owns_the_state() {
        loom::model(|| {
            let state = Arc::new(UnsafeCell::new(0usize));
            let handover = Arc::new(Handover::<u8>::new());
            // SAFETY: the loop's thread owns the state before the offer.
            state.with_mut(|s| unsafe { *s += 1 });
            handover.offer(7).unwrap();
            let stand_in = {
                let (handover, state) = (handover.clone(), state.clone());
                thread::spawn(move || {
                    if let Some(with) = handover.take() {
                        assert_eq!(with, 7);
                        // SAFETY: taken: the stand-in owns the state until it gives it back.
                        state.with_mut(|s| unsafe { *s += 10 });
                        while !handover.is_asked_back() {
                            thread::yield_now();
                        }
                        handover.give_back();
                    }
                })
            };
            let withdrawn = handover.withdraw();
            if withdrawn.is_none() {
                handover.ask_back();
                handover.wait_given_back();
            }
            // SAFETY: withdrawn or given back: the loop's thread owns the state again.
            let seen = state.with_mut(|s| unsafe {
                *s += 100;
                *s
            });
            assert_eq!(seen, if withdrawn == Some(7) { 101 } else { 111 });
            stand_in.join().unwrap();
        });
    }

    /// A stand-in that blocks in place hands the state on to a stand-in of its own
    /// (`stand_in.rs`): the two hand-overs nest. Whatever each offer meets (withdrawn or
    /// taken), one thread at a time touches the state, and each side gets it back
    /// before it gives it back to the side below, even when the loop's thread asks for
    /// it while the second stand-in holds it. It checks ownership only: whether a task
    /// blocked at one level can go on while another level's closure waits for it is
    /// not the protocol's to say (`docs/affinity.md`, the known limit).
    #[test]
    fn a_stand_in_hands_the_state_on_and_it_comes_back_down() {
        loom::model(|| {
            let state = Arc::new(UnsafeCell::new(0usize));
            let first = Arc::new(Handover::<u8>::new());
            first.offer(1).unwrap();
            let stand_in = {
                let (first, state) = (first.clone(), state.clone());
                thread::spawn(move || {
                    let Some(_) = first.take() else { return };
                    // SAFETY: taken from the loop's thread.
                    state.with_mut(|s| unsafe { *s += 1 });
                    // The stand-in blocks in place: its own hand-over, owned by it.
                    let second = Arc::new(Handover::<u8>::new());
                    second.offer(2).unwrap();
                    let its_stand_in = {
                        let (second, state) = (second.clone(), state.clone());
                        thread::spawn(move || {
                            if second.take().is_some() {
                                // SAFETY: taken from the first stand-in.
                                state.with_mut(|s| unsafe { *s += 10 });
                                while !second.is_asked_back() {
                                    thread::yield_now();
                                }
                                second.give_back();
                            }
                        })
                    };
                    if second.withdraw().is_none() {
                        second.ask_back();
                        second.wait_given_back();
                    }
                    // SAFETY: withdrawn or given back: the first stand-in's again.
                    state.with_mut(|s| unsafe { *s += 100 });
                    while !first.is_asked_back() {
                        thread::yield_now();
                    }
                    first.give_back();
                    its_stand_in.join().unwrap();
                })
            };
            if first.withdraw().is_none() {
                first.ask_back();
                first.wait_given_back();
            }
            // SAFETY: withdrawn or given back: the loop thread's again.
            state.with_mut(|s| unsafe { *s += 1000 });
            stand_in.join().unwrap();
        });
    }

    /// A second offer after the first was given back goes the same way, and closing
    /// in IDLE ends a stand-in that waits for offers.
    #[test]
    fn offers_follow_one_another_and_close_ends_the_stand_in() {
        loom::model(|| {
            let handover = Arc::new(Handover::<u8>::new());
            let stand_in = {
                let handover = handover.clone();
                thread::spawn(move || {
                    let mut taken = 0;
                    while !handover.is_closed() {
                        if handover.is_offered()
                            && let Some(_with) = handover.take()
                        {
                            taken += 1;
                            while !handover.is_asked_back() {
                                thread::yield_now();
                            }
                            handover.give_back();
                        }
                        thread::yield_now();
                    }
                    taken
                })
            };
            for round in 0..2 {
                handover.offer(round).unwrap();
                if handover.withdraw().is_none() {
                    handover.ask_back();
                    handover.wait_given_back();
                }
            }
            handover.close();
            assert!(stand_in.join().unwrap() <= 2);
        });
    }
}
