//! `PollEvented`: a mio source registered with one loop.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicU8;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, ready};

use mio::event::Source;
use mio::unix::SourceFd;

use super::readiness::{Readiness, ReadyEvent};
use super::ready::Direction;
use super::{Interest, Ready};
use crate::context;
use crate::coop;
use crate::handle::EventLoopHandle;
use crate::shared::Shared;
use crate::sync::lock;

fn shut_down_error() -> io::Error {
    crate::error::LoopShutDown::io_error()
}

/// A registration with a loop's `Poll`: the readiness cache and the two wakers.
///
/// Owned by a [`PollEvented`]; dropping it forgets the registration on the loop.
pub struct Registration {
    shared: Arc<Shared>,
    io: Arc<Readiness>,
    /// False for a [`shut_down`](Registration::shut_down) registration: its source
    /// never joined the loop's `Poll` nor its registration set, so nothing is undone.
    in_poll: bool,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("loop", &self.shared.id)
            .field("token", &self.io.token().0)
            .finish()
    }
}

impl Registration {
    fn new<S: Source>(handle: &EventLoopHandle, source: &mut S, interest: Interest) -> io::Result<Registration> {
        let shared = handle.shared.clone();
        let io = shared.io.insert().ok_or_else(shut_down_error)?;
        if let Err(e) = shared.registry.register(source, io.token(), interest) {
            shared.io.remove(&io);
            return Err(e);
        }
        #[cfg(tokio_unstable)]
        shared.unstable.count_registration();
        // Readiness is only delivered by a running loop: a registration counts as the
        // first use of a lazily started one.
        shared.ensure_started();
        Ok(Registration {
            shared,
            io,
            in_poll: true,
        })
    }

    /// A registration for a source whose loop shut down before the source joined it
    /// (a deferred source first used after its runtime was dropped): ready in
    /// `assumed` and shut down, never in the loop's `Poll`. Operations behave as on a
    /// registration the loop shut down: the assumed readiness still lets a `try_`
    /// operation run (data already in the socket is read, as with tokio), and once an
    /// operation clears it, every use fails with the shutdown error.
    fn shut_down(handle: &EventLoopHandle, assumed: Ready) -> Registration {
        // Not in the registration set: its key names no slot, so nothing can remove
        // another registration through it, and no event can carry its token.
        let io = Arc::new(Readiness::new(usize::MAX));
        io.assume_ready(assumed);
        io.shutdown(&mut Vec::new());
        Registration {
            shared: handle.shared.clone(),
            io,
            in_poll: false,
        }
    }

    /// The loop this registration belongs to.
    pub fn handle(&self) -> EventLoopHandle {
        EventLoopHandle {
            shared: self.shared.clone(),
        }
    }

    /// Ready when `direction` is ready; spends one unit of the task's cooperative
    /// budget. Fails once the loop has shut down.
    ///
    /// Readiness is looked at first: an operation that has to wait spends no budget
    /// (tokio gives the unit back in that case), so the wait skips the budget's
    /// thread-local altogether. A ready operation with no budget left returns
    /// `Pending` and has its task woken to run again later, as with tokio.
    #[inline]
    pub fn poll_ready(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<io::Result<ReadyEvent>> {
        #[cfg(tokio_unstable)]
        ready!(crate::trace::trace_leaf(cx));
        let event = ready!(self.io.poll_ready(cx, direction));
        if event.is_shutdown {
            return Poll::Ready(Err(shut_down_error()));
        }
        ready!(coop::poll_proceed(cx)).made_progress();
        Poll::Ready(Ok(event))
    }

    /// [`poll_ready`](Self::poll_ready) for a readiness future that other tasks may
    /// await on the same direction at once (`accept` on a shared listener,
    /// `readable`): every one of them is woken by the next event, where `poll_ready`
    /// wakes only the last waker it was given.
    #[inline]
    ///
    /// Unlike `poll_ready` it spends no budget: a readiness future (`readable`,
    /// `writable`, `ready`) does no I/O itself, and tokio's do not spend budget either.
    /// The operations that wait this way ([`poll_io_shared`](Self::poll_io_shared))
    /// spend it.
    pub fn poll_ready_shared(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<io::Result<ReadyEvent>> {
        self.poll_shared_wait(cx, direction, false)
    }

    /// [`poll_ready_shared`](Self::poll_ready_shared), ready also when the socket
    /// reports an error and nothing else: tokio's `Interest::ERROR`, which waits on
    /// the read side. An operation's own waits never end on an error alone.
    pub fn poll_ready_shared_or_error(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
    ) -> Poll<io::Result<ReadyEvent>> {
        self.poll_shared_wait(cx, direction, true)
    }

    /// The shared wait of both: `errors`, an error alone ends it.
    #[inline]
    fn poll_shared_wait(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        errors: bool,
    ) -> Poll<io::Result<ReadyEvent>> {
        #[cfg(tokio_unstable)]
        ready!(crate::trace::trace_leaf(cx));
        let event = if errors {
            ready!(self.io.poll_ready_shared_or_error(cx, direction))
        } else {
            ready!(self.io.poll_ready_shared(cx, direction))
        };
        if event.is_shutdown {
            return Poll::Ready(Err(shut_down_error()));
        }
        Poll::Ready(Ok(event))
    }

    /// [`poll_shared_wait`](Self::poll_shared_wait), spending one unit of budget once
    /// ready, as `poll_ready` does.
    #[inline]
    fn poll_shared_wait_spending(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        errors: bool,
    ) -> Poll<io::Result<ReadyEvent>> {
        let event = ready!(self.poll_shared_wait(cx, direction, errors))?;
        ready!(coop::poll_proceed(cx)).made_progress();
        Poll::Ready(Ok(event))
    }

    /// Forgets the readiness in `event` unless a newer event has arrived since.
    #[inline]
    pub fn clear_readiness(&self, event: ReadyEvent) {
        self.io.clear_readiness(event);
    }

    /// Marks the registration ready in `ready`'s directions without waiting for an
    /// event, so the next operation tries the socket at once (an accepted
    /// connection's first request is usually there already). An operation that
    /// finds nothing clears it as usual; nobody is woken.
    pub fn assume_ready(&self, ready: Ready) {
        self.io.assume_ready(ready);
    }

    /// Runs `op` until it succeeds or fails with something other than `WouldBlock`,
    /// waiting for readiness in between (and clearing stale readiness).
    pub fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_with(cx, direction, Self::poll_ready, || op().map(|r| (r, false)))
    }

    /// [`poll_io`](Self::poll_io) for an operation that can tell it drained the source
    /// (a short read: the socket is empty; a short write: its buffer is full). It
    /// returns `(result, drained)`; a drained source's readiness is cleared at once,
    /// saving the `WouldBlock` call the next operation would otherwise make.
    #[inline]
    pub fn poll_io_draining<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        op: impl FnMut() -> io::Result<(R, bool)>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_with(cx, direction, Self::poll_ready, op)
    }

    /// [`poll_io`](Self::poll_io) waiting as [`poll_ready_shared`](Self::poll_ready_shared)
    /// does: for operations several tasks may await at once.
    pub fn poll_io_shared<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_with(
            cx,
            direction,
            |r, cx, d| r.poll_shared_wait_spending(cx, d, false),
            || op().map(|r| (r, false)),
        )
    }

    /// [`poll_io_shared`](Self::poll_io_shared) whose wait also ends on an error alone:
    /// tokio's `async_io(Interest::READABLE | Interest::ERROR, ..)`, which a UDP
    /// socket's async receives use, so that the socket's pending error (an ICMP error)
    /// reaches them.
    pub fn poll_io_shared_or_error<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_with(
            cx,
            direction,
            |r, cx, d| r.poll_shared_wait_spending(cx, d, true),
            || op().map(|r| (r, false)),
        )
    }

    #[inline]
    fn poll_io_with<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        wait: impl Fn(&Self, &mut Context<'_>, Direction) -> Poll<io::Result<ReadyEvent>>,
        mut op: impl FnMut() -> io::Result<(R, bool)>,
    ) -> Poll<io::Result<R>> {
        loop {
            let event = ready!(wait(self, cx, direction))?;
            match op() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.clear_readiness(event),
                Err(e) => return Poll::Ready(Err(e)),
                Ok((r, drained)) => {
                    if drained {
                        self.clear_readiness(event);
                    }
                    return Poll::Ready(Ok(r));
                }
            }
        }
    }

    /// Runs `op` once if the cached readiness allows it; `WouldBlock` otherwise (and
    /// when `op` itself would block, which clears the readiness).
    pub fn try_io<R>(&self, direction: Direction, op: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        let event = self
            .io
            .ready_now(direction)
            .ok_or_else(|| io::Error::from(io::ErrorKind::WouldBlock))?;
        // After the loop shut down, readiness seen before still lets the operation run
        // (data already in the socket is read, as with tokio); with none left, the
        // shutdown is the answer rather than a `WouldBlock` that no event will end.
        if event.is_shutdown && event.ready.is_empty() {
            return Err(shut_down_error());
        }
        match op() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.clear_readiness(event);
                Err(e)
            }
            res => res,
        }
    }

    /// Waits until `direction` is ready.
    pub async fn readiness(&self, direction: Direction) -> io::Result<ReadyEvent> {
        std::future::poll_fn(|cx| self.poll_ready(cx, direction)).await
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // The owner deregistered the source first (`PollEvented`'s drop and
        // `into_inner`), so the memory may be released at the loop's next iteration.
        if self.in_poll {
            #[cfg(tokio_unstable)]
            self.shared.unstable.count_deregistration();
            self.shared.io.remove(&self.io);
        }
    }
}

/// An I/O source registered with a loop (tokio's `PollEvented`).
///
/// Dropping it deregisters the source from the loop's `Poll`, then drops the source
/// (closing the socket). It may be moved to a task on another loop: readiness is still
/// delivered by the loop it is registered with, and wakes cross threads correctly.
///
/// A source made with [`new_deferred`](Self::new_deferred) is registered at its first
/// use instead, with the loop that uses it: an accepted connection handed to a task on
/// another loop is then registered there, and its readiness wakes stay on one thread.
pub struct PollEvented<S: Source> {
    source: Option<S>,
    /// Set once: at construction, or at the first use of a deferred source that
    /// registers it.
    registration: OnceLock<Registration>,
    /// What a deferred source registers with; `None` for a source registered at
    /// construction. Immutable after construction.
    deferred: Option<Deferred>,
}

/// What the first use of a deferred source needs to register it.
struct Deferred {
    /// The source's descriptor: it is registered and deregistered through a
    /// `SourceFd`, since only `&self` is at hand at first use.
    fd: RawFd,
    interest: Interest,
    /// The loop used if the first use is on a thread that drives none.
    fallback: EventLoopHandle,
    /// Readiness assumed once registered (see [`Registration::assume_ready`]): a
    /// `Ready`'s bits, changed only before the registration (under `registering`).
    assumed: AtomicU8,
    /// Held while registering: racing first uses register the source once.
    registering: Mutex<()>,
}

impl<S: Source + std::fmt::Debug> std::fmt::Debug for PollEvented<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollEvented")
            .field("source", &self.source)
            .field("registration", &self.registration.get())
            .finish()
    }
}

impl<S: Source> PollEvented<S> {
    /// Registers `source` with the loop driving the current thread.
    pub fn new(source: S, interest: Interest) -> io::Result<Self> {
        let handle = context::with_core(|c| {
            c.map(|c| EventLoopHandle {
                shared: c.shared.clone(),
            })
        })
        .ok_or_else(|| io::Error::other("PollEvented::new called outside an event loop; use new_with(handle, ..)"))?;
        Self::new_with(&handle, source, interest)
    }

    /// Registers `source` with the loop behind `handle`, from any thread.
    pub fn new_with(handle: &EventLoopHandle, mut source: S, interest: Interest) -> io::Result<Self> {
        let registration = Registration::new(handle, &mut source, interest)?;
        Ok(PollEvented {
            source: Some(source),
            registration: OnceLock::from(registration),
            deferred: None,
        })
    }

    /// Takes `source` without registering it yet: its first use (a wait, an
    /// operation, [`registration`](Self::registration)) registers it with the loop
    /// driving that thread, or with `fallback` on a thread that drives none.
    ///
    /// This is how a new connection joins the loop that runs its task (Netty
    /// registers a channel with the loop `next()` gave it): the acceptor does not know
    /// that loop, the first poll does. A registration that fails there (the loop has
    /// shut down, the OS refuses) fails that use; a later use tries again.
    ///
    /// Once `fallback` has shut down, the source is not registered anywhere: its
    /// first use gets a shut-down registration, so it behaves as a source of that
    /// loop would (what is assumed ready may still be tried once, then every use
    /// fails with the shutdown error), even on another live loop's thread.
    pub fn new_deferred(source: S, interest: Interest, fallback: EventLoopHandle) -> Self
    where
        S: AsRawFd,
    {
        PollEvented {
            deferred: Some(Deferred {
                fd: source.as_raw_fd(),
                interest,
                fallback,
                assumed: AtomicU8::new(Ready::EMPTY.bits()),
                registering: Mutex::new(()),
            }),
            source: Some(source),
            registration: OnceLock::new(),
        }
    }

    /// A deferred source is taken as ready in `ready`'s directions as soon as it is
    /// registered (see [`Registration::assume_ready`]); for one registered at
    /// construction, this marks it now.
    pub fn assuming_ready(mut self, ready: Ready) -> Self {
        match (&mut self.deferred, self.registration.get()) {
            (_, Some(registration)) => registration.assume_ready(ready),
            (Some(deferred), None) => *deferred.assumed.get_mut() = ready.bits(),
            (None, None) => unreachable!("a PollEvented is registered at construction unless deferred"),
        }
        self
    }

    /// The source.
    #[inline]
    pub fn get_ref(&self) -> &S {
        self.source.as_ref().expect("source present until drop")
    }

    /// The source, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        self.source.as_mut().expect("source present until drop")
    }

    /// The registration (readiness and wakers); registers a deferred source.
    #[inline]
    pub fn registration(&self) -> io::Result<&Registration> {
        match self.registration.get() {
            Some(registration) => Ok(registration),
            None => self.register_deferred(),
        }
    }

    /// The first use of a deferred source (or a use after its registration failed).
    #[cold]
    fn register_deferred(&self) -> io::Result<&Registration> {
        let deferred = self
            .deferred
            .as_ref()
            .expect("a PollEvented is registered at construction unless deferred");
        let _registering = lock(&deferred.registering);
        // A racing first use may have registered it meanwhile.
        if let Some(registration) = self.registration.get() {
            return Ok(registration);
        }
        // The fallback is the loop of the runtime the source came from (an accepted
        // socket's listener's). A source registers with the current loop only while
        // its fallback runs; after that it belongs to the shut-down fallback, and every
        // use reports the shutdown, as tokio's sockets stay with their runtime.
        let fallback_gone = deferred.fallback.is_shutdown();
        let handle = match EventLoopHandle::current() {
            Some(current) if !fallback_gone => current,
            _ => deferred.fallback.clone(),
        };
        let registration = match Registration::new(&handle, &mut SourceFd(&deferred.fd), deferred.interest) {
            Ok(registration) => registration,
            Err(e) if fallback_gone && crate::error::is_loop_shut_down(&e) => {
                Registration::shut_down(&handle, Ready::from_bits(deferred.assumed.load(Relaxed)))
            }
            Err(e) => return Err(e),
        };
        registration.assume_ready(Ready::from_bits(deferred.assumed.load(Relaxed)));
        Ok(self.registration.get_or_init(|| registration))
    }

    /// Itself: the readiness view every socket type's `io` offers (a stream's
    /// `StreamIo::evented` is the other).
    #[inline]
    pub fn evented(&self) -> &PollEvented<S> {
        self
    }

    /// True once the source is registered with a loop's `Poll` (at construction, or at
    /// a deferred source's first readiness use).
    pub fn is_registered(&self) -> bool {
        self.registration.get().is_some()
    }

    /// The loop a deferred source falls back to when first used off every loop; `None`
    /// for a source registered at construction.
    pub(crate) fn deferred_fallback(&self) -> Option<&EventLoopHandle> {
        self.deferred.as_ref().map(|d| &d.fallback)
    }

    /// The readiness a deferred source is taken to have once registered (empty for a
    /// source registered at construction).
    pub(crate) fn deferred_assumed(&self) -> Ready {
        self.deferred
            .as_ref()
            .map_or(Ready::EMPTY, |d| Ready::from_bits(d.assumed.load(Relaxed)))
    }

    /// Changes the readiness a deferred source is taken to have once registered; no
    /// effect once it is registered (its events say what is ready from then on).
    pub(crate) fn set_deferred_assumed(&self, ready: Ready) {
        let Some(deferred) = &self.deferred else { return };
        let _registering = lock(&deferred.registering);
        if self.registration.get().is_none() {
            deferred.assumed.store(ready.bits(), Relaxed);
        }
    }

    /// The loop this source is registered with; `None` while a deferred source has
    /// not been used (or its registration failed).
    pub fn registered_loop(&self) -> Option<EventLoopHandle> {
        self.registration.get().map(Registration::handle)
    }

    /// Deregisters and returns the source.
    pub fn into_inner(mut self) -> io::Result<S> {
        let mut source = self.source.take().expect("source present until drop");
        self.deregister(&mut source)?;
        Ok(source)
    }

    /// Removes `source` from its loop's `Poll`, if it was ever registered.
    fn deregister(&self, source: &mut S) -> io::Result<()> {
        let Some(registration) = self.registration.get().filter(|r| r.in_poll) else {
            return Ok(());
        };
        let registry = &registration.shared.registry;
        match &self.deferred {
            // Registered through a `SourceFd`: mio's own source never saw the
            // registry, so it is deregistered the same way.
            Some(deferred) => registry.deregister(&mut SourceFd(&deferred.fd)),
            None => registry.deregister(source),
        }
    }

    /// See [`Registration::poll_ready`] for reads.
    #[inline]
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<ReadyEvent>> {
        self.registration()?.poll_ready(cx, Direction::Read)
    }

    /// See [`Registration::poll_ready`] for writes.
    #[inline]
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<ReadyEvent>> {
        self.registration()?.poll_ready(cx, Direction::Write)
    }

    /// See [`Registration::clear_readiness`]. An event comes from a registration, so
    /// there is one to clear it on.
    #[inline]
    pub fn clear_readiness(&self, event: ReadyEvent) {
        if let Some(registration) = self.registration.get() {
            registration.clear_readiness(event);
        }
    }

    /// A read-side operation on the source, retried across `WouldBlock`.
    pub fn poll_read_io<R>(&self, cx: &mut Context<'_>, op: impl FnMut(&S) -> io::Result<R>) -> Poll<io::Result<R>> {
        self.poll_io(cx, Direction::Read, op)
    }

    /// A write-side operation on the source, retried across `WouldBlock`.
    pub fn poll_write_io<R>(&self, cx: &mut Context<'_>, op: impl FnMut(&S) -> io::Result<R>) -> Poll<io::Result<R>> {
        self.poll_io(cx, Direction::Write, op)
    }

    /// An operation on the source in `direction`, retried across `WouldBlock`; see
    /// [`Registration::poll_io`].
    pub fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_draining(cx, direction, |source| op(source).map(|r| (r, false)))
    }

    /// An operation on the source that can tell it drained it; see
    /// [`Registration::poll_io_draining`].
    #[inline]
    pub fn poll_io_draining<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut(&S) -> io::Result<(R, bool)>,
    ) -> Poll<io::Result<R>> {
        let source = self.get_ref();
        self.registration()?.poll_io_draining(cx, direction, || op(source))
    }

    /// An operation on the source that several tasks may await at once, retried
    /// across `WouldBlock`; see [`Registration::poll_io_shared`].
    pub fn poll_io_shared<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        let source = self.get_ref();
        self.registration()?.poll_io_shared(cx, direction, || op(source))
    }

    /// [`poll_io_shared`](Self::poll_io_shared) whose wait an error alone ends; see
    /// [`Registration::poll_io_shared_or_error`].
    pub fn poll_io_shared_or_error<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        let source = self.get_ref();
        self.registration()?
            .poll_io_shared_or_error(cx, direction, || op(source))
    }

    /// Readiness of `direction` for a future several tasks may await at once; see
    /// [`Registration::poll_ready_shared`].
    pub fn poll_ready_shared(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<io::Result<ReadyEvent>> {
        self.registration()?.poll_ready_shared(cx, direction)
    }

    /// Readiness of `direction` or an error; see
    /// [`Registration::poll_ready_shared_or_error`].
    pub fn poll_ready_shared_or_error(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
    ) -> Poll<io::Result<ReadyEvent>> {
        self.registration()?.poll_ready_shared_or_error(cx, direction)
    }

    /// One non-waiting attempt; see [`Registration::try_io`].
    pub fn try_io<R>(&self, direction: Direction, op: impl FnOnce(&S) -> io::Result<R>) -> io::Result<R> {
        let source = self.get_ref();
        self.registration()?.try_io(direction, || op(source))
    }
}

impl<S: Source> Drop for PollEvented<S> {
    fn drop(&mut self) {
        if let Some(mut source) = self.source.take() {
            // Best effort: the loop may already have closed its Poll.
            let _ = self.deregister(&mut source);
        }
    }
}

impl EventLoopHandle {
    /// Registers an I/O source with this loop's `Poll`. The returned [`PollEvented`]
    /// caches readiness and deregisters the source when dropped.
    pub fn register<S: mio::event::Source>(&self, source: S, interest: Interest) -> io::Result<PollEvented<S>> {
        PollEvented::new_with(self, source, interest)
    }
}
