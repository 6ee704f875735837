//! Unix signals as streams: [`signal`] and [`SignalKind`], as in `tokio::signal::unix`.

use std::io;
use std::task::{Context, Poll, ready};

use netloop_scheduler::runtime::Handle;

use super::{driver, registry};

/// A kind of Unix signal, by number: the common ones have constructors, any other
/// comes from [`SignalKind::from_raw`].
///
/// ```
/// use netloop_net::signal::unix::SignalKind;
///
/// assert_eq!(SignalKind::from_raw(2), SignalKind::interrupt()); // SIGINT is 2 everywhere
/// assert_eq!(SignalKind::hangup().as_raw_value(), libc::SIGHUP);
/// ```
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub struct SignalKind(libc::c_int);

impl SignalKind {
    /// The signal of number `signum`, whether or not this platform has a name for it
    /// (real-time signals, for instance).
    pub const fn from_raw(signum: std::os::raw::c_int) -> Self {
        Self(signum as libc::c_int)
    }

    /// This signal's number.
    pub const fn as_raw_value(&self) -> std::os::raw::c_int {
        self.0
    }

    /// `SIGALRM`: a real-time timer expired.
    pub const fn alarm() -> Self {
        Self(libc::SIGALRM)
    }

    /// `SIGCHLD`: a child process changed state.
    pub const fn child() -> Self {
        Self(libc::SIGCHLD)
    }

    /// `SIGHUP`: the terminal went away; daemons take it as "reload".
    pub const fn hangup() -> Self {
        Self(libc::SIGHUP)
    }

    /// `SIGINFO`: a status request from the keyboard (BSDs and macOS).
    #[cfg(any(
        target_os = "dragonfly",
        target_os = "freebsd",
        target_os = "macos",
        target_os = "netbsd",
        target_os = "openbsd",
        target_os = "illumos"
    ))]
    pub const fn info() -> Self {
        Self(libc::SIGINFO)
    }

    /// `SIGINT`: an interrupt from the keyboard (Ctrl-C).
    pub const fn interrupt() -> Self {
        Self(libc::SIGINT)
    }

    /// `SIGIO`: I/O is possible on a descriptor set up for it.
    pub const fn io() -> Self {
        Self(libc::SIGIO)
    }

    /// `SIGPIPE`: a write to a pipe or socket with no reader.
    pub const fn pipe() -> Self {
        Self(libc::SIGPIPE)
    }

    /// `SIGQUIT`: a quit request from the keyboard (Ctrl-\).
    pub const fn quit() -> Self {
        Self(libc::SIGQUIT)
    }

    /// `SIGTERM`: a request to terminate, what `kill` and service managers send.
    pub const fn terminate() -> Self {
        Self(libc::SIGTERM)
    }

    /// `SIGUSR1`: the first signal left to applications.
    pub const fn user_defined1() -> Self {
        Self(libc::SIGUSR1)
    }

    /// `SIGUSR2`: the second signal left to applications.
    pub const fn user_defined2() -> Self {
        Self(libc::SIGUSR2)
    }

    /// `SIGWINCH`: the terminal changed size.
    pub const fn window_change() -> Self {
        Self(libc::SIGWINCH)
    }
}

impl From<std::os::raw::c_int> for SignalKind {
    fn from(signum: std::os::raw::c_int) -> Self {
        Self::from_raw(signum)
    }
}

impl From<SignalKind> for std::os::raw::c_int {
    fn from(kind: SignalKind) -> Self {
        kind.as_raw_value()
    }
}

/// A stream of the deliveries of one kind of signal to this process.
///
/// Deliveries that arrive while nobody polls coalesce: however many came, the next
/// [`recv`](Signal::recv) returns once. Each `Signal` sees every delivery made after it
/// was created, independently of the others listening for the same signal; waiting ones
/// are woken on their own loops.
///
/// Listening for a signal replaces its default action (for `SIGINT`, ending the
/// process) for the rest of the process's life, even after every `Signal` is dropped,
/// as with tokio.
///
/// ```
/// use netloop_net::signal::unix::{SignalKind, signal};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut usr1 = signal(SignalKind::user_defined1())?;
///
/// // Usually another process sends it (`kill -USR1 <pid>`); here, this process itself.
/// // SAFETY: kill(2) with a valid pid and signal number.
/// assert_eq!(unsafe { libc::kill(std::process::id() as libc::pid_t, libc::SIGUSR1) }, 0);
///
/// assert_eq!(usr1.recv().await, Some(()));
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Signal {
    slot: &'static registry::Slot,
    id: u64,
    seen: u64,
}

/// Listens for signal `kind` from now on.
///
/// A daemon that reloads its configuration on each `SIGHUP`, for as long as it runs:
///
/// ```no_run
/// use netloop_net::signal::unix::{SignalKind, signal};
///
/// # let rt = netloop_scheduler::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// let mut hangups = signal(SignalKind::hangup())?;
/// while hangups.recv().await.is_some() {
///     println!("reloading the configuration");
/// }
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
///
/// The signals the OS reserves (`SIGKILL`, `SIGSTOP`, `SIGILL`, `SIGFPE`, `SIGSEGV`) and
/// numbers below 1 give "Refusing to register signal N"; a number the OS does not have
/// gives "signal too large"; a runtime that has shut down gives "signal driver gone".
///
/// # Panics
///
/// Outside a netloop runtime's context, or in one built without `enable_io`.
#[track_caller]
pub fn signal(kind: SignalKind) -> io::Result<Signal> {
    let handle = Handle::current();
    netloop_scheduler::drivers::require_io();
    let signum = kind.0;
    if signum <= 0 || signal_hook_registry::FORBIDDEN.contains(&signum) {
        return Err(io::Error::other(format!("Refusing to register signal {signum}")));
    }
    let globals = registry::globals();
    let slot = globals
        .slot(signum)
        .ok_or_else(|| io::Error::other("signal too large"))?;
    driver::ensure_driver(&handle)?;
    registry::install(globals, signum)?;
    Ok(Signal {
        slot,
        id: registry::next_listener_id(),
        seen: slot.deliveries(),
    })
}

impl Signal {
    /// Waits for the next delivery of this signal.
    ///
    /// Returns `Some(())`; tokio's signature keeps `None` for a stream that can receive
    /// nothing more, which never happens here. Cancel safe: dropping the future loses no
    /// delivery.
    pub async fn recv(&mut self) -> Option<()> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next delivery, registering `cx`'s waker if there is none yet; only
    /// the waker of the last call is woken.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        let coop = ready!(netloop_reactor::coop::poll_proceed(cx));
        let now = self.slot.deliveries();
        let now = if now != self.seen {
            now
        } else {
            match self.slot.wait(self.id, self.seen, cx.waker()) {
                Some(now) => now,
                None => return Poll::Pending,
            }
        };
        self.seen = now;
        coop.made_progress();
        Poll::Ready(Some(()))
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        self.slot.forget(self.id);
    }
}

/// A [`Signal`] for `SIGINT`, for [`ctrl_c`](super::ctrl_c).
pub(super) fn ctrl_c() -> io::Result<Signal> {
    signal(SignalKind::interrupt())
}
