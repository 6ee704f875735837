// The workloads of `examples/io_report.rs`, written once against a runtime named `rt`,
// I/O utilities named `io` and sockets named `net`, and included into one module per
// configuration (`use netloop as rt; use netloop::io; use netloop::net;`, the same
// with `use tokio::io;`, and `use tokio as rt; use tokio::io; use tokio::net;`), so all
// of them run this source. Only tokio's API is used.
//
// Every shape runs in a task spawned from `block_on` of a runtime built by the caller;
// its helper tasks are plain `rt::spawn`s from that task (on netloop: the same loop;
// on tokio: the same worker's queue, until the other worker steals them). The time is
// measured inside the shape's task, from just before the first byte is written (the
// socket pairs are connected, and the data built, before the clock starts) until the
// last byte was read and every helper task has finished.

use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

use io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use super::Shape;

/// The bytes of one line, newline included.
const LINE: usize = 40;
/// Lines the writer of the line shapes writes per `write_all`.
const LINES_PER_WRITE: usize = 1024;
/// The chunk the duplex writer writes and its reader reads.
const DUPLEX_CHUNK: usize = 16 * 1024;
/// The buffer of the sockets' and duplex's readers, and of the copy's writer.
const READ_BUF: usize = 64 * 1024;

/// A multi-thread runtime with 2 workers.
pub fn two_workers() -> rt::runtime::Runtime {
    rt::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a multi-thread runtime")
}

/// The full name of this configuration's `io::BufReader` over a TCP stream: which
/// utilities and sockets ran.
pub fn reader_type() -> &'static str {
    std::any::type_name::<io::BufReader<net::TcpStream>>()
}

/// Runs `shape` in a task of `rt` and returns its output.
fn in_task<T: Send + 'static>(rt: &rt::runtime::Runtime, shape: impl Future<Output = T> + Send + 'static) -> T {
    rt.block_on(async move { rt::spawn(shape).await.expect("an io shape panicked") })
}

/// Runs one shape on `rt`.
pub fn timed(rt: &rt::runtime::Runtime, shape: Shape) -> Duration {
    match shape {
        Shape::SliceLines { lines } => in_task(rt, slice_lines(lines)),
        Shape::SocketLines { lines } => in_task(rt, socket_lines(lines, false)),
        Shape::SocketReadLine { lines } => in_task(rt, socket_lines(lines, true)),
        Shape::Copy { bytes } => in_task(rt, copy_between_sockets(bytes)),
        Shape::DuplexStream { bytes } => in_task(rt, duplex_stream(bytes)),
        Shape::DuplexPingPong { round_trips, size } => in_task(rt, duplex_ping_pong(round_trips, size)),
    }
}

/// `lines` lines of [`LINE`] bytes each (the last one a newline), in a whole number of
/// blocks of [`LINES_PER_WRITE`] lines: every block is the same.
fn line_block() -> Vec<u8> {
    let mut block = Vec::with_capacity(LINE * LINES_PER_WRITE);
    for i in 0..LINES_PER_WRITE {
        let line = format!("{i:08} the quick brown fox jumps over");
        assert_eq!(line.len(), LINE - 1);
        block.extend_from_slice(line.as_bytes());
        block.push(b'\n');
    }
    block
}

/// A connected pair of TCP streams over loopback: (the connecting side, the accepted
/// side).
async fn socket_pair() -> (net::TcpStream, net::TcpStream) {
    let listener = net::TcpListener::bind("127.0.0.1:0").await.expect("bind on loopback");
    let addr = listener.local_addr().expect("the listener's address");
    let connect = rt::spawn(async move { net::TcpStream::connect(addr).await });
    let (accepted, _) = listener.accept().await.expect("accept");
    let connected = connect.await.expect("the connect task").expect("connect");
    (connected, accepted)
}

/// Reads every line of `reader` with `next_line` (`read_line` into one reused `String`
/// when `read_line`); the number of lines and their bytes (newlines excluded).
async fn read_all_lines<R: io::AsyncBufRead + Unpin>(reader: R, read_line: bool) -> (u64, u64) {
    let (mut lines, mut bytes) = (0u64, 0u64);
    if read_line {
        let mut reader = reader;
        let mut line = String::with_capacity(2 * LINE);
        loop {
            line.clear();
            let n = reader.read_line(&mut line).await.expect("read_line");
            if n == 0 {
                break;
            }
            lines += 1;
            bytes += black_box(line.trim_end_matches('\n')).len() as u64;
        }
    } else {
        let mut iter = reader.lines();
        while let Some(line) = iter.next_line().await.expect("next_line") {
            lines += 1;
            bytes += black_box(line).len() as u64;
        }
    }
    (lines, bytes)
}

/// Pure CPU: a `BufReader` over a `&[u8]` holding `lines` lines, read with
/// `lines().next_line()`.
async fn slice_lines(lines: u64) -> Duration {
    let block = line_block();
    let blocks = (lines as usize).div_ceil(LINES_PER_WRITE);
    let data = block.repeat(blocks);
    let start = Instant::now();
    let counted = read_all_lines(io::BufReader::new(&data[..]), false).await;
    let took = start.elapsed();
    assert_eq!(counted, ((blocks * LINES_PER_WRITE) as u64, (data.len() - blocks * LINES_PER_WRITE) as u64));
    took
}

/// A peer task writes `lines` lines into one end of a socket pair in blocks of
/// [`LINES_PER_WRITE`], then shuts its write side; this task reads them from the other
/// end through a `BufReader`, by `next_line` or by `read_line`.
async fn socket_lines(lines: u64, read_line: bool) -> Duration {
    let block = line_block();
    let blocks = (lines as usize).div_ceil(LINES_PER_WRITE);
    let (mut writer, reader) = socket_pair().await;
    let start = Instant::now();
    let peer = rt::spawn(async move {
        for _ in 0..blocks {
            writer.write_all(&block).await.expect("write the lines");
        }
        writer.shutdown().await.expect("shut the write side");
    });
    let counted = read_all_lines(io::BufReader::new(reader), read_line).await;
    peer.await.expect("the writer panicked");
    let took = start.elapsed();
    let total = (blocks * LINES_PER_WRITE) as u64;
    assert_eq!(counted, (total, total * (LINE as u64 - 1)));
    took
}

/// Two socket pairs A and B: a writer task pushes `bytes` into A, a copier task runs
/// `io::copy` from A's far end into B, and this task drains B's far end.
async fn copy_between_sockets(bytes: u64) -> Duration {
    let (mut a_in, mut a_out) = socket_pair().await;
    let (mut b_in, mut b_out) = socket_pair().await;
    let chunk = vec![0x5au8; READ_BUF];
    let start = Instant::now();
    let writer = rt::spawn(async move {
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            a_in.write_all(&chunk[..n]).await.expect("write into A");
            left -= n as u64;
        }
        a_in.shutdown().await.expect("shut A");
    });
    let copier = rt::spawn(async move {
        let copied = io::copy(&mut a_out, &mut b_in).await.expect("copy A to B");
        b_in.shutdown().await.expect("shut B");
        copied
    });
    let mut buf = vec![0u8; READ_BUF];
    let mut drained = 0u64;
    loop {
        let n = b_out.read(&mut buf).await.expect("drain B");
        if n == 0 {
            break;
        }
        drained += n as u64;
    }
    writer.await.expect("the writer panicked");
    let copied = copier.await.expect("the copier panicked");
    let took = start.elapsed();
    assert_eq!((copied, drained), (bytes, bytes));
    took
}

/// `duplex(64 KiB)`: a writer task writes `bytes` in chunks of [`DUPLEX_CHUNK`] into
/// one end, this task reads them from the other with a buffer of the same size.
async fn duplex_stream(bytes: u64) -> Duration {
    let (mut near, mut far) = io::duplex(READ_BUF);
    let start = Instant::now();
    let writer = rt::spawn(async move {
        let chunk = vec![0xa5u8; DUPLEX_CHUNK];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            far.write_all(&chunk[..n]).await.expect("write into the duplex");
            left -= n as u64;
        }
        far.shutdown().await.expect("shut the duplex");
    });
    let mut buf = vec![0u8; DUPLEX_CHUNK];
    let mut read = 0u64;
    loop {
        let n = near.read(&mut buf).await.expect("read the duplex");
        if n == 0 {
            break;
        }
        read += n as u64;
    }
    writer.await.expect("the writer panicked");
    let took = start.elapsed();
    assert_eq!(read, bytes);
    took
}

/// `duplex(64 KiB)`: `round_trips` times, write `size` bytes and read `size` back from
/// an echo task at the other end.
async fn duplex_ping_pong(round_trips: u64, size: usize) -> Duration {
    let (mut near, mut far) = io::duplex(READ_BUF);
    let start = Instant::now();
    let echo = rt::spawn(async move {
        let mut buf = vec![0u8; size];
        for _ in 0..round_trips {
            far.read_exact(&mut buf).await.expect("read the ping");
            far.write_all(&buf).await.expect("write the pong");
        }
    });
    let ping = vec![0x3cu8; size];
    let mut pong = vec![0u8; size];
    for _ in 0..round_trips {
        near.write_all(&ping).await.expect("write the ping");
        near.read_exact(&mut pong).await.expect("read the pong");
    }
    echo.await.expect("the echo task panicked");
    let took = start.elapsed();
    assert_eq!(pong, ping);
    took
}
