//! monoio peer of the network benchmarks (issue 43's io_uring comparison): monoio's
//! `IoUringDriver` runtime, one per thread, with the handlers of netloop's examples
//! written over monoio's owned-buffer traits (`AsyncReadRent`, `AsyncWriteRentExt`) and
//! the same [`HttpConn`] parsing as every other server, so the bytes on the wire are the
//! same.
//!
//! Written as monoio is meant to be used: each connection owns its buffers and hands
//! them to the kernel by value (`read(buf)` gives the `Vec` back filled, `write_all(buf)`
//! gives it back sent), so nothing is copied between the runtime and the handler: the
//! echo handler writes back the very `Vec` it read into, and the HTTP handler lends
//! [`HttpConn::out`] to `write_all` and takes it back. One thread (the benchmark's
//! setting) is one runtime on the main thread, accepting in its `block_on` and spawning
//! connections onto itself (monoio's own examples); with more, one runtime per thread,
//! each with its own `SO_REUSEPORT` listener (monoio's thread-per-core design, like
//! tokio-ct-reuseport).

use std::io;
use std::net::SocketAddr;
use std::thread;

use monoio::io::{AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use netloop_benches::net::{ECHO_BUFFER, HTTP_CHUNK, HttpConn, Mode, Next};
use socket2::{Domain, Protocol, Socket, Type};

/// Submission queue entries of each ring. monoio's default is 1,024; with 1,024
/// connections each keeps a read in flight, so the ring gets room for a write each too.
const ENTRIES: u32 = 4096;

/// `examples/echo.rs`'s handler: read up to [`ECHO_BUFFER`] bytes, write them back.
async fn echo(mut stream: TcpStream) {
    let mut buf = Vec::with_capacity(ECHO_BUFFER);
    loop {
        let (res, read) = stream.read(buf).await;
        buf = read;
        if !matches!(res, Ok(n) if n > 0) {
            return;
        }
        let (res, written) = stream.write_all(buf).await;
        buf = written;
        if res.is_err() {
            return;
        }
        buf.clear();
    }
}

/// `examples/http_hello.rs`'s handler: one `write_all` per batch of requests read.
async fn http(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut conn = HttpConn::new();
    let mut chunk = Vec::with_capacity(HTTP_CHUNK);
    loop {
        let (res, read) = stream.read(chunk).await;
        chunk = read;
        if !matches!(res, Ok(n) if n > 0) {
            return;
        }
        let next = conn.feed(&chunk);
        chunk.clear();
        if next == Next::Abort {
            return;
        }
        if !conn.out.is_empty() {
            let (res, mut out) = stream.write_all(std::mem::take(&mut conn.out)).await;
            out.clear();
            conn.out = out;
            if res.is_err() {
                return;
            }
        }
        if next == Next::Close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Accepts forever on this thread's runtime, one spawned task per connection.
async fn accept_loop(listener: TcpListener, mode: Mode) {
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            continue;
        };
        match mode {
            Mode::Echo => monoio::spawn(echo(stream)),
            Mode::Http => monoio::spawn(http(stream)),
        };
    }
}

/// A listener as monoio's `TcpListener::bind` makes one (`SO_REUSEADDR`, a backlog of
/// 1,024, left blocking: io_uring needs no `O_NONBLOCK`), plus `SO_REUSEPORT` when
/// several threads share the address. Bound before any runtime exists, so that the
/// address is known (and every listener is in place) before `on_listen`.
fn listener(addr: SocketAddr, reuse_port: bool) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(reuse_port)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}

/// One io_uring runtime on this thread, serving `listener`.
fn run(listener: std::net::TcpListener, mode: Mode) -> io::Result<()> {
    let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .with_entries(ENTRIES)
        .build()?;
    rt.block_on(async move {
        accept_loop(TcpListener::from_std(listener)?, mode).await;
        Ok(())
    })
}

/// monoio on `threads` threads (see the module doc).
pub fn server(addr: SocketAddr, mode: Mode, threads: usize, on_listen: impl FnOnce(SocketAddr)) -> io::Result<()> {
    // The first bind fixes the port (when `addr` asks for any), the others share it.
    let first = listener(addr, threads > 1)?;
    let local = first.local_addr()?;
    let mut others = Vec::with_capacity(threads - 1);
    for _ in 1..threads {
        others.push(listener(local, true)?);
    }
    on_listen(local);
    let others: Vec<_> = others
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            thread::Builder::new()
                .name(format!("monoio-{}", i + 1))
                .spawn(move || run(l, mode))
        })
        .collect::<io::Result<_>>()?;
    run(first, mode)?;
    for t in others {
        t.join().map_err(|_| io::Error::other("a server thread panicked"))??;
    }
    Ok(())
}
