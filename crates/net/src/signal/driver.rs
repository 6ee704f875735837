//! Each runtime's signal driver: a task on one of its loops that reads the self-pipe
//! and broadcasts what the handlers recorded.
//!
//! Every runtime that has created a [`Signal`](super::unix::Signal) runs one driver, on
//! its own descriptor of the pipe's read end. Whichever driver reads first broadcasts to
//! all listeners of the process, so dropping one runtime starves no listener of another.

use std::io;
use std::sync::Mutex;

use netloop_scheduler::runtime::{Handle, Id};
use netloop_scheduler::sync::lock;

use super::registry;
use crate::UnixStream;

/// Runtimes whose driver task is alive.
static DRIVEN: Mutex<Vec<Id>> = Mutex::new(Vec::new());

/// Starts `handle`'s driver unless it runs already.
pub(super) fn ensure_driver(handle: &Handle) -> io::Result<()> {
    if handle.event_loops().iter().all(|l| l.is_shutting_down()) {
        return Err(io::Error::other("signal driver gone"));
    }
    let id = handle.id();
    let mut driven = lock(&DRIVEN);
    if driven.contains(&id) {
        return Ok(());
    }
    let receiver = registry::globals().receiver()?;
    driven.push(id);
    drop(driven);
    // The mark goes when the task does: at the runtime's shutdown, or on a pipe error.
    let unmark = Unmark(id);
    handle.spawn(async move {
        let _unmark = unmark;
        drive(receiver).await;
    });
    Ok(())
}

async fn drive(receiver: std::os::unix::net::UnixStream) {
    // On readiness, whatever the loop's driver (not `from_std`, which would put it on
    // an io_uring loop's ring): the self-pipe is the process's, shared by every
    // runtime's driver, which only waits for it to be readable and drains it.
    let receiver = match receiver
        .set_nonblocking(true)
        .and_then(|()| UnixStream::new(mio::net::UnixStream::from_std(receiver)))
    {
        Ok(receiver) => receiver,
        Err(e) => {
            tracing::error!(target: "netloop::signal", "signal driver cannot register the self-pipe: {e}");
            return;
        }
    };
    let mut buf = [0u8; 128];
    loop {
        if let Err(e) = receiver.readable().await {
            tracing::error!(target: "netloop::signal", "signal driver stops: {e}");
            return;
        }
        // Drain first, then broadcast: a signal that arrives after the drain leaves a
        // byte behind, so the next readiness covers it.
        loop {
            match receiver.try_read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::error!(target: "netloop::signal", "signal driver stops: {e}");
                    return;
                }
            }
        }
        registry::broadcast();
    }
}

struct Unmark(Id);

impl Drop for Unmark {
    fn drop(&mut self) {
        lock(&DRIVEN).retain(|id| *id != self.0);
    }
}
