//! `stdin`, `stdout`, `stderr`: the process's standard streams, read and written on the
//! blocking pool (tokio's `io-std`).
//!
//! The standard streams may be terminals, pipes or files, which epoll cannot wait on
//! (files) or which may be shared with other processes: they are used with ordinary
//! blocking calls, each run by the runtime's blocking pool, one at a time per stream.
//! A write is copied and reported done at once; the copy is written in the background
//! and `flush` waits for it, so an error of a background write shows at the next
//! operation or at `flush`.

use std::fmt;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use netloop_io::{AsyncRead, AsyncWrite, ReadBuf};
use netloop_scheduler::task::{JoinHandle, spawn_blocking};

/// The most one operation moves: a larger read or write is done in parts.
const MAX_BUF: usize = 2 * 1024 * 1024;

/// What a blocking operation gives back: its result, the buffer and the stream.
type Done<T> = (io::Result<usize>, Vec<u8>, T);

/// A blocking reader or writer, used through the blocking pool one operation at a
/// time. Invariant: `inner` and `buf` are here when `op` is `None`, and inside the
/// running operation otherwise.
struct Blocking<T> {
    inner: Option<T>,
    /// Data read and not yet handed out (reads); empty between writes.
    buf: Vec<u8>,
    /// Where the unread data in `buf` starts.
    pos: usize,
    op: Option<JoinHandle<Done<T>>>,
    /// A background write has happened since the last flush.
    need_flush: bool,
}

// Nothing in it is pinned: the stream moves in and out of blocking operations.
impl<T> Unpin for Blocking<T> {}

impl<T: Send + 'static> Blocking<T> {
    fn new(inner: T) -> Blocking<T> {
        Blocking {
            inner: Some(inner),
            buf: Vec::new(),
            pos: 0,
            op: None,
            need_flush: false,
        }
    }

    /// Starts `f` on the blocking pool with the stream and the buffer.
    fn start(&mut self, f: impl FnOnce(&mut T, &mut Vec<u8>) -> io::Result<usize> + Send + 'static) {
        let mut inner = self.inner.take().expect("idle: the stream is here");
        let mut buf = std::mem::take(&mut self.buf);
        self.op = Some(spawn_blocking(move || {
            let res = f(&mut inner, &mut buf);
            (res, buf, inner)
        }));
    }

    /// Waits for the running operation, if any; puts the stream and buffer back.
    fn poll_op(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(op) = self.op.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        let outcome = ready!(Pin::new(op).poll(cx));
        self.op = None;
        match outcome {
            Ok((res, buf, inner)) => {
                self.inner = Some(inner);
                self.buf = buf;
                Poll::Ready(res)
            }
            // The runtime shut down before the operation ran (the stream is lost with
            // it), or the operation panicked.
            Err(e) if e.is_cancelled() => Poll::Ready(Err(netloop_reactor::LoopShutDown::io_error())),
            Err(e) => Poll::Ready(Err(io::Error::other(e.to_string()))),
        }
    }

    /// Fails from now on: the stream went with an operation that never came back.
    fn gone(&self) -> Option<io::Error> {
        (self.inner.is_none() && self.op.is_none()).then(netloop_reactor::LoopShutDown::io_error)
    }
}

impl<T: Read + Send + 'static> AsyncRead for Blocking<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, dst: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = &mut *self;
        loop {
            // A read under way (perhaps started by an earlier, dropped call): wait.
            if me.op.is_some() {
                let n = ready!(me.poll_op(cx))?;
                me.pos = 0;
                if n == 0 {
                    // End of file.
                    return Poll::Ready(Ok(()));
                }
            }
            if let Some(e) = me.gone() {
                return Poll::Ready(Err(e));
            }
            if me.pos < me.buf.len() {
                let n = (me.buf.len() - me.pos).min(dst.remaining());
                dst.put_slice(&me.buf[me.pos..me.pos + n]);
                me.pos += n;
                return Poll::Ready(Ok(()));
            }
            // Nothing buffered: read.
            let want = dst.remaining().min(MAX_BUF);
            me.start(move |inner, buf| super::read_to_vec(inner, buf, want));
        }
    }
}

impl<T: Write + Send + 'static> AsyncWrite for Blocking<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, src: &[u8]) -> Poll<io::Result<usize>> {
        let me = &mut *self;
        // One background write at a time: wait for the previous one, and report its
        // error here.
        ready!(me.poll_op(cx))?;
        if let Some(e) = me.gone() {
            return Poll::Ready(Err(e));
        }
        let n = src.len().min(MAX_BUF);
        me.buf.clear();
        me.buf.extend_from_slice(&src[..n]);
        me.start(|inner, buf| {
            let res = inner.write_all(buf).map(|()| buf.len());
            buf.clear();
            res
        });
        me.need_flush = true;
        // A pool that refused the write (its runtime shut down) says so now, not at
        // the next call: look once.
        if let Poll::Ready(Err(e)) = me.poll_op(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = &mut *self;
        ready!(me.poll_op(cx))?;
        if let Some(e) = me.gone() {
            return Poll::Ready(Err(e));
        }
        if me.need_flush {
            me.need_flush = false;
            me.start(|inner, _| inner.flush().map(|()| 0));
            ready!(me.poll_op(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

/// A standard stream's type, over a `Blocking` of the standard library's, and the
/// function that gives it; `$Trait` (`AsyncRead` or `AsyncWrite`) is forwarded to the
/// `Blocking`.
macro_rules! std_stream {
    ($(#[$doc:meta])* $Type:ident, $ctor:ident, $std:ident, $Trait:ident) => {
        $(#[$doc])*
        pub struct $Type(Blocking<io::$std>);

        $(#[$doc])*
        ///
        /// # Panics
        ///
        /// An operation panics outside a runtime: it needs the runtime's blocking pool.
        pub fn $ctor() -> $Type {
            $Type(Blocking::new(io::$ctor()))
        }

        impl fmt::Debug for $Type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($Type)).finish_non_exhaustive()
            }
        }

        impl std::os::fd::AsRawFd for $Type {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(&io::$ctor())
            }
        }

        impl std::os::fd::AsFd for $Type {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                // SAFETY: the standard streams' descriptors stay open for the process.
                unsafe { std::os::fd::BorrowedFd::borrow_raw(std::os::fd::AsRawFd::as_raw_fd(self)) }
            }
        }

        forward_to_blocking!($Type, $Trait);
    };
}

/// `$Trait` for a standard stream, forwarded to its `Blocking`; with `tokio-io`, tokio's
/// `$Trait` as well, forwarded to netloop-io's.
macro_rules! forward_to_blocking {
    ($Type:ident, $Trait:ident) => {
        forward_to_blocking!(@ $Type, $Trait);

        #[cfg(feature = "tokio-io")]
        netloop_io::impl_tokio_io! {
            impl $Trait for [] $Type;
        }
    };
    (@ $Type:ident, AsyncRead) => {
        impl AsyncRead for $Type {
            fn poll_read(
                mut self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                Pin::new(&mut self.0).poll_read(cx, buf)
            }
        }
    };
    (@ $Type:ident, AsyncWrite) => {
        impl AsyncWrite for $Type {
            fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                Pin::new(&mut self.0).poll_write(cx, buf)
            }

            fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Pin::new(&mut self.0).poll_flush(cx)
            }

            fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Pin::new(&mut self.0).poll_shutdown(cx)
            }
        }
    };
}

std_stream!(
    /// The process's standard input (tokio's `io::Stdin`), read on the blocking pool.
    /// A read that has started runs to its end even if the future is dropped; the
    /// data it got is kept for the next read.
    ///
    /// Read it line by line through a [`BufReader`](crate::io::BufReader), which also
    /// makes fewer trips to the blocking pool:
    ///
    /// ```no_run
    /// use netloop_net::io::{self, AsyncBufReadExt, BufReader};
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let mut lines = BufReader::new(io::stdin()).lines();
    /// while let Some(line) = lines.next_line().await? {
    ///     println!("{} characters", line.chars().count());
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    Stdin, stdin, Stdin, AsyncRead
);
std_stream!(
    /// The process's standard output (tokio's `io::Stdout`), written on the blocking
    /// pool. Flush before exiting: a write still in the background may be lost.
    ///
    /// ```
    /// use netloop_net::io::{self, AsyncWriteExt};
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let mut out = io::stdout();
    /// out.write_all(b"hello from netloop\n").await?;
    /// out.flush().await?; // the write has reached the OS
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    Stdout, stdout, Stdout, AsyncWrite
);
std_stream!(
    /// The process's standard error (tokio's `io::Stderr`), written on the blocking
    /// pool.
    ///
    /// ```
    /// use netloop_net::io::{self, AsyncWriteExt};
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let mut err = io::stderr();
    /// err.write_all(b"warning: an example\n").await?;
    /// err.flush().await?;
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    Stderr, stderr, Stderr, AsyncWrite
);

#[cfg(test)]
mod tests {
    use super::*;
    use netloop_io::{AsyncReadExt, AsyncWriteExt};

    fn runtime() -> netloop_scheduler::runtime::Runtime {
        netloop_scheduler::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_blocking_reader_is_read_to_its_end_in_parts() {
        let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        let expected = data.clone();
        let got = runtime().block_on(async move {
            let mut r = Blocking::new(std::io::Cursor::new(data));
            let mut got = Vec::new();
            let mut small = [0u8; 7];
            let n = r.read(&mut small).await.unwrap();
            got.extend_from_slice(&small[..n]);
            r.read_to_end(&mut got).await.unwrap();
            got
        });
        assert_eq!(got, expected);
    }

    #[test]
    fn writes_land_in_order_and_flush_waits_for_them() {
        let shared = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let sink = shared.clone();
        runtime().block_on(async move {
            let mut w = Blocking::new(Shared(sink));
            for i in 0..50u8 {
                w.write_all(&[i; 3]).await.unwrap();
            }
            w.flush().await.unwrap();
        });
        let written = shared.lock().unwrap().clone();
        assert_eq!(written, (0..50u8).flat_map(|i| [i; 3]).collect::<Vec<_>>());
    }

    #[test]
    fn a_write_error_shows_at_the_next_operation() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        runtime().block_on(async {
            let mut w = Blocking::new(Broken);
            // Written behind: the error shows at once if the pool was that quick, else
            // at the flush.
            let err = match w.write(b"x").await {
                Ok(1) => w.flush().await.unwrap_err(),
                Ok(n) => panic!("wrote {n} of 1 byte"),
                Err(e) => e,
            };
            assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        });
    }

    #[test]
    fn stdout_after_the_runtime_shut_down_is_a_shutdown_error() {
        let rt = netloop_scheduler::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        rt.shutdown_timeout(std::time::Duration::from_secs(5));
        let err = handle.block_on(async { stdout().write_all(b"x").await }).unwrap_err();
        assert!(netloop_reactor::is_loop_shut_down(&err), "{err}");
    }
}
