//! An `AsyncFd`'s readiness waits, each of which hands out a guard: here, above both
//! the `AsyncFd` and its guards, so that neither names the other's file.

use std::future::poll_fn;
use std::io;
use std::os::fd::AsRawFd;
use std::task::{Context, Poll, ready};

use netloop_reactor::io::{Direction, ReadyEvent};

use super::AsyncFd;
use super::guard::{AsyncFdReadyGuard, AsyncFdReadyMutGuard};
use crate::io::Interest;

impl<T: AsRawFd> AsyncFd<T> {
    /// Polls for read readiness. Only the last task to poll is woken (use
    /// [`readable`](Self::readable) to wait from several tasks).
    pub fn poll_read_ready<'a>(&'a self, cx: &mut Context<'_>) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        self.poll_direction(cx, Direction::Read)
            .map_ok(|event| self.guard(event))
    }

    /// [`poll_read_ready`](Self::poll_read_ready) with a guard that gives mutable access.
    pub fn poll_read_ready_mut<'a>(
        &'a mut self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyMutGuard<'a, T>>> {
        let event = ready!(self.poll_direction(cx, Direction::Read))?;
        Poll::Ready(Ok(self.guard_mut(event)))
    }

    /// Polls for write readiness. Only the last task to poll is woken.
    pub fn poll_write_ready<'a>(&'a self, cx: &mut Context<'_>) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        self.poll_direction(cx, Direction::Write)
            .map_ok(|event| self.guard(event))
    }

    /// [`poll_write_ready`](Self::poll_write_ready) with a guard that gives mutable access.
    pub fn poll_write_ready_mut<'a>(
        &'a mut self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyMutGuard<'a, T>>> {
        let event = ready!(self.poll_direction(cx, Direction::Write))?;
        Poll::Ready(Ok(self.guard_mut(event)))
    }

    /// Waits until any readiness in `interest` is there. Several tasks may wait at
    /// once; each is woken. Readiness outside `interest` (say, readable while waiting
    /// for priority data or an error) does not end the wait.
    pub async fn ready(&self, interest: Interest) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        let event = poll_fn(|cx| self.poll_interest(cx, interest)).await?;
        Ok(self.guard(event))
    }

    /// [`ready`](Self::ready) with a guard that gives mutable access.
    pub async fn ready_mut(&mut self, interest: Interest) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        // The wait holds the `&mut` (not a `&` to it), so that the future is `Send`
        // whenever `T` is, `Sync` or not, as tokio's.
        let this = &mut *self;
        let event = poll_fn(move |cx| this.poll_interest(cx, interest)).await?;
        Ok(self.guard_mut(event))
    }

    fn guard(&self, event: ReadyEvent) -> AsyncFdReadyGuard<'_, T> {
        AsyncFdReadyGuard {
            async_fd: self,
            event: Some(event),
        }
    }

    fn guard_mut(&mut self, event: ReadyEvent) -> AsyncFdReadyMutGuard<'_, T> {
        AsyncFdReadyMutGuard {
            async_fd: self,
            event: Some(event),
        }
    }

    /// Waits until the descriptor is readable.
    pub async fn readable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        self.ready(Interest::READABLE).await
    }

    /// Waits until the descriptor is readable; the guard gives mutable access.
    pub async fn readable_mut(&mut self) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        self.ready_mut(Interest::READABLE).await
    }

    /// Waits until the descriptor is writable.
    pub async fn writable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        self.ready(Interest::WRITABLE).await
    }

    /// Waits until the descriptor is writable; the guard gives mutable access.
    pub async fn writable_mut(&mut self) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        self.ready_mut(Interest::WRITABLE).await
    }

    /// Runs `f` each time the descriptor is ready for `interest`, until it returns
    /// something other than `WouldBlock` (which clears the readiness and waits again).
    pub async fn async_io<R>(&self, interest: Interest, mut f: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        loop {
            let mut guard = self.ready(interest).await?;
            if let Ok(result) = guard.try_io(|fd| f(fd.get_ref())) {
                return result;
            }
        }
    }

    /// [`async_io`](Self::async_io) with mutable access to the object.
    pub async fn async_io_mut<R>(
        &mut self,
        interest: Interest,
        mut f: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        loop {
            let mut guard = self.ready_mut(interest).await?;
            if let Ok(result) = guard.try_io(|fd| f(fd.get_mut())) {
                return result;
            }
        }
    }
}
