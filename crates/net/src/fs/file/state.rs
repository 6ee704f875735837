//! A `File`'s state: idle with its buffer, or busy with one operation on the blocking
//! pool (see the invariants in `file`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use netloop_scheduler::task::{JoinHandle, spawn_blocking};

use super::buf::Buf;
use crate::fs::join_error;

pub(super) struct Inner {
    pub(super) state: State,
    /// The kind of a background write's error, not yet reported.
    pub(super) last_write_err: Option<io::ErrorKind>,
    /// The position after the last completed seek.
    pub(super) pos: u64,
}

pub(super) enum State {
    /// `None` only while an operation is being started.
    Idle(Option<Buf>),
    Busy(JoinHandle<(Operation, Buf)>),
}

/// What an operation on the pool did, by kind.
pub(super) enum Operation {
    Read(io::Result<usize>),
    Write(io::Result<()>),
    Seek(io::Result<u64>),
}

impl Inner {
    pub(super) fn new() -> Inner {
        Inner {
            state: State::Idle(Some(Buf::default())),
            last_write_err: None,
            pos: 0,
        }
    }

    /// The idle file's buffer, taken out to start an operation with; `None` while an
    /// operation is in flight.
    pub(super) fn take_idle_buf(&mut self) -> Option<Buf> {
        match &mut self.state {
            State::Idle(slot) => Some(slot.take().unwrap_or_default()),
            State::Busy(_) => None,
        }
    }

    /// Starts `op` on the blocking pool, with the file and `buf`: the file is busy
    /// until the operation's outcome and the buffer come back.
    pub(super) fn start(
        &mut self,
        file: &Arc<std::fs::File>,
        mut buf: Buf,
        op: impl FnOnce(&std::fs::File, &mut Buf) -> Operation + Send + 'static,
    ) {
        let file = file.clone();
        self.state = State::Busy(spawn_blocking(move || {
            let done = op(&file, &mut buf);
            (done, buf)
        }));
    }

    /// The idle file's buffer.
    ///
    /// # Panics
    ///
    /// While an operation is in flight.
    pub(super) fn idle_buf(&mut self) -> &mut Buf {
        match &mut self.state {
            State::Idle(slot) => slot.get_or_insert_with(Buf::default),
            State::Busy(_) => unreachable!("idle_buf on a busy file"),
        }
    }

    /// Waits for the operation in flight and makes the file idle again, with the
    /// buffer the operation gives back: its outcome is the caller's to report (a
    /// write's error, a seek's position).
    ///
    /// # Errors
    ///
    /// When the pool could not run the operation (shut down) or it panicked: the
    /// buffer is gone with it, and the file starts over with an empty one.
    pub(super) fn poll_done(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Operation>> {
        let State::Busy(handle) = &mut self.state else {
            unreachable!("poll_done on an idle file")
        };
        match ready!(Pin::new(handle).poll(cx)) {
            Ok((op, buf)) => {
                self.state = State::Idle(Some(buf));
                Poll::Ready(Ok(op))
            }
            Err(e) => {
                self.state = State::Idle(Some(Buf::default()));
                Poll::Ready(Err(join_error(e)))
            }
        }
    }

    /// `poll_flush`: waits for the operation in flight, reporting a write's error.
    pub(super) fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(kind) = self.last_write_err.take() {
            return Poll::Ready(Err(kind.into()));
        }
        if let State::Idle(_) = self.state {
            return Poll::Ready(Ok(()));
        }
        match ready!(self.poll_done(cx))? {
            Operation::Write(Err(e)) => Poll::Ready(Err(e)),
            Operation::Seek(Ok(pos)) => {
                self.pos = pos;
                Poll::Ready(Ok(()))
            }
            _ => Poll::Ready(Ok(())),
        }
    }

    /// Waits for the operation in flight; any write error is kept for later.
    pub(super) async fn complete_inflight(&mut self) {
        std::future::poll_fn(|cx| match ready!(self.poll_flush(cx)) {
            Err(e) => {
                self.last_write_err = Some(e.kind());
                Poll::Ready(())
            }
            Ok(()) => Poll::Ready(()),
        })
        .await
    }
}
