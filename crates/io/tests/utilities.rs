//! Behaviour checks of the utilities that tokio's own test files do not reach:
//! the uninitialized-buffer paths, split/unsplit, and the cooperative budget outside a
//! loop.

use futures::executor::block_on;
use netloop_io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncSeekExt, AsyncWriteExt, BufReader, BufStream, BufWriter, ReadBuf,
    SeekFrom,
};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A reader that hands out its bytes a few at a time.
struct Trickle<'a>(&'a [u8], usize);

impl AsyncRead for Trickle<'_> {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let n = self.0.len().min(self.1).min(buf.remaining());
        let (head, tail) = self.0.split_at(n);
        buf.put_slice(head);
        self.0 = tail;
        Poll::Ready(Ok(()))
    }
}

#[test]
fn read_to_end_appends_and_keeps_an_exact_capacity() {
    block_on(async {
        let data: Vec<u8> = (0..=255).cycle().take(1000).collect();
        let mut out = b"prefix".to_vec();
        let n = Trickle(&data, 7).read_to_end(&mut out).await.unwrap();
        assert_eq!(n, 1000);
        assert_eq!(&out[..6], b"prefix");
        assert_eq!(&out[6..], &data[..]);

        let mut exact = Vec::with_capacity(64);
        Trickle(&data[..64], 64).read_to_end(&mut exact).await.unwrap();
        assert_eq!(exact.capacity(), 64, "an exactly sized vector is not grown");
    });
}

#[test]
fn read_to_string_rejects_bad_utf8_and_keeps_the_original() {
    block_on(async {
        let mut s = String::from("keep");
        let err = (&b"ok\xff"[..]).read_to_string(&mut s).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(s, "keep");
        (&b" more"[..]).read_to_string(&mut s).await.unwrap();
        assert_eq!(s, "keep more");
    });
}

#[test]
fn read_exact_reports_early_eof() {
    block_on(async {
        let mut buf = [0u8; 4];
        let err = (&b"ab"[..]).read_exact(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(err.to_string(), "early eof");
    });
}

#[test]
fn read_buf_fills_spare_capacity_of_a_vec() {
    block_on(async {
        let mut v = Vec::with_capacity(3);
        let n = (&b"hello"[..]).read_buf(&mut v).await.unwrap();
        assert!(n >= 3);
        assert_eq!(&v[..], &b"hello"[..n]);
    });
}

#[test]
fn take_and_chain_compose() {
    block_on(async {
        let mut r = (&b"abc"[..]).take(2).chain(&b"xyz"[..]);
        let mut s = String::new();
        r.read_to_string(&mut s).await.unwrap();
        assert_eq!(s, "abxyz");
    });
}

#[test]
fn lines_split_and_fill_buf() {
    block_on(async {
        let mut lines = BufReader::with_capacity(3, &b"one\r\ntwo\nthree"[..]).lines();
        let mut got = Vec::new();
        while let Some(l) = lines.next_line().await.unwrap() {
            got.push(l);
        }
        assert_eq!(got, ["one", "two", "three"]);

        let mut parts = AsyncBufReadExt::split(&b"a,,b"[..], b',');
        assert_eq!(parts.next_segment().await.unwrap(), Some(b"a".to_vec()));
        assert_eq!(parts.next_segment().await.unwrap(), Some(Vec::new()));
        assert_eq!(parts.next_segment().await.unwrap(), Some(b"b".to_vec()));
        assert_eq!(parts.next_segment().await.unwrap(), None);

        let mut r = BufReader::new(&b"xyz"[..]);
        assert_eq!(r.fill_buf().await.unwrap(), b"xyz");
        r.consume(2);
        assert_eq!(r.fill_buf().await.unwrap(), b"z");
    });
}

#[test]
fn buffered_seek_counts_from_the_logical_position() {
    block_on(async {
        let mut r = BufReader::with_capacity(4, io::Cursor::new(b"0123456789".to_vec()));
        assert_eq!(r.read_u8().await.unwrap(), b'0');
        // The inner cursor is at 4; our position is 1.
        assert_eq!(r.seek(SeekFrom::Current(2)).await.unwrap(), 3);
        assert_eq!(r.read_u8().await.unwrap(), b'3');

        let mut w = BufWriter::new(io::Cursor::new(vec![0u8; 4]));
        w.write_all(b"ab").await.unwrap();
        assert_eq!(w.seek(SeekFrom::Start(3)).await.unwrap(), 3);
        w.write_all(b"z").await.unwrap();
        w.flush().await.unwrap();
        assert_eq!(w.get_ref().get_ref(), b"ab\0z");
    });
}

#[test]
fn buf_stream_reads_and_writes() {
    block_on(async {
        let (a, b) = netloop_io::duplex(64);
        let mut a = BufStream::new(a);
        let mut b = BufStream::new(b);
        a.write_all(b"hi\n").await.unwrap();
        a.flush().await.unwrap();
        let mut line = String::new();
        b.read_line(&mut line).await.unwrap();
        assert_eq!(line, "hi\n");
    });
}

#[test]
fn split_halves_pair_up_and_unsplit() {
    let (r1, w1) = netloop_io::split(netloop_io::SimplexStream::new_unsplit(8));
    let (r2, w2) = netloop_io::simplex(8);
    assert!(r1.is_pair_of(&w1) && w1.is_pair_of(&r1));
    assert!(!r1.is_pair_of(&w2));
    let _whole = r1.unsplit(w1);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (r3, _w3) = netloop_io::simplex(8);
        r3.unsplit(w2)
    }));
    assert!(caught.is_err());
    drop(r2);
}

#[test]
fn duplex_end_of_stream_and_broken_pipe() {
    block_on(async {
        let (mut a, mut b) = netloop_io::duplex(4);
        assert_eq!(a.write(b"abcdef").await.unwrap(), 4, "bounded by max_buf_size");
        drop(a);
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"abcd");
        let err = b.write(b"x").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    });
}

#[test]
fn copy_helpers_and_trivial_streams() {
    block_on(async {
        let mut out = Vec::new();
        let n = netloop_io::copy(&mut netloop_io::repeat(7).take(20_000), &mut out)
            .await
            .unwrap();
        assert_eq!(n, 20_000);
        assert!(out.iter().all(|&b| b == 7));

        let mut src = BufReader::new(&b"buffered"[..]);
        let n = netloop_io::copy_buf(&mut src, &mut netloop_io::sink()).await.unwrap();
        assert_eq!(n, 8);

        let mut e = netloop_io::empty();
        assert_eq!(e.read(&mut [0u8; 4]).await.unwrap(), 0);
        assert_eq!(e.write(b"abc").await.unwrap(), 3);
        assert_eq!(format!("{e:?}"), "Empty { .. }");
        assert_eq!(format!("{:?}", netloop_io::sink()), "Sink { .. }");
    });
}

#[test]
fn int_round_trip() {
    block_on(async {
        let mut v = Vec::new();
        v.write_u32(0xdead_beef).await.unwrap();
        v.write_i16_le(-2).await.unwrap();
        v.write_f64(1.5).await.unwrap();
        v.write_u128_le(u128::MAX - 1).await.unwrap();
        let mut r = &v[..];
        assert_eq!(r.read_u32().await.unwrap(), 0xdead_beef);
        assert_eq!(r.read_i16_le().await.unwrap(), -2);
        assert_eq!(r.read_f64().await.unwrap(), 1.5);
        assert_eq!(r.read_u128_le().await.unwrap(), u128::MAX - 1);
        let err = r.read_u8().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    });
}
