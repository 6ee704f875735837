//! A child's standard streams as non-blocking pipes on the loop: [`ChildStdin`],
//! [`ChildStdout`], [`ChildStderr`].

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use mio::unix::pipe::{Receiver, Sender};
use netloop_io::{AsyncRead, AsyncWrite, ReadBuf};
use netloop_reactor::io::PollEvented;

use crate::registration::register;

macro_rules! pipe_type {
    ($(#[$doc:meta])* $Name:ident, $Std:ty, $Mio:ty, $interest:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $Name {
            io: PollEvented<$Mio>,
        }

        impl $Name {
            /// Registers a standard-library pipe end with this thread's loop (or the
            /// runtime's next), making it non-blocking.
            ///
            /// # Panics
            ///
            /// Outside a runtime, or in one built without `enable_io`.
            #[track_caller]
            pub fn from_std(inner: $Std) -> io::Result<Self> {
                let pipe = <$Mio>::from(inner);
                pipe.set_nonblocking(true)?;
                Ok($Name {
                    io: register(pipe, $interest)?,
                })
            }

            /// Deregisters the pipe and gives back its descriptor, in blocking mode
            /// again, for a `Stdio` of another child.
            pub fn into_owned_fd(self) -> io::Result<OwnedFd> {
                let pipe = self.io.into_inner()?;
                pipe.set_nonblocking(false)?;
                Ok(OwnedFd::from(pipe))
            }
        }

        impl AsRawFd for $Name {
            fn as_raw_fd(&self) -> RawFd {
                self.io.get_ref().as_raw_fd()
            }
        }

        impl AsFd for $Name {
            fn as_fd(&self) -> BorrowedFd<'_> {
                // SAFETY: the descriptor is owned by `self.io` and lives as long as `self`.
                unsafe { BorrowedFd::borrow_raw(self.as_raw_fd()) }
            }
        }

        impl TryFrom<$Name> for std::process::Stdio {
            type Error = io::Error;

            fn try_from(pipe: $Name) -> io::Result<std::process::Stdio> {
                pipe.into_owned_fd().map(std::process::Stdio::from)
            }
        }
    };
}

pipe_type!(
    /// The write end of a child's standard input (tokio's `ChildStdin`); dropping it closes
    /// the child's input.
    ///
    /// Feeding a filter: write, then drop the pipe, so that the child reads end of file and
    /// finishes.
    ///
    /// ```
    /// use std::process::Stdio;
    /// use netloop_net::io::AsyncWriteExt;
    /// use netloop_net::process::Command;
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let mut child = Command::new("sort").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    /// let mut stdin = child.stdin.take().expect("piped");
    /// stdin.write_all(b"pear\napple\n").await?;
    /// drop(stdin);
    ///
    /// let output = child.wait_with_output().await?;
    /// assert_eq!(output.stdout, b"apple\npear\n");
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ChildStdin,
    std::process::ChildStdin,
    Sender,
    mio::Interest::WRITABLE
);
pipe_type!(
    /// The read end of a child's standard output (tokio's `ChildStdout`).
    ///
    /// Reading a child's output as it comes, line by line, rather than all at its exit:
    ///
    /// ```
    /// use std::process::Stdio;
    /// use netloop_net::io::{AsyncBufReadExt, BufReader};
    /// use netloop_net::process::Command;
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let mut child = Command::new("printf").arg("one\\ntwo\\n").stdout(Stdio::piped()).spawn()?;
    /// let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    /// let mut got = Vec::new();
    /// while let Some(line) = lines.next_line().await? {
    ///     got.push(line);
    /// }
    /// assert_eq!(got, ["one", "two"]);
    /// assert!(child.wait().await?.success());
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ChildStdout,
    std::process::ChildStdout,
    Receiver,
    mio::Interest::READABLE
);
pipe_type!(
    /// The read end of a child's standard error (tokio's `ChildStderr`).
    ///
    /// ```
    /// use std::process::Stdio;
    /// use netloop_net::io::AsyncReadExt;
    /// use netloop_net::process::Command;
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let mut child = Command::new("sh").args(["-c", "echo oops >&2; exit 3"]).stderr(Stdio::piped()).spawn()?;
    /// let mut errors = String::new();
    /// child.stderr.take().expect("piped").read_to_string(&mut errors).await?;
    /// assert_eq!(errors, "oops\n");
    /// assert_eq!(child.wait().await?.code(), Some(3));
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ChildStderr,
    std::process::ChildStderr,
    Receiver,
    mio::Interest::READABLE
);

impl AsyncWrite for ChildStdin {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io.poll_write_io(cx, |pipe| (&*pipe).write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io.poll_write_io(cx, |pipe| (&*pipe).write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fn poll_read_pipe(io: &PollEvented<Receiver>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
    let n = std::task::ready!(io.poll_read_io(cx, |pipe| (&*pipe).read(buf.initialize_unfilled())))?;
    buf.advance(n);
    Poll::Ready(Ok(()))
}

impl AsyncRead for ChildStdout {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        poll_read_pipe(&self.io, cx, buf)
    }
}

impl AsyncRead for ChildStderr {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        poll_read_pipe(&self.io, cx, buf)
    }
}

#[cfg(feature = "tokio-io")]
netloop_io::impl_tokio_io! {
    impl AsyncWrite for [] ChildStdin;
    impl AsyncRead for [] ChildStdout;
    impl AsyncRead for [] ChildStderr;
}
