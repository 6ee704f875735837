//! A channel for sending a single value from one task to another.
//!
//! [`channel`] returns a [`Sender`] and a [`Receiver`]. The sender sends at most once
//! ([`Sender::send`] consumes it); the receiver is a future that resolves to the value,
//! or to [`RecvError`] if the sender was dropped without sending.
//! Either side notices when the other goes away: the receiver through its error, the
//! sender through [`Sender::is_closed`] and [`Sender::closed`].
//!
//! ```
//! use netloop_sync::oneshot;
//!
//! let (tx, rx) = oneshot::channel();
//! std::thread::spawn(move || tx.send(3).unwrap());
//! assert_eq!(futures::executor::block_on(rx), Ok(3));
//! ```
//!
//! The channel is one allocation: an atomic state word, the value's cell and the two
//! sides' waker cells. No lock: the state word says who may touch which cell when.
//!
//! - The sender writes the value before the read-modify-write that publishes it
//!   (`COMPLETE | HAS_VALUE`), and only if `CLOSED` is not set yet; the receiver reads
//!   it only after seeing `HAS_VALUE`, and at most once, as it lets go of the channel.
//!   If the receiver closed first, the publishing fails and the sender takes its value
//!   back: exactly one side moves the value out.
//! - Each waker cell belongs to one side (the receiver's to the receiver, the sender's
//!   to the sender) while its `*_TASK_SET` bit is clear. Setting the bit hands the
//!   other side a right to read it (to wake it by reference) until the owner clears the
//!   bit again. The other side reads only if the read-modify-write by which it finished
//!   (`COMPLETE` for the sender, `CLOSED` for the receiver) saw the bit set; the owner,
//!   once it sees that the other side finished, no longer writes the cell and leaves
//!   the bit set, so that the last one out drops the waker.

use std::fmt;
use std::future::Future;
use std::mem::MaybeUninit;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use netloop_reactor::coop;

use self::error::{RecvError, TryRecvError};

/// The receiver's waker cell holds a waker that the sender may wake.
const RX_TASK_SET: usize = 0b0_0001;
/// The sender is done with the channel: it sent its value (then `HAS_VALUE` is set
/// with it) or was dropped. The classic design's "value sent" bit.
const COMPLETE: usize = 0b0_0010;
/// The receiver closed the channel or was dropped.
const CLOSED: usize = 0b0_0100;
/// The sender's waker cell holds a waker that the receiver may wake.
const TX_TASK_SET: usize = 0b0_1000;
/// The value's cell holds the sent value (set together with `COMPLETE`, never after
/// `CLOSED`). It stays set once the receiver moved the value out: the receiver does so
/// only as it lets go of the channel, so nobody looks at the bit afterwards.
const HAS_VALUE: usize = 0b1_0000;

/// The errors of a oneshot channel's receiving side.
pub mod error {
    use std::fmt;

    /// The error of awaiting a [`Receiver`](super::Receiver): the sender was dropped
    /// without sending a value.
    #[derive(Debug, Eq, PartialEq, Clone)]
    pub struct RecvError(pub(super) ());

    impl fmt::Display for RecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("channel closed")
        }
    }

    impl std::error::Error for RecvError {}

    /// The error of [`Receiver::try_recv`](super::Receiver::try_recv).
    #[derive(Debug, Eq, PartialEq, Clone)]
    pub enum TryRecvError {
        /// No value yet, and the sender is still there.
        Empty,
        /// No value will come: the sender was dropped without sending, the receiver
        /// closed the channel, or the value was already received.
        Closed,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                TryRecvError::Empty => "channel empty",
                TryRecvError::Closed => "channel closed",
            })
        }
    }

    impl std::error::Error for TryRecvError {}
}

struct Inner<T> {
    state: AtomicUsize,
    /// Written by the sender before it publishes `HAS_VALUE`; read once, by the
    /// receiver after seeing `HAS_VALUE`, or by the sender if publishing failed.
    value: UnsafeCell<MaybeUninit<T>>,
    /// Woken when the sender completes. Guarded by `RX_TASK_SET`.
    rx_waker: WakerCell,
    /// Woken when the receiver closes. Guarded by `TX_TASK_SET`.
    tx_waker: WakerCell,
}

// SAFETY: the cells are reached only as the state word's protocol allows (see the
// module's comment): the value moves from the sending thread to the receiving one
// (hence `T: Send`) and is never shared by reference; wakers are `Send + Sync`.
unsafe impl<T: Send> Send for Inner<T> {}
// SAFETY: as for `Send`: shared access to `Inner` hands out no `&T`.
unsafe impl<T: Send> Sync for Inner<T> {}

// The protocol keeps the state consistent across a panic in user code (a waker's wake
// or drop, a value's drop): no later call trusts something left half-done. The lock
// this replaced made the channel unwind safe, and it stays so.
impl<T> UnwindSafe for Inner<T> {}
impl<T> RefUnwindSafe for Inner<T> {}

/// A waker slot, initialized exactly while its `*_TASK_SET` bit is set (or while its
/// owner, having cleared the bit, is between dropping the old waker and storing a new
/// one). The unsafe methods' callers hold the right the bit protocol gives them.
struct WakerCell(UnsafeCell<MaybeUninit<Waker>>);

impl WakerCell {
    fn new() -> Self {
        WakerCell(UnsafeCell::new(MaybeUninit::uninit()))
    }

    /// # Safety
    ///
    /// The cell holds a waker, and nobody writes it meanwhile.
    unsafe fn will_wake(&self, waker: &Waker) -> bool {
        // SAFETY: initialized and not written concurrently, per the caller.
        self.0.with(|p| unsafe { (*p).assume_init_ref() }.will_wake(waker))
    }

    /// # Safety
    ///
    /// The cell holds a waker, and nobody writes it meanwhile.
    unsafe fn wake_by_ref(&self) {
        // SAFETY: initialized and not written concurrently, per the caller.
        self.0.with(|p| unsafe { (*p).assume_init_ref() }.wake_by_ref());
    }

    /// # Safety
    ///
    /// The caller owns the cell (nobody else reads or writes it meanwhile) and it is
    /// empty.
    unsafe fn store(&self, waker: Waker) {
        // SAFETY: exclusive access, per the caller; overwriting an empty slot leaks
        // nothing.
        self.0.with_mut(|p| unsafe { (*p).write(waker) });
    }

    /// # Safety
    ///
    /// The caller owns the cell and it holds a waker; the cell is empty afterwards.
    unsafe fn drop_waker(&self) {
        // SAFETY: exclusive access to an initialized slot, per the caller.
        self.0.with_mut(|p| unsafe { (*p).assume_init_drop() });
    }
}

impl<T> Inner<T> {
    fn state(&self) -> usize {
        self.state.load(Acquire)
    }

    /// Publishes the sender's completion (`COMPLETE | extra`), unless the receiver
    /// closed first; wakes the receiver if it registered. Returns the state before:
    /// if it has `CLOSED`, nothing was published (and nobody woken).
    fn complete(&self, extra: usize) -> usize {
        let mut prev = self.state.load(Relaxed);
        loop {
            if prev & CLOSED != 0 {
                return prev;
            }
            // AcqRel: releases the value written before; acquires the receiver's waker.
            match self
                .state
                .compare_exchange_weak(prev, prev | COMPLETE | extra, AcqRel, Relaxed)
            {
                Ok(_) => break,
                Err(actual) => prev = actual,
            }
        }
        if prev & RX_TASK_SET != 0 {
            // SAFETY: our completing write saw `RX_TASK_SET`: the receiver's waker is
            // stored, and from now on the receiver sees `COMPLETE` and never writes it.
            unsafe { self.rx_waker.wake_by_ref() };
        }
        prev
    }

    /// Marks the receiver gone or closed; wakes the sender if it waits in `closed()`.
    /// Returns the state before.
    fn close(&self) -> usize {
        // AcqRel: acquires the value (if sent) and the sender's waker.
        let prev = self.state.fetch_or(CLOSED, AcqRel);
        // Only the first close wakes (a `close()` and then the drop close twice).
        if prev & (TX_TASK_SET | COMPLETE | CLOSED) == TX_TASK_SET {
            // SAFETY: our closing write saw `TX_TASK_SET` while the sender was still
            // there: its waker is stored, and from now on the sender sees `CLOSED` and
            // never writes it.
            unsafe { self.tx_waker.wake_by_ref() };
        }
        prev
    }

    /// Moves the value out if `state` (read by the receiver) says the cell holds one.
    ///
    /// # Safety
    ///
    /// Called by the receiver, with a state it read with acquire ordering, at most once
    /// per channel: the receiver lets go of the channel right after.
    unsafe fn take_value(&self, state: usize) -> Option<T> {
        if state & HAS_VALUE == 0 {
            return None;
        }
        // SAFETY: `HAS_VALUE` was published after the value was written (and the
        // acquire read made the write visible); the sender no longer touches the cell,
        // and the caller reads it only this once.
        Some(self.value.with(|p| unsafe { (*p).assume_init_read() }))
    }

    /// Stores `waker` in `cell` (guarded by `bit`) so that the other side's finishing
    /// write (`done`) wakes it, replacing a different waker stored by an earlier poll.
    /// `state` is what the caller just read, without `done`. Returns `Err(state)` with
    /// `done` set if the other side finished meanwhile (then nobody will wake us).
    ///
    /// # Safety
    ///
    /// Called only by the cell's owner (the receiver for `rx_waker`, the sender for
    /// `tx_waker`), with the matching `bit` and `done`, never after seeing `done`.
    unsafe fn register(
        &self,
        cell: &WakerCell,
        bit: usize,
        done: usize,
        waker: &Waker,
        mut state: usize,
    ) -> Result<(), usize> {
        if state & bit != 0 {
            // SAFETY: the bit is set, so the cell holds our last waker; only we write
            // it, and the other side at most reads it.
            if unsafe { cell.will_wake(waker) } {
                return Ok(());
            }
            state = self.state.fetch_and(!bit, AcqRel);
            if state & done != 0 {
                // The other side may be waking the old waker right now: leave the cell
                // alone and set the bit back, so that the channel's drop frees it.
                self.state.fetch_or(bit, AcqRel);
                return Err(state);
            }
            // SAFETY: the bit is clear and the other side has not finished: it reads
            // the cell only if its finishing write sees the bit, so the cell is ours.
            unsafe { cell.drop_waker() };
        }
        // SAFETY: the bit is clear (and the cell empty): the cell is ours until we set
        // the bit.
        unsafe { cell.store(waker.clone()) };
        state = self.state.fetch_or(bit, AcqRel);
        if state & done != 0 {
            // The other side finished before seeing the bit: no wake is coming. The
            // bit stays set so that the channel's drop frees the waker.
            return Err(state);
        }
        Ok(())
    }
}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        // The last `Arc`'s drop ordered every access of both sides before this one.
        let state = self.state.load(Relaxed);
        if state & RX_TASK_SET != 0 {
            // SAFETY: the bit says the cell holds a waker; nobody else is left.
            unsafe { self.rx_waker.drop_waker() };
        }
        if state & TX_TASK_SET != 0 {
            // SAFETY: as for the receiver's waker.
            unsafe { self.tx_waker.drop_waker() };
        }
        // The value needs nothing: whichever side moved it in or was handed it back
        // moved it out (a receiver moves it out as it lets go of the channel).
    }
}

/// Creates a oneshot channel: the [`Sender`] sends one value to the [`Receiver`].
#[cfg_attr(all(tokio_unstable, feature = "tracing"), track_caller)]
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Inner {
        state: AtomicUsize::new(0),
        value: UnsafeCell::new(MaybeUninit::uninit()),
        rx_waker: WakerCell::new(),
        tx_waker: WakerCell::new(),
    });
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    let spans = ChannelSpans::new(std::panic::Location::caller());
    (
        Sender {
            inner: Some(inner.clone()),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            resource_span: spans.resource.clone(),
        },
        Receiver {
            inner: Some(inner),
            #[cfg(all(tokio_unstable, feature = "tracing"))]
            spans,
        },
    )
}

/// tokio's spans of a channel (`--cfg tokio_unstable` and its `tracing`): the
/// `runtime.resource` span `Sender|Receiver`, with the receiver's async op
/// (`Receiver::await`) and its poll span, in the order they are dropped.
#[cfg(all(tokio_unstable, feature = "tracing"))]
struct ChannelSpans {
    resource: tracing::Span,
    async_op: tracing::Span,
    async_op_poll: tracing::Span,
}

#[cfg(all(tokio_unstable, feature = "tracing"))]
impl ChannelSpans {
    fn new(at: &'static std::panic::Location<'static>) -> ChannelSpans {
        let resource = crate::trace::resource_span!("tokio::sync::oneshot", "Sender|Receiver", at);
        crate::trace::state_update!(resource, tx_dropped = false, tx_dropped.op = "override");
        crate::trace::state_update!(resource, rx_dropped = false, rx_dropped.op = "override");
        crate::trace::state_update!(resource, value_sent = false, value_sent.op = "override");
        crate::trace::state_update!(resource, value_received = false, value_received.op = "override");
        let async_op = resource.in_scope(|| {
            tracing::trace_span!(target: "tokio::sync::oneshot", "runtime.resource.async_op", source = "Receiver::await")
        });
        let async_op_poll = async_op
            .in_scope(|| tracing::trace_span!(target: "tokio::sync::oneshot", "runtime.resource.async_op.poll"));
        ChannelSpans {
            resource,
            async_op,
            async_op_poll,
        }
    }
}

/// tokio's state update `$field = true` of a channel's resource `$span` (nothing
/// without its `tracing`).
macro_rules! channel_update {
    ($span:expr, $field:ident) => {
        #[cfg(all(tokio_unstable, feature = "tracing"))]
        crate::trace::state_update!($span, $field = true, $field.op = "override");
    };
}

/// The sending side of a oneshot channel, made by [`channel`].
///
/// Dropping it without sending makes the receiver resolve to a
/// [`RecvError`].
pub struct Sender<T> {
    /// `None` only while `send` is running.
    inner: Option<Arc<Inner<T>>>,
    /// The channel's resource span.
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    resource_span: tracing::Span,
}

impl<T> Sender<T> {
    /// Sends `t` to the receiver, consuming the sender.
    ///
    /// Returns `Err(t)` if the receiver was dropped or closed: the value is handed back.
    /// `Ok` does not mean that the receiver will take the value: it may still be
    /// dropped before it does.
    pub fn send(mut self, t: T) -> Result<(), T> {
        let inner = self.inner.take().expect("a Sender is used once");
        // SAFETY: until `complete` publishes `HAS_VALUE` the value's cell is the
        // sender's alone, and it is empty (a sender sends once).
        inner.value.with_mut(|p| unsafe { (*p).write(t) });
        if inner.complete(HAS_VALUE) & CLOSED != 0 {
            // SAFETY: publishing failed, so the receiver never reads the cell; we wrote
            // it just above and take it back once.
            return Err(inner.value.with(|p| unsafe { (*p).assume_init_read() }));
        }
        channel_update!(self.resource_span, value_sent);
        Ok(())
    }

    /// Waits until the receiver is dropped or [closed](Receiver::close): a way to stop
    /// computing a value nobody will receive.
    ///
    /// Cancel safe. Only the task that last awaited (or polled) is woken.
    pub async fn closed(&mut self) {
        std::future::poll_fn(|cx| self.poll_closed(cx)).await;
    }

    /// True once the receiver has been dropped or [closed](Receiver::close): a `send`
    /// would fail.
    pub fn is_closed(&self) -> bool {
        let inner = self.inner.as_ref().expect("a Sender is used once");
        inner.state() & CLOSED != 0
    }

    /// Polls for the receiver's drop or close: `Ready` once it happened; otherwise
    /// registers `cx`'s waker (replacing the one of an earlier poll) and returns
    /// `Pending`.
    pub fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let budget = ready!(coop::poll_proceed(cx));
        let inner = self.inner.as_ref().expect("a Sender is used once");
        let state = inner.state();
        if state & CLOSED == 0 {
            // SAFETY: the sender owns `tx_waker` and has not seen `CLOSED`.
            let registered = unsafe { inner.register(&inner.tx_waker, TX_TASK_SET, CLOSED, cx.waker(), state) };
            if registered.is_ok() {
                return Poll::Pending;
            }
        }
        budget.made_progress();
        Poll::Ready(())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else { return };
        // No value goes with this `COMPLETE`, so it may be set even after `CLOSED`.
        let prev = inner.state.fetch_or(COMPLETE, AcqRel);
        if prev & (RX_TASK_SET | CLOSED) == RX_TASK_SET {
            // SAFETY: our completing write saw `RX_TASK_SET` on an open channel: the
            // receiver's waker is stored, and from now on the receiver sees `COMPLETE`
            // and never writes it.
            unsafe { inner.rx_waker.wake_by_ref() };
        }
        channel_update!(self.resource_span, tx_dropped);
    }
}

impl<T: fmt::Debug> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.as_ref().map_or(COMPLETE, |i| i.state());
        f.debug_struct("Sender")
            .field("is_closed", &(state & CLOSED != 0))
            .finish_non_exhaustive()
    }
}

/// The receiving side of a oneshot channel, made by [`channel`]: a future of the value.
///
/// Resolves to `Ok(value)`, or to [`RecvError`] if the sender was
/// dropped without sending. Polling it again after it resolved panics. Awaiting
/// `&mut receiver` is cancel safe: a value sent meanwhile stays for the next await.
pub struct Receiver<T> {
    /// `None` once the value (or the error) was received.
    inner: Option<Arc<Inner<T>>>,
    #[cfg(all(tokio_unstable, feature = "tracing"))]
    spans: ChannelSpans,
}

impl<T> Receiver<T> {
    /// Closes the channel without dropping the receiver: a later `send` fails and a
    /// sender awaiting [`closed`](Sender::closed) wakes. A value sent before the close
    /// can still be taken with [`try_recv`](Receiver::try_recv) or by awaiting.
    pub fn close(&mut self) {
        if let Some(inner) = &self.inner {
            inner.close();
            channel_update!(self.spans.resource, rx_dropped);
        }
    }

    /// True once the receiver has yielded its value or its error (by await or
    /// `try_recv`): it will yield nothing more.
    pub fn is_terminated(&self) -> bool {
        self.inner.is_none()
    }

    /// True if no value is waiting to be received right now (none sent yet, the sender
    /// dropped, or the value already taken).
    pub fn is_empty(&self) -> bool {
        let Some(inner) = &self.inner else { return true };
        inner.state() & HAS_VALUE == 0
    }

    /// Takes the value without waiting.
    ///
    /// `Err(Empty)` if nothing was sent yet (the receiver stays usable);
    /// `Err(Closed)` if the sender was dropped without sending, the channel was closed
    /// with no value in it, or the value was already taken.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let result = match &self.inner {
            None => Err(TryRecvError::Closed),
            Some(inner) => {
                let state = inner.state();
                if state & COMPLETE != 0 {
                    // SAFETY: the receiver, with an acquired state; it lets go of the
                    // channel just below.
                    let value = unsafe { inner.take_value(state) }.ok_or(TryRecvError::Closed);
                    if value.is_ok() {
                        channel_update!(self.spans.resource, value_received);
                    }
                    value
                } else if state & CLOSED != 0 {
                    Err(TryRecvError::Closed)
                } else {
                    return Err(TryRecvError::Empty);
                }
            }
        };
        self.inner = None;
        result
    }

    /// Waits for the value on a thread that may block (not a loop's thread).
    ///
    /// # Panics
    ///
    /// On a loop's thread or inside a runtime's `block_on`.
    #[track_caller]
    pub fn blocking_recv(self) -> Result<T, RecvError> {
        crate::blocking::block_on(self)
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    #[cfg(all(tokio_unstable, feature = "tracing"))]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let spans = std::mem::replace(
            &mut this.spans,
            ChannelSpans {
                resource: tracing::Span::none(),
                async_op: tracing::Span::none(),
                async_op_poll: tracing::Span::none(),
            },
        );
        let polled = {
            let _resource = spans.resource.enter();
            let _async_op = spans.async_op.enter();
            let _poll = spans.async_op_poll.enter();
            let polled = this.poll_recv(cx);
            tracing::trace!(target: "runtime::resource::poll_op", op_name = "poll_recv", is_ready = polled.is_ready());
            if let Poll::Ready(Ok(_)) = &polled {
                channel_update!(spans.resource, value_received);
            }
            polled
        };
        this.spans = spans;
        polled
    }

    #[cfg(not(all(tokio_unstable, feature = "tracing")))]
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_recv(cx)
    }
}

impl<T> Receiver<T> {
    #[inline(always)]
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
        let this = self;
        let Some(inner) = &this.inner else {
            panic!("called after complete");
        };
        let budget = ready!(coop::poll_proceed(cx));
        let mut state = inner.state();
        if state & (COMPLETE | CLOSED) == 0 {
            // SAFETY: the receiver owns `rx_waker` and has not seen `COMPLETE`.
            let registered = unsafe { inner.register(&inner.rx_waker, RX_TASK_SET, COMPLETE, cx.waker(), state) };
            match registered {
                Ok(()) => return Poll::Pending,
                Err(now) => state = now,
            }
        }
        let result = if state & COMPLETE != 0 {
            // SAFETY: the receiver, with an acquired state; it lets go of the channel
            // just below.
            unsafe { inner.take_value(state) }.ok_or(RecvError(()))
        } else {
            Err(RecvError(()))
        };
        budget.made_progress();
        this.inner = None;
        Poll::Ready(result)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let prev = inner.close();
            // SAFETY: the receiver, with the state its acquiring close read, letting go
            // of the channel now.
            drop(unsafe { inner.take_value(prev) });
            channel_update!(self.spans.resource, rx_dropped);
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.as_ref().map(|i| i.state());
        f.debug_struct("Receiver")
            .field("is_terminated", &state.is_none())
            .field("sender_done", &state.is_some_and(|s| s & COMPLETE != 0))
            .field("closed", &state.is_some_and(|s| s & CLOSED != 0))
            .finish()
    }
}

#[cfg(test)]
mod tests;

#[cfg(all(test, loom))]
mod loom_models;
