//! smol peer of the network benchmarks: `Async<TcpListener>` / `Async<TcpStream>`
//! (async-io's reactor) and the handlers of netloop's examples written over
//! futures-io's traits, with the same [`HttpConn`] parsing as every other server.
//!
//! With one thread (the benchmark's setting) it is a `LocalExecutor` run by
//! `smol::block_on` on the main thread, which also drives async-io's reactor while the
//! executor is idle: smol's own recipe for a single-threaded server. With more, a
//! shared `Executor` is run by that many threads (smol's `SMOL_THREADS` design), the
//! main thread among them.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;

use netloop_benches::net::{ECHO_BUFFER, HTTP_CHUNK, HttpConn, Mode, Next};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::{Async, Executor, LocalExecutor};

/// `examples/echo.rs`'s handler.
async fn echo(mut stream: Async<TcpStream>) {
    let mut buf = vec![0u8; ECHO_BUFFER];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if stream.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// `examples/http_hello.rs`'s handler.
async fn http(mut stream: Async<TcpStream>) {
    let _ = stream.get_ref().set_nodelay(true);
    let mut conn = HttpConn::new();
    let mut chunk = [0u8; HTTP_CHUNK];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let next = conn.feed(&chunk[..n]);
        if next == Next::Abort {
            return;
        }
        if !conn.out.is_empty() {
            if stream.write_all(&conn.out).await.is_err() {
                return;
            }
            conn.out.clear();
        }
        if next == Next::Close {
            let _ = stream.close().await;
            return;
        }
    }
}

async fn handle(stream: Async<TcpStream>, mode: Mode) {
    match mode {
        Mode::Echo => echo(stream).await,
        Mode::Http => http(stream).await,
    }
}

/// Accepts forever, one task per connection.
async fn accept_loop(listener: Async<TcpListener>, mode: Mode, spawn: impl Fn(Async<TcpStream>, Mode)) {
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            continue;
        };
        spawn(stream, mode);
    }
}

/// smol with `threads` threads (see the module doc). The accept loop is a task of its
/// own: as the future given to `run`, it would be polled again (one `accept` syscall,
/// one epoll re-arm) every time any connection's task ran.
pub fn server(addr: SocketAddr, mode: Mode, threads: usize, on_listen: impl FnOnce(SocketAddr)) -> io::Result<()> {
    let listener = Async::<TcpListener>::bind(addr)?;
    on_listen(listener.get_ref().local_addr()?);
    if threads <= 1 {
        // Leaked so that tasks may hold it for as long as the process lives.
        let ex: &'static LocalExecutor<'static> = Box::leak(Box::new(LocalExecutor::new()));
        ex.spawn(accept_loop(listener, mode, |stream, mode| {
            ex.spawn(handle(stream, mode)).detach()
        }))
        .detach();
        smol::block_on(ex.run(smol::future::pending::<io::Result<()>>()))
    } else {
        let ex: &'static Executor<'static> = Box::leak(Box::new(Executor::new()));
        for i in 1..threads {
            thread::Builder::new()
                .name(format!("smol-{i}"))
                .spawn(move || smol::block_on(ex.run(smol::future::pending::<()>())))?;
        }
        ex.spawn(accept_loop(listener, mode, |stream, mode| {
            ex.spawn(handle(stream, mode)).detach()
        }))
        .detach();
        smol::block_on(ex.run(smol::future::pending::<io::Result<()>>()))
    }
}
