//! [`Notify`]: wake one task, the newest task, or every task waiting, with at most one
//! notification kept for a task that comes later.
//!
//! One atomic word holds the whole state: its two low bits say whether nothing is
//! pending (`EMPTY`), tasks wait in the list (`WAITING`) or a permit is stored
//! (`NOTIFIED`); the bits above count the calls to `notify_waiters` (the generation).
//! Storing and taking a permit never locks. A waiting future puts a node in a
//! [`WaitList`] under the lock and keeps its key; a notifier detaches the node (so the
//! key stays valid), records in it how it was woken, and wakes its waker after the
//! lock is released. `WAITING` is set and cleared only under the lock, and while it is
//! set the whole word changes only under the lock.

use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::loom::lock;
use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use crate::waiters::{WaitList, WaiterKey};
use std::sync::Arc;

const EMPTY: usize = 0;
const WAITING: usize = 1;
const NOTIFIED: usize = 2;
const STATE_BITS: usize = 3;
/// One call to `notify_waiters`, in the generation bits.
const GENERATION_ONE: usize = 4;

fn generation(word: usize) -> usize {
    word & !STATE_BITS
}

/// Lets tasks wait for a signal from another task or thread, without carrying data.
///
/// `Notify` is a building block: a task awaits [`notified`](Notify::notified), and
/// another side calls [`notify_one`](Notify::notify_one) (wakes the task that has
/// waited longest), [`notify_last`](Notify::notify_last) (wakes the newest waiter) or
/// [`notify_waiters`](Notify::notify_waiters) (wakes everyone waiting right now).
///
/// When `notify_one` or `notify_last` finds nobody waiting, it stores one permit
/// (several such calls still store just one); the next `notified().await` takes it and
/// completes at once. `notify_waiters` stores nothing.
///
/// ```
/// use netloop_sync::Notify;
/// use std::sync::Arc;
///
/// let notify = Arc::new(Notify::new());
/// let n2 = notify.clone();
/// let t = std::thread::spawn(move || n2.notify_one());
/// futures::executor::block_on(notify.notified());
/// t.join().unwrap();
/// ```
pub struct Notify {
    state: AtomicUsize,
    waiters: Mutex<WaitList<Waiter>>,
}

/// A waiting future's node.
struct Waiter {
    waker: Option<Waker>,
    /// Set by the notifier that detached the node.
    woken: Option<Kind>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    One,
    Last,
    All,
}

impl Notify {
    /// Creates a `Notify` with no stored permit and nobody waiting.
    pub fn new() -> Notify {
        Notify {
            state: AtomicUsize::new(EMPTY),
            waiters: Mutex::new(WaitList::new()),
        }
    }

    /// Like [`new`](Notify::new), usable in a `static` or another constant context.
    #[cfg(not(loom))]
    pub const fn const_new() -> Notify {
        Notify {
            state: AtomicUsize::new(EMPTY),
            waiters: Mutex::new(WaitList::new()),
        }
    }

    /// Like [`new`](Notify::new) (loom's types have no `const` constructors).
    #[cfg(loom)]
    pub fn const_new() -> Notify {
        Notify::new()
    }

    /// Returns a future that completes when this `Notify` is notified.
    ///
    /// The future takes a stored permit if there is one. It counts as waiting for
    /// [`notify_waiters`](Notify::notify_waiters) from the moment it is created; for
    /// [`notify_one`](Notify::notify_one) and [`notify_last`](Notify::notify_last) it
    /// joins the queue when first polled or [enabled](Notified::enable).
    ///
    /// Cancel safe: dropping a future that had been picked by `notify_one` or
    /// `notify_last` but had not yet completed hands the notification on to the next
    /// waiter (or stores it as the permit).
    pub fn notified(&self) -> Notified<'_> {
        Notified {
            notify: self,
            wait: Wait::new(self),
            _pinned: PhantomPinned,
        }
    }

    /// Like [`notified`](Notify::notified), holding an `Arc` so that the future has no
    /// borrow (it can be moved into a spawned task).
    pub fn notified_owned(self: Arc<Self>) -> OwnedNotified {
        let wait = Wait::new(&self);
        OwnedNotified {
            notify: self,
            wait,
            _pinned: PhantomPinned,
        }
    }

    /// Wakes the task that has waited longest, or stores a permit for the next
    /// [`notified`](Notify::notified) if nobody waits (at most one permit is kept).
    pub fn notify_one(&self) {
        self.notify(Kind::One);
    }

    /// Like [`notify_one`](Notify::notify_one), but wakes the task that started waiting
    /// most recently.
    pub fn notify_last(&self) {
        self.notify(Kind::Last);
    }

    /// Wakes every task waiting right now: each [`Notified`] that exists at this call
    /// completes, whether or not it was polled yet. Stores no permit: futures created
    /// afterwards wait for a later notification.
    pub fn notify_waiters(&self) {
        let mut word = self.state.load(Acquire);
        // Nobody in the list: counting the call is all there is to do.
        while word & STATE_BITS != WAITING {
            match self
                .state
                .compare_exchange(word, word.wrapping_add(GENERATION_ONE), AcqRel, Acquire)
            {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
        let mut list = lock(&self.waiters);
        let word = self.state.load(Acquire);
        if word & STATE_BITS != WAITING {
            // The waiters left meanwhile; a racing notify_one may store a permit, so add.
            self.state.fetch_add(GENERATION_ONE, AcqRel);
            return;
        }
        let mut wakers = Vec::with_capacity(list.len());
        while let Some((_, waiter)) = list.detach_front() {
            waiter.woken = Some(Kind::All);
            wakers.extend(waiter.waker.take());
        }
        // WAITING: the word is stable under the lock.
        self.state
            .store(generation(word).wrapping_add(GENERATION_ONE) | EMPTY, Release);
        drop(list);
        for waker in wakers {
            waker.wake();
        }
    }

    fn notify(&self, kind: Kind) {
        let mut word = self.state.load(Acquire);
        // Nobody waits: store the permit (or keep the one stored) in one step.
        while word & STATE_BITS != WAITING {
            let stored = generation(word) | NOTIFIED;
            match self.state.compare_exchange(word, stored, AcqRel, Acquire) {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
        let mut list = lock(&self.waiters);
        let waker = self.notify_locked(&mut list, kind);
        drop(list);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Hands one notification to the first (`One`) or last (`Last`) waiter, or stores
    /// the permit; returns the waker to wake once the lock is released.
    fn notify_locked(&self, list: &mut WaitList<Waiter>, kind: Kind) -> Option<Waker> {
        let mut word = self.state.load(Acquire);
        loop {
            if word & STATE_BITS == WAITING {
                let detached = match kind {
                    Kind::Last => list.detach_back(),
                    _ => list.detach_front(),
                };
                let (_, waiter) = detached.expect("WAITING with an empty waiter list");
                waiter.woken = Some(kind);
                let waker = waiter.waker.take();
                if list.is_empty() {
                    self.state.store(generation(word) | EMPTY, Release);
                }
                return waker;
            }
            let stored = generation(word) | NOTIFIED;
            match self.state.compare_exchange(word, stored, AcqRel, Acquire) {
                Ok(_) => return None,
                Err(actual) => word = actual,
            }
        }
    }
}

impl Default for Notify {
    fn default() -> Notify {
        Notify::new()
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = self.state.load(Relaxed);
        let state = match word & STATE_BITS {
            WAITING => "Waiting",
            NOTIFIED => "Notified",
            _ => "Empty",
        };
        f.debug_struct("Notify")
            .field("state", &state)
            .field("notify_waiters_calls", &(word >> 2))
            .finish()
    }
}

impl std::panic::UnwindSafe for Notify {}
impl std::panic::RefUnwindSafe for Notify {}

/// Where a waiting future stands.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// Not in the list yet.
    Init,
    /// In the list (or detached from it by a notifier) under this key.
    Waiting(WaiterKey),
    /// Completed.
    Done,
}

/// The part of a waiting future that `Notified` and `OwnedNotified` share.
#[derive(Debug)]
struct Wait {
    /// The generation bits when the future was created.
    generation: usize,
    stage: Stage,
}

impl Wait {
    fn new(notify: &Notify) -> Wait {
        Wait {
            generation: generation(notify.state.load(Acquire)),
            stage: Stage::Init,
        }
    }

    fn poll(&mut self, notify: &Notify, waker: Option<&Waker>) -> Poll<()> {
        match self.stage {
            Stage::Done => Poll::Ready(()),
            Stage::Init => {
                // The uncontended case: take the stored permit of our generation.
                let epoch = self.generation;
                match notify
                    .state
                    .compare_exchange(epoch | NOTIFIED, epoch | EMPTY, AcqRel, Acquire)
                {
                    Ok(_) => return self.done(),
                    Err(word) if generation(word) != epoch => return self.done(),
                    Err(_) => {}
                }
                let mut list = lock(&notify.waiters);
                let mut word = notify.state.load(Acquire);
                loop {
                    if generation(word) != epoch {
                        // notify_waiters was called since this future was created.
                        return self.done();
                    }
                    let next = match word & STATE_BITS {
                        NOTIFIED => epoch | EMPTY,
                        EMPTY => epoch | WAITING,
                        _ => break,
                    };
                    match notify.state.compare_exchange(word, next, AcqRel, Acquire) {
                        Ok(_) if next & STATE_BITS == EMPTY => return self.done(),
                        Ok(_) => break,
                        Err(actual) => word = actual,
                    }
                }
                let key = list.push_back(Waiter {
                    waker: waker.cloned(),
                    woken: None,
                });
                self.stage = Stage::Waiting(key);
                Poll::Pending
            }
            Stage::Waiting(key) => {
                let mut list = lock(&notify.waiters);
                let waiter = list.get_mut(key);
                if waiter.woken.is_some() {
                    let waiter = list.remove(key);
                    drop(list);
                    drop(waiter);
                    return self.done();
                }
                let mut old = None;
                if let Some(waker) = waker {
                    match &mut waiter.waker {
                        Some(w) if w.will_wake(waker) => {}
                        slot => old = slot.replace(waker.clone()),
                    }
                }
                drop(list);
                // A waker's drop may call back into this Notify: never under the lock.
                drop(old);
                Poll::Pending
            }
        }
    }

    fn done(&mut self) -> Poll<()> {
        self.stage = Stage::Done;
        Poll::Ready(())
    }

    /// Leaves the list; a notification meant for this future alone goes to the next.
    fn cancel(&mut self, notify: &Notify) {
        let Stage::Waiting(key) = self.stage else { return };
        self.stage = Stage::Done;
        let mut list = lock(&notify.waiters);
        let waiter = list.remove(key);
        let word = notify.state.load(Acquire);
        if list.is_empty() && word & STATE_BITS == WAITING {
            notify.state.store(generation(word) | EMPTY, Release);
        }
        let forward = match waiter.woken {
            Some(kind @ (Kind::One | Kind::Last)) => notify.notify_locked(&mut list, kind),
            _ => None,
        };
        drop(list);
        drop(waiter);
        if let Some(waker) = forward {
            waker.wake();
        }
    }
}

/// The future of [`Notify::notified`]: completes when the `Notify` is notified.
///
/// Also reachable as `netloop_sync::futures::Notified`.
pub struct Notified<'a> {
    notify: &'a Notify,
    wait: Wait,
    _pinned: PhantomPinned,
}

impl Notified<'_> {
    /// Joins the wait queue without polling, so that a `notify_one` or `notify_last`
    /// from now on can pick this future; returns `true` if it has already been
    /// notified (a later poll then completes at once).
    ///
    /// Useful to register interest before checking a condition, then await.
    pub fn enable(self: Pin<&mut Self>) -> bool {
        let this = self.project();
        this.wait.poll(this.notify, None).is_ready()
    }

    fn project(self: Pin<&mut Self>) -> &mut Self {
        // SAFETY: nothing in `Notified` is structurally pinned (the list holds a key,
        // not a pointer to the future), and no field is moved out of `self`.
        unsafe { self.get_unchecked_mut() }
    }
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // A task trace stops here, before a notification is taken (tokio_unstable).
        #[cfg(tokio_unstable)]
        std::task::ready!(netloop_reactor::trace::trace_leaf(cx));
        let this = self.project();
        this.wait.poll(this.notify, Some(cx.waker()))
    }
}

impl Drop for Notified<'_> {
    fn drop(&mut self) {
        self.wait.cancel(self.notify);
    }
}

impl fmt::Debug for Notified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notified")
            .field("notify", self.notify)
            .field("stage", &self.wait.stage)
            .finish()
    }
}

/// The future of [`Notify::notified_owned`]: like [`Notified`], owning an `Arc<Notify>`.
///
/// Also reachable as `netloop_sync::futures::OwnedNotified`.
pub struct OwnedNotified {
    notify: Arc<Notify>,
    wait: Wait,
    _pinned: PhantomPinned,
}

impl OwnedNotified {
    /// Joins the wait queue without polling; returns `true` if already notified. See
    /// [`Notified::enable`].
    pub fn enable(self: Pin<&mut Self>) -> bool {
        let this = self.project();
        this.wait.poll(&this.notify, None).is_ready()
    }

    fn project(self: Pin<&mut Self>) -> &mut Self {
        // SAFETY: as for `Notified`: nothing is structurally pinned and nothing moves.
        unsafe { self.get_unchecked_mut() }
    }
}

impl Future for OwnedNotified {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // A task trace stops here, before a notification is taken (tokio_unstable).
        #[cfg(tokio_unstable)]
        std::task::ready!(netloop_reactor::trace::trace_leaf(cx));
        let this = self.project();
        this.wait.poll(&this.notify, Some(cx.waker()))
    }
}

impl Drop for OwnedNotified {
    fn drop(&mut self) {
        self.wait.cancel(&self.notify);
    }
}

impl fmt::Debug for OwnedNotified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedNotified")
            .field("notify", &*self.notify)
            .field("stage", &self.wait.stage)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use futures::task::noop_waker;

    #[test]
    fn one_permit_is_stored_however_many_calls() {
        let n = Notify::new();
        n.notify_one();
        n.notify_one();
        assert!(n.notified().now_or_never().is_some());
        assert!(n.notified().now_or_never().is_none());
    }

    #[test]
    fn notify_waiters_reaches_only_existing_futures() {
        let n = Notify::new();
        let before = n.notified();
        n.notify_waiters();
        let after = n.notified();
        assert!(before.now_or_never().is_some());
        assert!(after.now_or_never().is_none());
    }

    #[test]
    fn dropped_pick_passes_the_notification_on() {
        let n = Notify::new();
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut a = Box::pin(n.notified());
        let mut b = Box::pin(n.notified());
        assert!(a.as_mut().poll(&mut cx).is_pending());
        assert!(b.as_mut().poll(&mut cx).is_pending());
        n.notify_one();
        drop(a);
        assert!(b.as_mut().poll(&mut cx).is_ready());
        drop(b);
        // Nobody left: nothing stored by the hand-over.
        assert!(n.notified().now_or_never().is_none());
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::future::block_on;
    use loom::thread;

    /// notify_one racing the drop of a queued waiter that it may pick: the
    /// notification reaches the surviving waiter, never lost.
    #[test]
    fn notify_one_vs_drop_of_a_waiter() {
        loom::model(|| {
            let n = Arc::new(Notify::new());
            let mut a = Box::pin(n.clone().notified_owned());
            let mut b = Box::pin(n.clone().notified_owned());
            assert!(!a.as_mut().enable());
            assert!(!b.as_mut().enable());
            let t = thread::spawn(move || drop(a));
            n.notify_one();
            t.join().unwrap();
            block_on(b);
        });
    }

    /// A ping-pong over two `Notify`s: each notify_one races the other side's wait,
    /// and is either taken by the waiter or stored for it.
    #[test]
    fn ping_pong() {
        loom::model(|| {
            let ping = Arc::new(Notify::new());
            let pong = Arc::new(Notify::new());
            let (ping2, pong2) = (ping.clone(), pong.clone());
            let t = thread::spawn(move || {
                block_on(ping2.notified());
                pong2.notify_one();
            });
            ping.notify_one();
            block_on(pong.notified());
            t.join().unwrap();
        });
    }

    /// notify_waiters against a future being enabled on another thread: a future
    /// created before the call always completes.
    #[test]
    fn notify_waiters_vs_enable() {
        loom::model(|| {
            let n = Arc::new(Notify::new());
            let mut f = Box::pin(n.clone().notified_owned());
            let n2 = n.clone();
            let t = thread::spawn(move || n2.notify_waiters());
            f.as_mut().enable();
            block_on(f);
            t.join().unwrap();
        });
    }
}
