//! Child processes, as in `tokio::process`: a [`Command`] spawns a [`Child`] whose exit
//! is awaited on the loop and whose standard streams are async pipes.
//!
//! A waiting [`Child::wait`] costs no thread: on Linux the loop polls a pidfd of the
//! child (readable once it exits); elsewhere each `SIGCHLD` makes waiting children look
//! again. A child dropped while running keeps running (unless
//! [`Command::kill_on_drop`]); it is reaped at a later spawn or wait, so it leaves no
//! zombie for long.
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! # let rt = netloop_scheduler::runtime::Runtime::new()?;
//! # rt.block_on(async {
//! use netloop_net::process::Command;
//!
//! let output = Command::new("echo").arg("hello").output().await?;
//! assert_eq!(output.stdout, b"hello\n");
//! # std::io::Result::Ok(())
//! # })
//! # }
//! ```

mod exit;
mod pipe;

pub use pipe::{ChildStderr, ChildStdin, ChildStdout};

use std::ffi::OsStr;
use std::future::Future;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Output, Stdio};
use std::task::{Context, Poll, ready};

use netloop_io::AsyncReadExt;

use exit::ExitWatch;

/// What to run and how: tokio's `Command`, a `std::process::Command` plus
/// [`kill_on_drop`](Command::kill_on_drop).
///
/// Set up the program, its arguments, environment and standard streams, then run it
/// with [`output`](Self::output) or [`status`](Self::status), or start it with
/// [`spawn`](Self::spawn):
///
/// ```
/// use netloop_net::process::Command;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let output = Command::new("sh")
///     .args(["-c", "echo \"$GREETING, $1\"", "sh", "world"])
///     .env("GREETING", "hello")
///     .output()
///     .await?;
/// assert!(output.status.success());
/// assert_eq!(output.stdout, b"hello, world\n");
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Command {
    std: std::process::Command,
    kill_on_drop: bool,
}

impl Command {
    /// A command running `program` (looked up in `PATH` if it has no `/`).
    pub fn new<S: AsRef<OsStr>>(program: S) -> Command {
        Command::from(std::process::Command::new(program))
    }

    /// The standard-library command underneath.
    pub fn as_std(&self) -> &std::process::Command {
        &self.std
    }

    /// The standard-library command underneath, to set what this type does not expose.
    pub fn as_std_mut(&mut self) -> &mut std::process::Command {
        &mut self.std
    }

    /// The standard-library command (losing `kill_on_drop`).
    pub fn into_std(self) -> std::process::Command {
        self.std
    }

    /// Adds an argument.
    pub fn arg<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Command {
        self.std.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.std.args(args);
        self
    }

    /// Sets an environment variable of the child.
    pub fn env<K: AsRef<OsStr>, V: AsRef<OsStr>>(&mut self, key: K, val: V) -> &mut Command {
        self.std.env(key, val);
        self
    }

    /// Sets environment variables of the child.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.std.envs(vars);
        self
    }

    /// Removes a variable from the child's environment.
    pub fn env_remove<K: AsRef<OsStr>>(&mut self, key: K) -> &mut Command {
        self.std.env_remove(key);
        self
    }

    /// Starts the child with an empty environment (plus what `env` adds).
    pub fn env_clear(&mut self) -> &mut Command {
        self.std.env_clear();
        self
    }

    /// The child's working directory.
    pub fn current_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Command {
        self.std.current_dir(dir);
        self
    }

    /// The child's standard input (inherited by default for `spawn` and `status`).
    pub fn stdin<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.std.stdin(cfg);
        self
    }

    /// The child's standard output (inherited by default for `spawn` and `status`).
    pub fn stdout<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.std.stdout(cfg);
        self
    }

    /// The child's standard error (inherited by default for `spawn` and `status`).
    pub fn stderr<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.std.stderr(cfg);
        self
    }

    /// Kill the child (`SIGKILL`) if its [`Child`] is dropped before it exited.
    /// Off by default: a dropped child goes on running, as with the standard library.
    pub fn kill_on_drop(&mut self, kill_on_drop: bool) -> &mut Command {
        self.kill_on_drop = kill_on_drop;
        self
    }

    /// Whether [`kill_on_drop`](Self::kill_on_drop) is set.
    pub fn get_kill_on_drop(&self) -> bool {
        self.kill_on_drop
    }

    /// The child's user id.
    pub fn uid(&mut self, id: u32) -> &mut Command {
        std::os::unix::process::CommandExt::uid(&mut self.std, id);
        self
    }

    /// The child's group id.
    pub fn gid(&mut self, id: u32) -> &mut Command {
        std::os::unix::process::CommandExt::gid(&mut self.std, id);
        self
    }

    /// The child's `argv[0]`, instead of the program's path.
    pub fn arg0<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Command {
        std::os::unix::process::CommandExt::arg0(&mut self.std, arg);
        self
    }

    /// Puts the child in process group `pgroup` (0: a new group led by the child).
    pub fn process_group(&mut self, pgroup: i32) -> &mut Command {
        std::os::unix::process::CommandExt::process_group(&mut self.std, pgroup);
        self
    }

    /// Runs `f` in the child after `fork`, before `exec`.
    ///
    /// # Safety
    ///
    /// As `std::os::unix::process::CommandExt::pre_exec`: `f` runs in a copy of a
    /// multi-threaded process and may only do async-signal-safe things.
    pub unsafe fn pre_exec<F>(&mut self, f: F) -> &mut Command
    where
        F: FnMut() -> io::Result<()> + Send + Sync + 'static,
    {
        // SAFETY: the caller's contract is this function's.
        unsafe { std::os::unix::process::CommandExt::pre_exec(&mut self.std, f) };
        self
    }

    /// Starts the child; its piped streams are registered with this thread's loop (or
    /// the runtime's next).
    ///
    /// # Errors
    ///
    /// The OS's: no such program, not executable, too many processes...
    ///
    /// # Panics
    ///
    /// Outside a runtime, or in one built without `enable_io`.
    #[track_caller]
    pub fn spawn(&mut self) -> io::Result<Child> {
        Self::may_spawn();
        let std = self.std.spawn()?;
        self.adopt(std)
    }

    /// [`spawn`](Self::spawn), where the caller's function `with` starts the child in
    /// place of `std::process::Command::spawn` (tokio's unstable `spawn_with`; on
    /// Windows, what sets a child's process attributes). `with` gets the command as configured and
    /// returns the child, which the runtime then watches as `spawn`'s.
    ///
    /// # Panics
    ///
    /// Outside a runtime, or in one built without `enable_io`.
    #[cfg(tokio_unstable)]
    #[track_caller]
    pub fn spawn_with(
        &mut self,
        with: impl FnOnce(&mut std::process::Command) -> io::Result<std::process::Child>,
    ) -> io::Result<Child> {
        Self::may_spawn();
        let std = with(&mut self.std)?;
        self.adopt(std)
    }

    /// Panics where a child may not be spawned, with tokio's messages; reaps the
    /// children that ended unwatched.
    #[track_caller]
    fn may_spawn() {
        netloop_scheduler::drivers::require_io();
        if let Err(no_runtime) = netloop_scheduler::runtime::Handle::try_current() {
            panic!("{no_runtime}");
        }
        exit::reap_orphans();
    }

    /// The runtime's handle of a child just spawned from this command.
    fn adopt(&self, mut std: std::process::Child) -> io::Result<Child> {
        let stdin = std.stdin.take().map(ChildStdin::from_std).transpose();
        let stdout = std.stdout.take().map(ChildStdout::from_std).transpose();
        let stderr = std.stderr.take().map(ChildStderr::from_std).transpose();
        let child = Child {
            state: State::Running(Running {
                std: Some(std),
                watch: None,
                kill_on_drop: self.kill_on_drop,
            }),
            stdin: None,
            stdout: None,
            stderr: None,
        };
        // On a failed registration the child drops here: killed if so configured, else
        // left to run and reaped later.
        Ok(Child {
            stdin: stdin?,
            stdout: stdout?,
            stderr: stderr?,
            ..child
        })
    }

    /// Runs the child to completion and returns its exit status; its streams are
    /// inherited unless set otherwise.
    pub fn status(&mut self) -> impl Future<Output = io::Result<ExitStatus>> + use<> {
        let child = self.spawn();
        async move {
            let mut child = child?;
            // Streams that were piped are dropped first, as tokio does: the child must
            // not block on a pipe nobody reads.
            child.stdin.take();
            child.stdout.take();
            child.stderr.take();
            child.wait().await
        }
    }

    /// Runs the child to completion and collects its output; stdout and stderr are
    /// piped and stdin is null unless set otherwise.
    pub fn output(&mut self) -> impl Future<Output = io::Result<Output>> + use<> {
        self.std.stdout(Stdio::piped());
        self.std.stderr(Stdio::piped());
        let child = self.spawn();
        async move { child?.wait_with_output().await }
    }
}

impl From<std::process::Command> for Command {
    fn from(std: std::process::Command) -> Command {
        Command {
            std,
            kill_on_drop: false,
        }
    }
}

/// A running or exited child process (tokio's `Child`).
///
/// Its piped streams are in the public fields; take them out to use them on their own.
/// Awaiting [`wait`](Self::wait) costs no thread: the loop learns of the exit.
///
/// ```
/// use std::process::Stdio;
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
/// use netloop_net::process::Command;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let mut child = Command::new("cat")
///     .stdin(Stdio::piped())
///     .stdout(Stdio::piped())
///     .kill_on_drop(true) // should this task be cancelled, no stray `cat` is left
///     .spawn()?;
/// let (mut stdin, mut stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
///
/// stdin.write_all(b"meow").await?;
/// drop(stdin); // end of input: `cat` finishes
/// let mut echoed = String::new();
/// stdout.read_to_string(&mut echoed).await?;
/// assert_eq!(echoed, "meow");
/// assert!(child.wait().await?.success());
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Child {
    state: State,
    /// The child's standard input, if piped.
    pub stdin: Option<ChildStdin>,
    /// The child's standard output, if piped.
    pub stdout: Option<ChildStdout>,
    /// The child's standard error, if piped.
    pub stderr: Option<ChildStderr>,
}

#[derive(Debug)]
enum State {
    Running(Running),
    Exited(ExitStatus),
}

#[derive(Debug)]
struct Running {
    /// `None` only inside `Drop`.
    std: Option<std::process::Child>,
    /// Created at the first wait, on the loop of the waiting task.
    watch: Option<ExitWatch>,
    kill_on_drop: bool,
}

impl Running {
    fn std(&mut self) -> &mut std::process::Child {
        self.std.as_mut().expect("present until drop")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(mut std) = self.std.take() else { return };
        if self.kill_on_drop && matches!(exit::try_wait(&mut std), Ok(None)) {
            let _ = std.kill();
        }
        exit::adopt(std);
    }
}

impl Child {
    /// The OS process id, until the exit has been observed.
    pub fn id(&self) -> Option<u32> {
        match &self.state {
            State::Running(running) => running.std.as_ref().map(std::process::Child::id),
            State::Exited(_) => None,
        }
    }

    /// Sends `SIGKILL` without waiting for the exit; does nothing once the exit has
    /// been observed (the process id may belong to another process by then).
    pub fn start_kill(&mut self) -> io::Result<()> {
        match &mut self.state {
            State::Running(running) => running.std().kill(),
            State::Exited(_) => Ok(()),
        }
    }

    /// Sends `SIGKILL` and waits for the exit.
    pub async fn kill(&mut self) -> io::Result<()> {
        self.start_kill()?;
        self.wait().await.map(drop)
    }

    /// Waits for the child to exit; closes its stdin first so it cannot wait on us.
    /// Cancel safe; after the exit, returns the same status again.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.stdin.take();
        std::future::poll_fn(|cx| self.poll_wait(cx)).await
    }

    fn poll_wait(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<ExitStatus>> {
        exit::reap_orphans();
        let running = match &mut self.state {
            State::Exited(status) => return Poll::Ready(Ok(*status)),
            State::Running(running) => running,
        };
        loop {
            if running.watch.is_none() {
                running.watch = Some(ExitWatch::new(running.std().id())?);
            }
            if let Some(status) = exit::try_wait(running.std())? {
                self.state = State::Exited(status);
                return Poll::Ready(Ok(status));
            }
            let watch = running.watch.as_mut().expect("created above");
            if let Err(e) = ready!(watch.poll_sign(cx)) {
                // Its loop is gone (the runtime that first waited shut down): watch
                // again from here, once.
                if netloop_scheduler::runtime::is_rt_shutdown_err(&e) {
                    running.watch = None;
                    running.watch = Some(ExitWatch::new(running.std().id())?);
                    continue;
                }
                return Poll::Ready(Err(e));
            }
        }
    }

    /// The exit status if the child has exited, without waiting.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match &mut self.state {
            State::Exited(status) => Ok(Some(*status)),
            State::Running(running) => {
                let status = exit::try_wait(running.std())?;
                if let Some(status) = status {
                    self.state = State::Exited(status);
                }
                Ok(status)
            }
        }
    }

    /// Waits for the exit while reading all of stdout and stderr (those piped).
    pub async fn wait_with_output(mut self) -> io::Result<Output> {
        async fn read_all<R: netloop_io::AsyncRead + Unpin>(stream: Option<R>) -> io::Result<Vec<u8>> {
            let mut out = Vec::new();
            if let Some(mut stream) = stream {
                stream.read_to_end(&mut out).await?;
            }
            Ok(out)
        }
        let mut stdout = std::pin::pin!(read_all(self.stdout.take()));
        let mut stderr = std::pin::pin!(read_all(self.stderr.take()));
        let (mut out, mut err) = (None, None);
        let status = {
            let mut wait = std::pin::pin!(self.wait());
            let mut status = None;
            std::future::poll_fn(|cx| {
                if out.is_none()
                    && let Poll::Ready(r) = stdout.as_mut().poll(cx)
                {
                    out = Some(r);
                }
                if err.is_none()
                    && let Poll::Ready(r) = stderr.as_mut().poll(cx)
                {
                    err = Some(r);
                }
                if status.is_none()
                    && let Poll::Ready(r) = wait.as_mut().poll(cx)
                {
                    status = Some(r);
                }
                if out.is_some() && err.is_some() && status.is_some() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            status.expect("ready")?
        };
        Ok(Output {
            status,
            stdout: out.expect("ready")?,
            stderr: err.expect("ready")?,
        })
    }
}
