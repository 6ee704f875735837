//! The [`AsyncWrite`] trait and its impls for std types.

use std::io::{self, IoSlice};
use std::ops::DerefMut;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A sink for bytes that can be written without blocking the thread.
///
/// The poll-based counterpart of [`std::io::Write`], plus
/// [`poll_shutdown`](Self::poll_shutdown) to close the writing side. Each method
/// either completes or returns `Pending` after arranging for the task to be woken when
/// it may make progress. The methods most code calls are in
/// [`AsyncWriteExt`](crate::AsyncWriteExt).
pub trait AsyncWrite {
    /// Tries to write bytes from `buf`, returning how many were taken.
    ///
    /// `Ready(Ok(0))` with a non-empty `buf` usually means the sink can take no more
    /// bytes, ever.
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>>;

    /// Pushes any buffered bytes to their destination.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    /// Closes the writing side after flushing it: a network stream sends its end of
    /// stream, a buffered writer writes out its buffer first. Writes after a completed
    /// shutdown may fail.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    /// Like [`poll_write`](Self::poll_write), taking the bytes from several buffers in
    /// order.
    ///
    /// The default writes the first non-empty buffer with `poll_write`; implementations
    /// that can do better say so through
    /// [`is_write_vectored`](Self::is_write_vectored).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &**b);
        self.poll_write(cx, first)
    }

    /// Whether [`poll_write_vectored`](Self::poll_write_vectored) writes from several
    /// buffers at once (the default does not, and returns `false`).
    fn is_write_vectored(&self) -> bool {
        false
    }
}

macro_rules! forward_write {
    () => {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            Pin::new(&mut **self).poll_write(cx, buf)
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut **self).poll_write_vectored(cx, bufs)
        }

        fn is_write_vectored(&self) -> bool {
            (**self).is_write_vectored()
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut **self).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut **self).poll_shutdown(cx)
        }
    };
}

impl<T: ?Sized + AsyncWrite + Unpin> AsyncWrite for Box<T> {
    forward_write!();
}

impl<T: ?Sized + AsyncWrite + Unpin> AsyncWrite for &mut T {
    forward_write!();
}

impl<P> AsyncWrite for Pin<P>
where
    P: DerefMut,
    P::Target: AsyncWrite,
{
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.as_deref_mut().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.as_deref_mut().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        (**self).is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.as_deref_mut().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.as_deref_mut().poll_shutdown(cx)
    }
}

impl AsyncWrite for Vec<u8> {
    #[inline]
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(io::Write::write_vectored(self.get_mut(), bufs))
    }

    #[inline]
    fn is_write_vectored(&self) -> bool {
        true
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

// The cursors that std can write through: each one does what `std::io::Write` does for
// it, at once.
macro_rules! cursor_write {
    ($($ty:ty),* $(,)?) => {$(
        impl AsyncWrite for $ty {
            #[inline]
            fn poll_write(
                self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                Poll::Ready(io::Write::write(self.get_mut(), buf))
            }

            #[inline]
            fn poll_write_vectored(
                self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                Poll::Ready(io::Write::write_vectored(self.get_mut(), bufs))
            }

            #[inline]
            fn is_write_vectored(&self) -> bool {
                true
            }

            #[inline]
            fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(io::Write::flush(self.get_mut()))
            }

            #[inline]
            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.poll_flush(cx)
            }
        }
    )*};
}

cursor_write!(
    io::Cursor<&mut [u8]>,
    io::Cursor<&mut Vec<u8>>,
    io::Cursor<Vec<u8>>,
    io::Cursor<Box<[u8]>>,
);
