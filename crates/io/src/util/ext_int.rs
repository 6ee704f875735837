//! The futures of the integer and float readers and writers of [`AsyncReadExt`] and
//! [`AsyncWriteExt`](super::AsyncWriteExt).
//!
//! [`AsyncReadExt`]: super::AsyncReadExt

use crate::{AsyncRead, AsyncWrite, ReadBuf};
use pin_project_lite::pin_project;
use std::future::Future;
use std::io;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll};

macro_rules! reader {
    ($($name:ident: $ty:ty, $from:ident;)*) => {$(
        pin_project! {
            #[doc = concat!("The future that reads one `", stringify!($ty), "`.")]
            #[doc(hidden)]
            #[must_use = "futures do nothing unless you `.await` or poll them"]
            pub struct $name<R> {
                #[pin]
                src: R,
                buf: [u8; size_of::<$ty>()],
                read: u8,
                #[pin]
                _pin: PhantomPinned,
            }
        }

        impl<R> $name<R> {
            pub(crate) fn new(src: R) -> Self {
                $name { src, buf: [0; size_of::<$ty>()], read: 0, _pin: PhantomPinned }
            }
        }

        impl<R: AsyncRead> Future for $name<R> {
            type Output = io::Result<$ty>;

            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<$ty>> {
                let mut me = self.project();
                const N: usize = size_of::<$ty>();
                while (*me.read as usize) < N {
                    let mut rb = ReadBuf::new(&mut me.buf[*me.read as usize..]);
                    match me.src.as_mut().poll_read(cx, &mut rb) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Ready(Ok(())) => {
                            let n = rb.filled().len();
                            if n == 0 {
                                return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
                            }
                            *me.read += n as u8;
                        }
                    }
                }
                Poll::Ready(Ok(<$ty>::$from(*me.buf)))
            }
        }
    )*};
}

reader! {
    ReadU8: u8, from_be_bytes;
    ReadI8: i8, from_be_bytes;
    ReadU16: u16, from_be_bytes;
    ReadI16: i16, from_be_bytes;
    ReadU32: u32, from_be_bytes;
    ReadI32: i32, from_be_bytes;
    ReadU64: u64, from_be_bytes;
    ReadI64: i64, from_be_bytes;
    ReadU128: u128, from_be_bytes;
    ReadI128: i128, from_be_bytes;
    ReadF32: f32, from_be_bytes;
    ReadF64: f64, from_be_bytes;
    ReadU16Le: u16, from_le_bytes;
    ReadI16Le: i16, from_le_bytes;
    ReadU32Le: u32, from_le_bytes;
    ReadI32Le: i32, from_le_bytes;
    ReadU64Le: u64, from_le_bytes;
    ReadI64Le: i64, from_le_bytes;
    ReadU128Le: u128, from_le_bytes;
    ReadI128Le: i128, from_le_bytes;
    ReadF32Le: f32, from_le_bytes;
    ReadF64Le: f64, from_le_bytes;
}

macro_rules! writer {
    ($($name:ident: $ty:ty, $to:ident;)*) => {$(
        pin_project! {
            #[doc = concat!("The future that writes one `", stringify!($ty), "`.")]
            #[doc(hidden)]
            #[must_use = "futures do nothing unless you `.await` or poll them"]
            pub struct $name<W> {
                #[pin]
                dst: W,
                buf: [u8; size_of::<$ty>()],
                written: u8,
                #[pin]
                _pin: PhantomPinned,
            }
        }

        impl<W> $name<W> {
            pub(crate) fn new(dst: W, value: $ty) -> Self {
                $name { dst, buf: value.$to(), written: 0, _pin: PhantomPinned }
            }
        }

        impl<W: AsyncWrite> Future for $name<W> {
            type Output = io::Result<()>;

            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                let mut me = self.project();
                const N: usize = size_of::<$ty>();
                while (*me.written as usize) < N {
                    match me.dst.as_mut().poll_write(cx, &me.buf[*me.written as usize..]) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Ready(Ok(0)) => {
                            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                        }
                        Poll::Ready(Ok(n)) => *me.written += n as u8,
                    }
                }
                Poll::Ready(Ok(()))
            }
        }
    )*};
}

writer! {
    WriteU8: u8, to_be_bytes;
    WriteI8: i8, to_be_bytes;
    WriteU16: u16, to_be_bytes;
    WriteI16: i16, to_be_bytes;
    WriteU32: u32, to_be_bytes;
    WriteI32: i32, to_be_bytes;
    WriteU64: u64, to_be_bytes;
    WriteI64: i64, to_be_bytes;
    WriteU128: u128, to_be_bytes;
    WriteI128: i128, to_be_bytes;
    WriteF32: f32, to_be_bytes;
    WriteF64: f64, to_be_bytes;
    WriteU16Le: u16, to_le_bytes;
    WriteI16Le: i16, to_le_bytes;
    WriteU32Le: u32, to_le_bytes;
    WriteI32Le: i32, to_le_bytes;
    WriteU64Le: u64, to_le_bytes;
    WriteI64Le: i64, to_le_bytes;
    WriteU128Le: u128, to_le_bytes;
    WriteI128Le: i128, to_le_bytes;
    WriteF32Le: f32, to_le_bytes;
    WriteF64Le: f64, to_le_bytes;
}
