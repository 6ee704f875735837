//! [`AsyncSeekExt`] and its [`Seek`] future.

use crate::AsyncSeek;
use pin_project_lite::pin_project;
use std::future::Future;
use std::io::{self, SeekFrom};
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// The methods that make an [`AsyncSeek`] useful from `async` code.
///
/// Implemented for every `AsyncSeek`; bring it into scope with
/// `use netloop_io::AsyncSeekExt`.
///
/// ```
/// use netloop_io::{AsyncReadExt, AsyncSeekExt};
/// use std::io::{Cursor, SeekFrom};
///
/// futures::executor::block_on(async {
///     let mut c = Cursor::new(b"abcdef".to_vec());
///     assert_eq!(c.seek(SeekFrom::End(-2)).await.unwrap(), 4);
///     assert_eq!(c.read_u8().await.unwrap(), b'e');
///     assert_eq!(c.stream_position().await.unwrap(), 5);
///     c.rewind().await.unwrap();
///     assert_eq!(c.read_u8().await.unwrap(), b'a');
/// });
/// ```
pub trait AsyncSeekExt: AsyncSeek {
    /// Moves the cursor to `pos` and returns the new position from the start.
    ///
    /// A seek already in flight is waited for first. Not cancel safe with respect to
    /// the position: dropping the future may leave the seek done or not.
    fn seek(&mut self, pos: SeekFrom) -> Seek<'_, Self>
    where
        Self: Unpin,
    {
        Seek {
            seek: self,
            pos: Some(pos),
            _pin: PhantomPinned,
        }
    }

    /// Moves the cursor back to the start of the stream.
    fn rewind(&mut self) -> Seek<'_, Self>
    where
        Self: Unpin,
    {
        self.seek(SeekFrom::Start(0))
    }

    /// The current position from the start of the stream.
    fn stream_position(&mut self) -> Seek<'_, Self>
    where
        Self: Unpin,
    {
        self.seek(SeekFrom::Current(0))
    }
}

impl<S: AsyncSeek + ?Sized> AsyncSeekExt for S {}

pin_project! {
    /// The future of [`AsyncSeekExt::seek`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Seek<'a, S: ?Sized> {
        seek: &'a mut S,
        // `Some` until the seek has been started.
        pos: Option<SeekFrom>,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<S: AsyncSeek + ?Sized + Unpin> Future for Seek<'_, S> {
    type Output = io::Result<u64>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let me = self.project();
        if let Some(pos) = *me.pos {
            // Finish whatever seek was in flight before starting ours.
            ready!(Pin::new(&mut **me.seek).poll_complete(cx))?;
            Pin::new(&mut **me.seek).start_seek(pos)?;
            *me.pos = None;
        }
        Pin::new(&mut **me.seek).poll_complete(cx)
    }
}
