//! Knowing when a child exits: a pidfd on the loop where the kernel has them (Linux
//! 5.3 and later), `SIGCHLD` otherwise; and reaping children dropped before they exited.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::ExitStatus;
use std::sync::Mutex;
use std::task::{Context, Poll, ready};

use mio::event::Source;
use mio::unix::SourceFd;
use netloop_reactor::io::PollEvented;
use netloop_scheduler::sync::{lock, try_lock};

use crate::registration::register;
use crate::signal::unix::{Signal, SignalKind, signal};

/// What a waiting child's task is woken by.
#[derive(Debug)]
pub(super) enum ExitWatch {
    /// Readable once the process has exited.
    PidFd(PollEvented<PidFd>),
    /// Every `SIGCHLD` to this process: some child changed state; look again.
    Sigchld(Signal),
}

impl ExitWatch {
    /// A watch for `pid`, on this thread's loop (or the runtime's next).
    ///
    /// Invariant for callers: create the watch, then `try_wait`; an exit between the
    /// two is then seen by the watch.
    pub(super) fn new(pid: u32) -> io::Result<ExitWatch> {
        match PidFd::open(pid) {
            Some(pidfd) => Ok(ExitWatch::PidFd(register(pidfd, mio::Interest::READABLE)?)),
            None => Ok(ExitWatch::Sigchld(signal(SignalKind::child())?)),
        }
    }

    /// Waits for the next sign that the child may have exited (perhaps spurious).
    pub(super) fn poll_sign(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            ExitWatch::PidFd(io) => {
                ready!(io.poll_read_ready(cx))?;
                Poll::Ready(Ok(()))
            }
            ExitWatch::Sigchld(signal) => {
                ready!(signal.poll_recv(cx));
                Poll::Ready(Ok(()))
            }
        }
    }
}

/// A process file descriptor: readable once its process has exited.
#[derive(Debug)]
pub(super) struct PidFd(OwnedFd);

impl PidFd {
    /// `pidfd_open(pid)`, or `None` where the kernel has no pidfds.
    #[cfg(target_os = "linux")]
    fn open(pid: u32) -> Option<PidFd> {
        let pid = libc::pid_t::try_from(pid).ok()?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1;
        // it touches no memory of ours.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, libc::PIDFD_NONBLOCK) };
        let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
        // SAFETY: the kernel just returned this descriptor to us alone.
        Some(PidFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    #[cfg(not(target_os = "linux"))]
    fn open(_pid: u32) -> Option<PidFd> {
        None
    }
}

impl Source for PidFd {
    fn register(&mut self, registry: &mio::Registry, token: mio::Token, interests: mio::Interest) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).register(registry, token, interests)
    }

    fn reregister(&mut self, registry: &mio::Registry, token: mio::Token, interests: mio::Interest) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &mio::Registry) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).deregister(registry)
    }
}

/// Children dropped while still running: reaped later so they leave no zombies.
static ORPHANS: Mutex<Vec<std::process::Child>> = Mutex::new(Vec::new());

/// Keeps `child` until it has exited and been reaped.
pub(super) fn adopt(mut child: std::process::Child) {
    if let Ok(None) = child.try_wait() {
        lock(&ORPHANS).push(child);
    }
}

/// Reaps every orphan that has exited; called on each spawn and each wait.
pub(super) fn reap_orphans() {
    let Some(mut orphans) = try_lock(&ORPHANS) else { return };
    orphans.retain_mut(|child| matches!(child.try_wait(), Ok(None)));
}

/// `try_wait`, retried across `EINTR`.
pub(super) fn try_wait(child: &mut std::process::Child) -> io::Result<Option<ExitStatus>> {
    loop {
        match child.try_wait() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            result => return result,
        }
    }
}
