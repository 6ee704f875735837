//! [`AsyncBufReadExt`], the futures its methods return, and the [`Lines`] and [`Split`]
//! streams.

use crate::AsyncBufRead;
use pin_project_lite::pin_project;
use std::future::Future;
use std::io;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::string::FromUtf8Error;
use std::task::{Context, Poll, ready};

/// The methods that make an [`AsyncBufRead`] useful from `async` code.
///
/// Implemented for every `AsyncBufRead`; bring it into scope with
/// `use netloop_io::AsyncBufReadExt`.
///
/// ```
/// use netloop_io::AsyncBufReadExt;
///
/// futures::executor::block_on(async {
///     let mut src: &[u8] = b"a,b";
///     let mut field = Vec::new();
///     src.read_until(b',', &mut field).await.unwrap();
///     assert_eq!(field, b"a,");
/// });
/// ```
pub trait AsyncBufReadExt: AsyncBufRead {
    /// Reads bytes into `buf` up to and including the first `byte` (or to the end of
    /// the stream), returning how many were appended.
    ///
    /// Cancel safe in the sense that what was read before the future was dropped is in
    /// `buf`: calling it again with the same `buf` continues the same item.
    fn read_until<'a>(&'a mut self, byte: u8, buf: &'a mut Vec<u8>) -> ReadUntil<'a, Self>
    where
        Self: Unpin,
    {
        ReadUntil {
            reader: self,
            delimiter: byte,
            buf,
            read: 0,
            _pin: PhantomPinned,
        }
    }

    /// Reads a line, newline included, appending it to `buf`; returns how many bytes
    /// were appended (0 at end of stream). Fails with an
    /// [`InvalidData`](std::io::ErrorKind::InvalidData) error, leaving `buf` as it was,
    /// if the bytes are not UTF-8.
    ///
    /// Not cancel safe: if the future is dropped early, the part of the line already
    /// read is lost ([`lines`](Self::lines) is the cancel-safe way to read lines).
    fn read_line<'a>(&'a mut self, buf: &'a mut String) -> ReadLine<'a, Self>
    where
        Self: Unpin,
    {
        ReadLine {
            reader: self,
            bytes: std::mem::take(buf).into_bytes(),
            output: buf,
            read: 0,
            _pin: PhantomPinned,
        }
    }

    /// The stream of this reader's segments separated by `byte` (the separator is not
    /// included).
    fn split(self, byte: u8) -> Split<Self>
    where
        Self: Sized + Unpin,
    {
        Split {
            reader: self,
            buf: Vec::new(),
            delim: byte,
            read: 0,
        }
    }

    /// The buffered bytes, reading more first if none are buffered; an empty slice
    /// means end of stream. Call [`consume`](Self::consume) for the bytes used.
    ///
    /// Cancel safe.
    fn fill_buf(&mut self) -> FillBuf<'_, Self>
    where
        Self: Unpin,
    {
        FillBuf {
            reader: Some(self),
            _pin: PhantomPinned,
        }
    }

    /// Marks `amt` buffered bytes as used (see
    /// [`AsyncBufRead::consume`]).
    fn consume(&mut self, amt: usize)
    where
        Self: Unpin,
    {
        Pin::new(self).consume(amt)
    }

    /// The stream of this reader's lines, without their `\n` or `\r\n`.
    fn lines(self) -> Lines<Self>
    where
        Self: Sized,
    {
        Lines {
            reader: self,
            buf: Vec::new(),
        }
    }
}

impl<R: AsyncBufRead + ?Sized> AsyncBufReadExt for R {}

/// The index of the first `byte` in `haystack`: libc's `memchr` (vectorised in glibc,
/// and cheap to call on a line's worth of bytes, which is what `lines` searches).
#[cfg(unix)]
#[inline]
fn find_byte(byte: u8, haystack: &[u8]) -> Option<usize> {
    if haystack.is_empty() {
        return None;
    }
    let start = haystack.as_ptr();
    // SAFETY: `start` and `haystack.len()` describe one live, initialized slice, and
    // memchr reads no byte outside it.
    let found = unsafe { libc::memchr(start.cast(), libc::c_int::from(byte), haystack.len()) };
    if found.is_null() {
        None
    } else {
        // memchr returned a pointer into `haystack`, at or after `start`.
        Some(found as usize - start as usize)
    }
}

/// The index of the first `byte` in `haystack` (the memchr crate's search).
#[cfg(not(unix))]
#[inline]
fn find_byte(byte: u8, haystack: &[u8]) -> Option<usize> {
    memchr::memchr(byte, haystack)
}

/// Appends to `buf` up to and including `delim`, counting in `read` across polls;
/// returns (and resets) the count when the delimiter or the end of stream is reached.
pub(super) fn read_until_inner<R: AsyncBufRead + ?Sized>(
    mut reader: Pin<&mut R>,
    cx: &mut Context<'_>,
    delim: u8,
    buf: &mut Vec<u8>,
    read: &mut usize,
) -> Poll<io::Result<usize>> {
    loop {
        let (found, used) = {
            let chunk = match ready!(reader.as_mut().poll_fill_buf(cx)) {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Poll::Ready(Err(e)),
            };
            match find_byte(delim, chunk) {
                Some(at) => {
                    buf.extend_from_slice(&chunk[..=at]);
                    (true, at + 1)
                }
                None => {
                    buf.extend_from_slice(chunk);
                    (false, chunk.len())
                }
            }
        };
        reader.as_mut().consume(used);
        *read += used;
        if found || used == 0 {
            return Poll::Ready(Ok(std::mem::take(read)));
        }
    }
}

/// Puts the outcome of a string read into `output`.
///
/// `bytes` holds the caller's original string followed by the `read` new bytes. When
/// they are not UTF-8, `output` gets back only its original contents. On an I/O error
/// with valid bytes, the new bytes stay unless `drop_on_error` asks to cut them off.
pub(super) fn finish_string_read(
    res: io::Result<usize>,
    utf8: Result<String, FromUtf8Error>,
    read: usize,
    output: &mut String,
    drop_on_error: bool,
) -> Poll<io::Result<usize>> {
    fn restore(output: &mut String, err: FromUtf8Error, new: usize) {
        let mut bytes = err.into_bytes();
        bytes.truncate(bytes.len() - new);
        *output = String::from_utf8(bytes).expect("The original data must be valid utf-8.");
    }
    match (res, utf8) {
        (Ok(n), Ok(s)) => {
            *output = s;
            Poll::Ready(Ok(n))
        }
        (Err(e), Ok(s)) => {
            *output = s;
            if drop_on_error {
                output.truncate(output.len() - read);
            }
            Poll::Ready(Err(e))
        }
        (Ok(n), Err(bad)) => {
            let cause = bad.utf8_error();
            restore(output, bad, n);
            Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, cause)))
        }
        (Err(e), Err(bad)) => {
            restore(output, bad, read);
            Poll::Ready(Err(e))
        }
    }
}

pin_project! {
    /// The future of [`AsyncBufReadExt::read_until`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ReadUntil<'a, R: ?Sized> {
        reader: &'a mut R,
        delimiter: u8,
        buf: &'a mut Vec<u8>,
        read: usize,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<R: AsyncBufRead + ?Sized + Unpin> Future for ReadUntil<'_, R> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        read_until_inner(Pin::new(&mut **me.reader), cx, *me.delimiter, me.buf, me.read)
    }
}

pin_project! {
    /// The future of [`AsyncBufReadExt::read_line`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ReadLine<'a, R: ?Sized> {
        reader: &'a mut R,
        // Empty while the read runs: its contents are at the start of `bytes`.
        output: &'a mut String,
        bytes: Vec<u8>,
        read: usize,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<R: AsyncBufRead + ?Sized + Unpin> Future for ReadLine<'_, R> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let me = self.project();
        // Fast path: nothing of this line read yet and the reader's buffer holds all of
        // it: validate just the line and append it to the caller's string, rather than
        // append it to the string's bytes and validate them all.
        if *me.read == 0 {
            let used = match Pin::new(&mut **me.reader).poll_fill_buf(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) if e.kind() != io::ErrorKind::Interrupted => {
                    let utf8 = String::from_utf8(std::mem::take(me.bytes));
                    return finish_string_read(Err(e), utf8, 0, me.output, false);
                }
                Poll::Ready(Err(_)) => None,
                Poll::Ready(Ok(chunk)) => match find_byte(b'\n', chunk).map(|at| &chunk[..=at]) {
                    Some(line) => match std::str::from_utf8(line) {
                        Ok(line) => {
                            // `read` is 0, so `bytes` are the caller's string, as taken.
                            let mut output =
                                String::from_utf8(std::mem::take(me.bytes)).expect("the caller's string is UTF-8");
                            output.push_str(line);
                            **me.output = output;
                            Some(line.len())
                        }
                        // The general path below reports it, with the string restored.
                        Err(_) => None,
                    },
                    None => None,
                },
            };
            if let Some(used) = used {
                Pin::new(&mut **me.reader).consume(used);
                return Poll::Ready(Ok(used));
            }
        }
        let res = ready!(read_until_inner(
            Pin::new(&mut **me.reader),
            cx,
            b'\n',
            me.bytes,
            me.read
        ));
        let utf8 = String::from_utf8(std::mem::take(me.bytes));
        finish_string_read(res, utf8, *me.read, me.output, false)
    }
}

pin_project! {
    /// The future of [`AsyncBufReadExt::fill_buf`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct FillBuf<'a, R: ?Sized> {
        reader: Option<&'a mut R>,
        #[pin]
        _pin: PhantomPinned,
    }
}

impl<'a, R: AsyncBufRead + ?Sized + Unpin> Future for FillBuf<'a, R> {
    type Output = io::Result<&'a [u8]>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let me = self.project();
        let reader: &'a mut R = me.reader.take().expect("Polled after completion.");
        // Poll through a raw pointer so that, when the result is ready, the slice can
        // borrow from the `&'a mut R` we own for all of `'a`.
        let ptr: *mut R = reader;
        // SAFETY: `ptr` comes from `reader`, which is not used again on this path
        // except to be put back on `Pending` (after the borrow below has ended); on
        // `Ready` the `&'a mut R` is given up for good, so the returned slice is the only
        // borrow of the reader for the rest of `'a`.
        match Pin::new(unsafe { &mut *ptr }).poll_fill_buf(cx) {
            Poll::Ready(res) => Poll::Ready(res),
            Poll::Pending => {
                *me.reader = Some(reader);
                Poll::Pending
            }
        }
    }
}

pin_project! {
    /// The lines of an [`AsyncBufRead`], from [`AsyncBufReadExt::lines`].
    ///
    /// Reading a line with [`next_line`](Lines::next_line) is cancel safe: the part of a
    /// line read before the future was dropped is kept for the next call.
    #[derive(Debug)]
    #[must_use = "streams do nothing unless polled"]
    pub struct Lines<R> {
        #[pin]
        reader: R,
        buf: Vec<u8>,
    }
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    /// The next line without its `\n` or `\r\n`, or `None` at the end of the stream.
    ///
    /// Fails with an [`InvalidData`](std::io::ErrorKind::InvalidData) error wrapping a
    /// [`FromUtf8Error`] if the line is not UTF-8.
    pub async fn next_line(&mut self) -> io::Result<Option<String>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next_line(cx)).await
    }

    /// The reader, mutably.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.reader
    }

    /// The reader.
    pub fn get_ref(&mut self) -> &R {
        &self.reader
    }

    /// Takes the reader back; bytes of a line read only in part are lost.
    pub fn into_inner(self) -> R {
        self.reader
    }
}

impl<R: AsyncBufRead> Lines<R> {
    /// Polls for the next line (see [`next_line`](Self::next_line)).
    pub fn poll_next_line(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<Option<String>>> {
        let mut me = self.project();
        // Fast path: no part of a line is carried over and the reader's buffer holds a
        // whole one. The line is copied out once into a string of its exact size,
        // rather than grown into `buf` and handed over.
        if me.buf.is_empty() {
            let whole = match me.reader.as_mut().poll_fill_buf(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) if e.kind() != io::ErrorKind::Interrupted => return Poll::Ready(Err(e)),
                Poll::Ready(Err(_)) => None,
                Poll::Ready(Ok(chunk)) => find_byte(b'\n', chunk).map(|at| {
                    let end = if at > 0 && chunk[at - 1] == b'\r' { at - 1 } else { at };
                    (at + 1, String::from_utf8(chunk[..end].to_vec()))
                }),
            };
            if let Some((used, line)) = whole {
                me.reader.as_mut().consume(used);
                return Poll::Ready(
                    line.map(Some)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
                );
            }
        }
        let mut read = 0;
        let n = ready!(read_until_inner(me.reader, cx, b'\n', me.buf, &mut read))?;
        if n == 0 && me.buf.is_empty() {
            return Poll::Ready(Ok(None));
        }
        let mut line = std::mem::take(me.buf);
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        match String::from_utf8(line) {
            Ok(line) => Poll::Ready(Ok(Some(line))),
            Err(e) => Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e))),
        }
    }
}

pin_project! {
    /// The segments of an [`AsyncBufRead`] between separator bytes, from
    /// [`AsyncBufReadExt::split`].
    ///
    /// Reading a segment with [`next_segment`](Split::next_segment) is cancel safe.
    #[derive(Debug)]
    #[must_use = "streams do nothing unless polled"]
    pub struct Split<R> {
        #[pin]
        reader: R,
        buf: Vec<u8>,
        delim: u8,
        read: usize,
    }
}

impl<R: AsyncBufRead + Unpin> Split<R> {
    /// The next segment without its separator, or `None` at the end of the stream.
    pub async fn next_segment(&mut self) -> io::Result<Option<Vec<u8>>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next_segment(cx)).await
    }
}

impl<R: AsyncBufRead> Split<R> {
    /// Polls for the next segment (see [`next_segment`](Self::next_segment)).
    pub fn poll_next_segment(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<Option<Vec<u8>>>> {
        let me = self.project();
        let n = ready!(read_until_inner(me.reader, cx, *me.delim, me.buf, me.read))?;
        if n == 0 && me.buf.is_empty() {
            return Poll::Ready(Ok(None));
        }
        if me.buf.last() == Some(me.delim) {
            me.buf.pop();
        }
        Poll::Ready(Ok(Some(std::mem::take(me.buf))))
    }
}

#[cfg(test)]
mod tests {
    use super::find_byte;
    use crate::{AsyncBufReadExt, BufReader};

    /// Every line of `data` read through a `BufReader` of `capacity` bytes, errors as
    /// their kind.
    fn lines_of(data: &[u8], capacity: usize) -> Vec<Result<String, std::io::ErrorKind>> {
        futures::executor::block_on(async {
            let mut lines = BufReader::with_capacity(capacity, data).lines();
            let mut out = Vec::new();
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) => out.push(Ok(line)),
                    Ok(None) => return out,
                    Err(e) => out.push(Err(e.kind())),
                }
            }
        })
    }

    #[test]
    fn read_line_is_the_same_whole_in_the_buffer_or_split_across_fills() {
        let data = b"one\r\n\ntwo\n\xff\xfe\nthree";
        for capacity in [1, 2, 3, 4, 64] {
            futures::executor::block_on(async {
                let mut reader = BufReader::with_capacity(capacity, &data[..]);
                let mut line = String::from("kept:");
                assert_eq!(reader.read_line(&mut line).await.unwrap(), 5);
                assert_eq!(line, "kept:one\r\n");
                assert_eq!(reader.read_line(&mut line).await.unwrap(), 1);
                assert_eq!(line, "kept:one\r\n\n");
                line.clear();
                assert_eq!(reader.read_line(&mut line).await.unwrap(), 4);
                assert_eq!(line, "two\n");
                let err = reader.read_line(&mut line).await.unwrap_err();
                assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "capacity {capacity}");
                assert_eq!(line, "two\n", "the string is restored, capacity {capacity}");
                assert_eq!(reader.read_line(&mut line).await.unwrap(), 5);
                assert_eq!(line, "two\nthree");
                assert_eq!(reader.read_line(&mut line).await.unwrap(), 0);
            });
        }
    }

    #[test]
    fn lines_are_the_same_whole_in_the_buffer_or_split_across_fills() {
        let data = b"one\r\n\ntwo\n\xff\xfe\nthree\r\nfour";
        let bad = std::io::ErrorKind::InvalidData;
        let expected = vec![
            Ok("one".to_string()),
            Ok(String::new()),
            Ok("two".to_string()),
            Err(bad),
            Ok("three".to_string()),
            Ok("four".to_string()),
        ];
        // From 64 bytes every line is whole in the buffer (the fast path); at 1 to 4
        // they are split across fills.
        for capacity in [1, 2, 3, 4, 64] {
            assert_eq!(lines_of(data, capacity), expected, "capacity {capacity}");
        }
    }

    #[test]
    fn find_byte_finds_the_first_occurrence() {
        assert_eq!(find_byte(b'\n', b""), None);
        assert_eq!(find_byte(b'\n', b"abc"), None);
        assert_eq!(find_byte(b'\n', b"\nabc\n"), Some(0));
        assert_eq!(find_byte(b'\n', b"abc\n"), Some(3));
        let long: Vec<u8> = (0..1000u32)
            .map(|i| if i % 300 == 299 { b'\n' } else { b'x' })
            .collect();
        assert_eq!(find_byte(b'\n', &long), Some(299));
        assert_eq!(find_byte(b'\n', &long[300..]), Some(299));
        assert_eq!(find_byte(0, &[1, 2, 0, 0]), Some(2));
    }
}
