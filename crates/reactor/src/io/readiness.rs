//! Per-registration readiness, cached until an operation hits `WouldBlock`.
//!
//! mio is edge-triggered: the OS reports a socket ready once, not every time we ask.
//! So the loop records readiness here, and it stays set until an operation actually
//! returns `WouldBlock`. Clearing has a race: the loop may record a fresh event between
//! an operation's `WouldBlock` and its clear, and clearing that would lose the event
//! for good. Each event bumps a tick; a clear names the tick it observed and is
//! ignored if the tick has moved (tokio's `ScheduledIo` does the same).

use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
use std::task::{Context, Poll, Waker};

use super::ready::{Direction, Ready};
use crate::task::is_task_waker;
// loom's under `--cfg loom`: the waiter protocol is modelled in `task/loom_models.rs`.
use crate::sync::{AtomicPtr, AtomicUsize, Mutex, lock};

/// Wakes the waiter in `slot`, if one is waiting. Called with the waiters' lock held;
/// `armed` is the slot's tag (see [`Readiness`]'s `armed`).
///
/// A waiter is woken once per registration, as when wakers are taken (tokio's way): a
/// task that has to wait again registers again. A loop task's waker is not taken,
/// though: it is woken by reference and left in the slot, its tag turned from armed
/// to [`disarmed`]. Its wake only queues the task (it never comes back into this
/// registration, so it may run under the lock), and when the task waits again it
/// finds its own tag there and re-arms it with one compare-and-swap, without the lock
/// and without cloning the waker. The slot keeps a reference to the task until
/// another waker replaces it or the registration is dropped.
///
/// Any other waker could run arbitrary code, so it is taken and goes to `wakers`.
///
/// Returns 1 if the wake crosses to another thread (a task of another loop, or any
/// waker that is not a loop task's), 0 otherwise: the loop counts these as
/// [`io_wakes_remote`](crate::LoopMetrics::io_wakes_remote).
fn wake_waiter(
    slot: &mut Option<Waker>,
    armed: &AtomicPtr<()>,
    in_place: &impl Fn(&Waker) -> bool,
    wakers: &mut Vec<Waker>,
) -> u64 {
    match slot {
        // The common case for the writer's slot: epoll reports a writable socket with
        // every readable edge.
        None => 0,
        Some(waker) if is_task_waker(waker) => {
            let data = waker.data().cast_mut();
            if armed.swap(disarmed(data), AcqRel) != data {
                // Woken already since it last registered.
                return 0;
            }
            if in_place(waker) {
                0
            } else {
                waker.wake_by_ref();
                1
            }
        }
        Some(_) => {
            wakers.extend(slot.take());
            1
        }
    }
}

/// Wakes every waker of a direction's shared list (emptying it): a task of this loop in
/// place, any other through `wakers`. Returns how many wakes cross threads. Out of
/// line: most registrations have no shared waiter, and the caller checks first.
#[inline(never)]
fn wake_shared(list: &mut Vec<Waker>, in_place: &impl Fn(&Waker) -> bool, wakers: &mut Vec<Waker>) -> u64 {
    let mut remote = 0;
    for waker in list.drain(..) {
        if !in_place(&waker) {
            remote += 1;
            wakers.push(waker);
        }
    }
    remote
}

/// The tag of a slot that holds the loop task whose data pointer is `data`, woken
/// since it last registered: the pointer with its low bit set (a task header is
/// aligned, so the bit is free).
fn disarmed(data: *mut ()) -> *mut () {
    data.map_addr(|a| a | 1)
}

/// Set when the owning loop has shut down: operations fail instead of waiting forever.
const SHUTDOWN: usize = 1 << 8;
const TICK_SHIFT: u32 = 16;
const READY_MASK: usize = 0xff;

/// A readiness observation, to hand back to
/// [`Registration::clear_readiness`](crate::io::Registration::clear_readiness).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyEvent {
    pub(crate) tick: usize,
    /// What was ready.
    pub ready: Ready,
    pub(crate) is_shutdown: bool,
}

#[derive(Default)]
struct Waiters {
    reader: Option<Waker>,
    writer: Option<Waker>,
    /// Per direction, every waker of a readiness future (`accept`, `readable`, ...)
    /// that waits: unlike the slot, where the last waker wins, all of them are woken
    /// by the next event and the list is emptied. A waker whose future was dropped
    /// meanwhile gets one spurious wake.
    shared: [Vec<Waker>; 2],
}

pub(crate) struct Readiness {
    /// `ready bits | SHUTDOWN | tick << TICK_SHIFT`
    readiness: AtomicUsize,
    waiters: Mutex<Waiters>,
    /// For each direction (reader, writer), the slot's tag: if the slot holds a loop
    /// task's waker, that task's data pointer while it waits ("armed"), or the
    /// [`disarmed`] form of it once an event has woken it; null for any other waker
    /// or none. Changed with the slot under the waiters' lock, except for the two
    /// changes that keep the slot as it is: the event's armed -> disarmed swap (under
    /// the lock too) and the task's disarmed -> armed compare-and-swap, which is
    /// what lets a task wait again without the lock. Both are read-modify-writes of
    /// this word, so one of them comes first: if the task's comes first, the event
    /// finds the slot armed and wakes it; if the event's comes first, the task's
    /// exchange reads what the event wrote and so sees the readiness the event set
    /// before it (the check after registering). The slot holds a reference to the
    /// task, so the address names no other task meanwhile.
    armed: [AtomicPtr<()>; 2],
    /// Where the loop's registration set keeps it.
    pub(crate) key: usize,
}

fn decode(word: usize) -> (Ready, bool, usize) {
    (
        Ready::from_bits((word & READY_MASK) as u8),
        word & SHUTDOWN != 0,
        word >> TICK_SHIFT,
    )
}

impl Readiness {
    pub(crate) fn new(key: usize) -> Self {
        Readiness {
            readiness: AtomicUsize::new(0),
            waiters: Mutex::new(Waiters::default()),
            armed: [
                AtomicPtr::new(std::ptr::null_mut()),
                AtomicPtr::new(std::ptr::null_mut()),
            ],
            key,
        }
    }

    /// The mio token of this registration: its address (see `registration_set`).
    pub(crate) fn token(&self) -> mio::Token {
        mio::Token(std::ptr::from_ref(self).expose_provenance())
    }

    /// The registration an event's token names.
    ///
    /// # Safety
    ///
    /// `token` must come from [`token`](Self::token) of a `Readiness` that is still
    /// allocated, which the registration set guarantees for the events of the current
    /// `select` (see `registration_set`). The returned reference must not outlive the
    /// processing of that event.
    pub(crate) unsafe fn from_token<'a>(token: mio::Token) -> &'a Readiness {
        // SAFETY: by the caller's contract the address is that of a live Readiness,
        // whose provenance `token` exposed.
        unsafe { &*std::ptr::with_exposed_provenance::<Readiness>(token.0) }
    }

    /// Loop side: record an event and wake the waiters it concerns. A task's waker is
    /// woken by reference and stays in its slot, disarmed (see [`wake_waiter`]);
    /// `in_place` wakes it directly when its task is on the loop dispatching the event
    /// (true if it did). Any other waker is moved to `wakers`, for the caller to wake
    /// once no lock is held. Returns how many of the wakes cross to another thread.
    pub(crate) fn set_readiness(
        &self,
        ready: Ready,
        in_place: &impl Fn(&Waker) -> bool,
        wakers: &mut Vec<Waker>,
    ) -> u64 {
        let _ = self.readiness.fetch_update(AcqRel, Acquire, |word| {
            let (old, shut, tick) = decode(word);
            let tick = tick.wrapping_add(1) & (usize::MAX >> TICK_SHIFT);
            Some((tick << TICK_SHIFT) | if shut { SHUTDOWN } else { 0 } | (old | ready).bits() as usize)
        });
        let mut w = lock(&self.waiters);
        let mut remote = 0;
        if !(ready & Direction::Read.wake_mask()).is_empty() {
            remote += wake_waiter(&mut w.reader, &self.armed[0], in_place, wakers);
            if !w.shared[0].is_empty() {
                remote += wake_shared(&mut w.shared[0], in_place, wakers);
            }
        }
        if !(ready & Direction::Write.wake_mask()).is_empty() {
            remote += wake_waiter(&mut w.writer, &self.armed[1], in_place, wakers);
            if !w.shared[1].is_empty() {
                remote += wake_shared(&mut w.shared[1], in_place, wakers);
            }
        }
        remote
    }

    /// Loop side, at termination: fail every later operation, and hand both halves'
    /// wakers to the caller to wake (the slots are left empty: nothing comes later).
    pub(crate) fn shutdown(&self, wakers: &mut Vec<Waker>) {
        self.readiness.fetch_or(SHUTDOWN, AcqRel);
        let mut w = lock(&self.waiters);
        wakers.extend(w.reader.take());
        wakers.extend(w.writer.take());
        for list in &mut w.shared {
            wakers.append(list);
        }
        for armed in &self.armed {
            armed.store(std::ptr::null_mut(), Release);
        }
    }

    /// The readiness for `direction` right now, without registering interest.
    #[inline]
    pub(crate) fn ready_now(&self, direction: Direction) -> Option<ReadyEvent> {
        self.ready_now_in(direction, direction.mask())
    }

    /// [`ready_now`](Self::ready_now) counting the bits of `mask` (`direction`'s, or
    /// its wake mask for a wait that an error ends).
    #[inline]
    fn ready_now_in(&self, direction: Direction, mask: Ready) -> Option<ReadyEvent> {
        debug_assert!(mask == direction.mask() || mask == direction.wake_mask());
        let (ready, is_shutdown, tick) = decode(self.readiness.load(Acquire));
        let ready = ready & mask;
        (!ready.is_empty() || is_shutdown).then_some(ReadyEvent {
            tick,
            ready,
            is_shutdown,
        })
    }

    /// Ready if `direction` is ready (or the loop shut down); otherwise remember the
    /// waker and return `Pending`.
    ///
    /// The ready case is a load and inlines into the operation that asked; the
    /// registration is out of line.
    #[inline]
    pub(crate) fn poll_ready(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<ReadyEvent> {
        match self.ready_now(direction) {
            Some(ev) => Poll::Ready(ev),
            None => self.register_and_recheck(cx, direction),
        }
    }

    /// [`poll_ready`](Self::poll_ready) for a readiness future that may share the
    /// direction with others (several tasks accepting on one listener): its waker
    /// joins the direction's list instead of replacing the slot's.
    pub(crate) fn poll_ready_shared(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<ReadyEvent> {
        self.poll_ready_shared_in(cx, direction, direction.mask())
    }

    /// [`poll_ready_shared`](Self::poll_ready_shared), ready also on an error alone:
    /// for a wait on `Interest::ERROR`.
    pub(crate) fn poll_ready_shared_or_error(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<ReadyEvent> {
        self.poll_ready_shared_in(cx, direction, direction.wake_mask())
    }

    fn poll_ready_shared_in(&self, cx: &mut Context<'_>, direction: Direction, mask: Ready) -> Poll<ReadyEvent> {
        if let Some(ev) = self.ready_now_in(direction, mask) {
            return Poll::Ready(ev);
        }
        let displaced = {
            let mut w = lock(&self.waiters);
            super::shared_waiters::join(&mut w.shared[direction as usize], cx.waker())
        };
        displaced.into_iter().for_each(Waker::wake);
        // The loop sets readiness before it takes the list under the lock, so an
        // event that raced the registration above is visible now.
        match self.ready_now_in(direction, mask) {
            Some(ev) => Poll::Ready(ev),
            None => Poll::Pending,
        }
    }

    /// `poll_ready` found nothing ready: store the waker, then look again.
    #[inline(never)]
    fn register_and_recheck(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<ReadyEvent> {
        let waker = cx.waker();
        let armed = &self.armed[direction as usize];
        let loop_task = is_task_waker(waker);
        let data = waker.data().cast_mut();
        // This task's waker is in the slot already: armed, it stays so until an event
        // wakes it, another waker replaces it (last one wins, as with the lock) or the
        // loop shuts down (which the readiness check below sees); disarmed, one
        // exchange arms it again, unless the slot changed meanwhile.
        let in_slot = loop_task && {
            let tag = armed.load(Acquire);
            tag == data
                || (tag == disarmed(data) && armed.compare_exchange(disarmed(data), data, AcqRel, Acquire).is_ok())
        };
        if !in_slot {
            let mut w = lock(&self.waiters);
            let slot = match direction {
                Direction::Read => &mut w.reader,
                Direction::Write => &mut w.writer,
            };
            match slot {
                Some(existing) if existing.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
            // A loop task's waker is armed by its tag; any other by being in the slot.
            armed.store(if loop_task { data } else { std::ptr::null_mut() }, Release);
        }
        // The loop sets readiness before it marks the slot woken, so an event that
        // raced the registration above is visible now.
        match self.ready_now(direction) {
            Some(ev) => Poll::Ready(ev),
            None => Poll::Pending,
        }
    }

    /// Marks the registration ready in `ready`'s directions without an event: the
    /// next operation tries the socket at once, and one that finds nothing clears
    /// the readiness as usual. Wakes nobody; leaves the tick alone; nothing after
    /// shutdown.
    pub(crate) fn assume_ready(&self, ready: Ready) {
        let _ = self.readiness.fetch_update(AcqRel, Acquire, |word| {
            (word & SHUTDOWN == 0).then_some(word | ready.bits() as usize)
        });
    }

    /// Forget the readiness in `event` (an operation got `WouldBlock`), unless a newer
    /// event arrived since it was observed. Closed bits are final and stay.
    #[inline]
    pub(crate) fn clear_readiness(&self, event: ReadyEvent) {
        let clear = event.ready - Ready::READ_CLOSED - Ready::WRITE_CLOSED;
        let _ = self.readiness.fetch_update(AcqRel, Acquire, |word| {
            let (_, _, tick) = decode(word);
            (tick == event.tick).then_some(word & !(clear.bits() as usize))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_clear_keeps_a_newer_event() {
        let io = Readiness::new(1);
        let mut wakers = vec![];
        io.set_readiness(Ready::READABLE, &|_| false, &mut wakers);
        let seen = io.ready_now(Direction::Read).unwrap();
        // A new edge arrives between WouldBlock and the clear.
        io.set_readiness(Ready::READABLE, &|_| false, &mut wakers);
        io.clear_readiness(seen);
        assert!(io.ready_now(Direction::Read).is_some(), "the newer event survived");
        let seen = io.ready_now(Direction::Read).unwrap();
        io.clear_readiness(seen);
        assert!(io.ready_now(Direction::Read).is_none());
    }

    use std::sync::Arc;

    /// Wakes counted through `Wake`, to see who was woken.
    struct Count(std::sync::atomic::AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "under miri `Waker::will_wake` may miss a clone (vtables are not unique)"
    )]
    fn every_shared_waiter_is_woken_once_and_the_list_empties() {
        use std::sync::atomic::Ordering::SeqCst;
        let io = Readiness::new(1);
        let counts: Vec<Arc<Count>> = (0..3).map(|_| Arc::new(Count(0.into()))).collect();
        for c in &counts {
            let waker = Waker::from(c.clone());
            let mut cx = Context::from_waker(&waker);
            assert!(io.poll_ready_shared(&mut cx, Direction::Read).is_pending());
            // The same waker again is not listed twice.
            assert!(io.poll_ready_shared(&mut cx, Direction::Read).is_pending());
        }
        let mut wakers = vec![];
        // Writability wakes no reader.
        assert_eq!(io.set_readiness(Ready::WRITABLE, &|_| false, &mut wakers), 0);
        assert!(wakers.is_empty());
        assert_eq!(
            io.set_readiness(Ready::READABLE, &|_| false, &mut wakers),
            3,
            "each waiter, once"
        );
        wakers.drain(..).for_each(Waker::wake);
        assert!(counts.iter().all(|c| c.0.load(SeqCst) == 1));
        let seen = io.ready_now(Direction::Read).unwrap();
        io.clear_readiness(seen);
        io.set_readiness(Ready::READABLE, &|_| false, &mut wakers);
        assert!(wakers.is_empty(), "the list was emptied by the first event");
    }

    #[test]
    fn closed_bits_survive_a_clear_and_directions_are_separate() {
        let io = Readiness::new(1);
        let mut wakers = vec![];
        io.set_readiness(Ready::WRITABLE | Ready::READ_CLOSED, &|_| false, &mut wakers);
        let ev = io.ready_now(Direction::Read).unwrap();
        io.clear_readiness(ev);
        assert!(io.ready_now(Direction::Read).unwrap().ready.is_read_closed());
        assert!(io.ready_now(Direction::Write).unwrap().ready.is_writable());
    }

    #[test]
    fn wakes_only_the_waiting_direction() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Count(AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let reads = Arc::new(Count(AtomicUsize::new(0)));
        let writes = Arc::new(Count(AtomicUsize::new(0)));
        let io = Readiness::new(1);
        let rw = Waker::from(reads.clone());
        let ww = Waker::from(writes.clone());
        assert!(
            io.poll_ready(&mut Context::from_waker(&rw), Direction::Read)
                .is_pending()
        );
        assert!(
            io.poll_ready(&mut Context::from_waker(&ww), Direction::Write)
                .is_pending()
        );
        let mut wakers = vec![];
        io.set_readiness(Ready::READABLE, &|_| false, &mut wakers);
        wakers.drain(..).for_each(Waker::wake);
        assert_eq!(
            (reads.0.load(Ordering::SeqCst), writes.0.load(Ordering::SeqCst)),
            (1, 0)
        );
        io.shutdown(&mut wakers);
        wakers.drain(..).for_each(Waker::wake);
        assert_eq!(writes.0.load(Ordering::SeqCst), 1);
        assert!(io.ready_now(Direction::Write).unwrap().is_shutdown);
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::task::{Context, Wake, Waker};

    use loom::thread;

    use super::*;

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, SeqCst);
        }
    }

    /// Two readiness futures register on one direction while the loop delivers an
    /// event: each of them either sees the readiness or is woken by the event. With
    /// the check after registering removed, or the list taken before the readiness
    /// is set, a wake is lost and the model fails.
    #[test]
    fn shared_waiters_racing_an_event_are_woken_or_see_it() {
        loom::model(|| {
            let io = Arc::new(Readiness::new(0));
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    let io = io.clone();
                    thread::spawn(move || {
                        let flag = Arc::new(Flag(AtomicBool::new(false)));
                        let waker = Waker::from(flag.clone());
                        let polled = io.poll_ready_shared(&mut Context::from_waker(&waker), Direction::Read);
                        (polled.is_ready(), flag)
                    })
                })
                .collect();
            let mut wakers = Vec::new();
            io.set_readiness(Ready::READABLE, &|_| false, &mut wakers);
            wakers.drain(..).for_each(Waker::wake);
            for w in waiters {
                let (saw_it, flag) = w.join().unwrap();
                assert!(
                    saw_it || flag.0.load(SeqCst),
                    "a waiter neither saw the event nor was woken"
                );
            }
        });
    }
}
