//! Workloads of the network benchmarks: one server core, one load-client core.
//!
//! Every server, whatever its runtime, runs the same two handlers, those of netloop's
//! examples `crates/netloop/examples/echo.rs` and `http_hello.rs`:
//!
//! - **echo**: read into a 16 KiB buffer, `write_all` what was read, until EOF;
//! - **http**: a keep-alive HTTP/1.1 "Hello, world!" server (`TCP_NODELAY` on, one
//!   `write` per batch of requests read, pipelining understood) whose parsing is
//!   [`HttpConn`], shared by every server here.
//!
//! The async handlers [`echo`] and [`http`] are written once and expanded for
//! netloop's I/O traits (the netloop server, [`netloop_server`]) and for tokio's
//! ([`net_handlers!`](crate::net_handlers), expanded for tokio's in the tokio servers of
//! `tokio_peer/net.rs`), so both run the very same
//! code. smol's (`smol_peer/net.rs`) is the same code over futures-io's traits. The
//! floor is [`mio_server`], a hand-written single-threaded mio loop with no futures;
//! [`futures_floor`] runs the same handlers as the runtimes on the least executor that
//! can poll them, so that what futures cost and what a runtime costs can be told apart.
//! The load client is [`client`] (plain mio on one thread); `wrk` drives HTTP in the
//! closed loop. The servers are `examples/net_server.rs`, the client is
//! `examples/net_client.rs`, and `net/run.sh` runs the whole matrix and prints the table
//! of `docs/BENCHMARKS.md`. Nothing here asserts a speed.

use std::io;
use std::net::SocketAddr;

use netloop::net::{TcpListener, serve};

pub mod client;
pub mod futures_floor;
pub mod mio_server;

/// Connections of every load shape.
pub const CONNECTIONS: usize = 64;

/// The echo handler's read buffer (as in `examples/echo.rs`).
pub const ECHO_BUFFER: usize = 16 * 1024;

/// The HTTP handler's read chunk (as in `examples/http_hello.rs`).
pub const HTTP_CHUNK: usize = 8 * 1024;

/// A request head longer than this closes the connection (as in `http_hello.rs`).
pub const HTTP_MAX_HEAD: usize = 64 * 1024;

/// The answer to every HTTP request.
pub const HTTP_RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, world!";

/// The request the load client sends in HTTP mode (wrk's is the same plus a port).
pub const HTTP_REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/// What a server does with its connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Echo every byte back.
    Echo,
    /// Answer every HTTP/1.1 request with [`HTTP_RESPONSE`].
    Http,
}

impl Mode {
    /// `echo` or `http`.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "echo" => Some(Mode::Echo),
            "http" => Some(Mode::Http),
            _ => None,
        }
    }
}

/// Finds the end of one request head, if the buffer holds a whole one.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// True if the request head asks to close the connection.
pub fn wants_close(head: &[u8]) -> bool {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    head.contains("\r\nconnection: close") || head.starts_with("get / http/1.0") && !head.contains("keep-alive")
}

/// What [`HttpConn::feed`] asks the connection to do after writing [`HttpConn::out`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Read more.
    Read,
    /// Write `out`, then shut the write side down and stop.
    Close,
    /// A head longer than [`HTTP_MAX_HEAD`]: stop without writing.
    Abort,
}

/// One HTTP connection's parsing state: the loop body of `http_hello.rs`'s
/// `serve_connection`, shared by every server so that they all do the same work.
#[derive(Debug)]
pub struct HttpConn {
    buf: Vec<u8>,
    /// Responses to write (one `write` per batch of requests read).
    pub out: Vec<u8>,
}

impl Default for HttpConn {
    fn default() -> HttpConn {
        HttpConn::new()
    }
}

impl HttpConn {
    /// Empty buffers of 8 KiB each.
    pub fn new() -> HttpConn {
        HttpConn {
            buf: Vec::with_capacity(8 * 1024),
            out: Vec::with_capacity(8 * 1024),
        }
    }

    /// Takes the bytes just read; queues a response per whole request head in `out`.
    pub fn feed(&mut self, chunk: &[u8]) -> Next {
        self.buf.extend_from_slice(chunk);
        let mut close = false;
        let mut consumed = 0;
        while let Some(end) = head_end(&self.buf[consumed..]) {
            close |= wants_close(&self.buf[consumed..consumed + end]);
            self.out.extend_from_slice(HTTP_RESPONSE);
            consumed += end;
            if close {
                break;
            }
        }
        self.buf.drain(..consumed);
        if self.buf.len() > HTTP_MAX_HEAD {
            Next::Abort
        } else if close {
            Next::Close
        } else {
            Next::Read
        }
    }
}

/// Defines the handlers `echo` and `http` over the I/O traits of the module `$io`
/// (`netloop::io` here, `tokio::io` in `tokio_peer/net.rs`): one source for every
/// runtime's servers.
#[macro_export]
macro_rules! net_handlers {
    ($($io:ident)::+) => {
        /// The echo handler of `examples/echo.rs`, over the given I/O traits.
        pub async fn echo<S: $($io)::+::AsyncRead + $($io)::+::AsyncWrite + Unpin>(mut stream: S) {
            use $($io)::+::{AsyncReadExt as _, AsyncWriteExt as _};
            let mut buf = vec![0u8; $crate::net::ECHO_BUFFER];
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

        /// The connection handler of `examples/http_hello.rs`, over the given I/O traits. The
        /// caller sets `TCP_NODELAY` first, as the example does.
        pub async fn http<S: $($io)::+::AsyncRead + $($io)::+::AsyncWrite + Unpin>(mut stream: S) {
            use $($io)::+::{AsyncReadExt as _, AsyncWriteExt as _};
            let mut conn = $crate::net::HttpConn::new();
            let mut chunk = [0u8; $crate::net::HTTP_CHUNK];
            loop {
                let n = match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let next = conn.feed(&chunk[..n]);
                if next == $crate::net::Next::Abort {
                    return;
                }
                if !conn.out.is_empty() {
                    if stream.write_all(&conn.out).await.is_err() {
                        return;
                    }
                    conn.out.clear();
                }
                if next == $crate::net::Next::Close {
                    let _ = stream.shutdown().await;
                    return;
                }
            }
        }
    };
}

net_handlers!(netloop::io);

/// The netloop server: a multi-thread runtime of `threads` event loops and
/// [`serve`] (the acceptor of the examples) with [`echo`] or
/// [`http`]. Calls `on_listen` with the bound address, then serves until the process
/// ends.
pub fn netloop_server(
    addr: SocketAddr,
    mode: Mode,
    threads: usize,
    on_listen: impl FnOnce(SocketAddr),
) -> io::Result<()> {
    let rt = netloop::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(addr).await?;
        on_listen(listener.local_addr()?);
        let acceptor = match mode {
            Mode::Echo => serve(listener, |stream, _peer| echo(stream)),
            Mode::Http => serve(listener, |stream, _peer| async move {
                let _ = stream.set_nodelay(true);
                http(stream).await
            }),
        };
        acceptor.await.ok();
        Ok(())
    })
}
