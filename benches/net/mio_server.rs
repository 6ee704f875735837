//! The floor: a hand-written single-threaded mio event loop, no futures, no tasks.
//!
//! One `Poll`, one listener, a slab of connections. Sockets are registered once for
//! read and write readiness (edge-triggered, as netloop, tokio and smol do). On a
//! readable edge a connection reads until the socket is drained (a read shorter than
//! the buffer counts as drained, the same shortcut netloop and tokio take) and answers
//! each read at once: echo writes back what it read, HTTP feeds [`HttpConn`] and writes
//! its responses. A write the socket cannot take whole is kept and finished on the next
//! writable edge; meanwhile the connection reads nothing more (the back-pressure of the
//! async handlers' `write_all`). Nothing is allocated per request.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use super::{ECHO_BUFFER, HTTP_CHUNK, HttpConn, Mode, Next};

/// The listener's token (connections' tokens are their slab keys).
pub(super) const LISTENER: Token = Token(usize::MAX);

struct Conn {
    stream: TcpStream,
    /// A readable edge not yet read to `WouldBlock` (or a short read).
    readable: bool,
    /// Output the socket has not taken yet, from `sent` on.
    pending: Vec<u8>,
    sent: usize,
    /// After `pending` is flushed: shut the write side and close (HTTP `close`).
    close_after_flush: bool,
    http: Option<HttpConn>,
}

/// What to do with a connection after handling an event.
enum Outcome {
    Keep,
    Close,
}

/// Serves `mode` on `addr` on this thread until the process ends; calls `on_listen`
/// with the bound address first.
pub fn run(addr: SocketAddr, mode: Mode, on_listen: impl FnOnce(SocketAddr)) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(1024);
    let listener = listen(&poll, addr, on_listen)?;

    let mut conns: Slab<Conn> = Slab::with_capacity(1024);
    let mut buf = vec![
        0u8;
        match mode {
            Mode::Echo => ECHO_BUFFER,
            Mode::Http => HTTP_CHUNK,
        }
    ];
    loop {
        wait_for_events(&mut poll, &mut events)?;
        for event in events.iter() {
            if event.token() == LISTENER {
                accept_each(&poll, &listener, &mut conns, mode, |stream, _key| Conn {
                    stream,
                    readable: false,
                    pending: Vec::new(),
                    sent: 0,
                    close_after_flush: false,
                    http: (mode == Mode::Http).then(HttpConn::new),
                });
                continue;
            }
            let key = event.token().0;
            let Some(conn) = conns.get_mut(key) else { continue };
            if event.is_readable() || event.is_read_closed() || event.is_error() {
                conn.readable = true;
            }
            let outcome = if event.is_writable() || event.is_error() {
                flush(conn).and_then(|done| if done { drive(conn, &mut buf) } else { Ok(Outcome::Keep) })
            } else {
                drive(conn, &mut buf)
            };
            if !matches!(outcome, Ok(Outcome::Keep)) {
                // Closing the descriptor removes it from the epoll set.
                conns.remove(key);
            }
        }
    }
}

/// Binds `addr`, registers the listener for readable edges under [`LISTENER`], and
/// tells `on_listen` the bound address. Shared with the futures floor, as are
/// [`wait_for_events`] and [`accept_each`], so that both floors accept alike.
pub(super) fn listen(poll: &Poll, addr: SocketAddr, on_listen: impl FnOnce(SocketAddr)) -> io::Result<TcpListener> {
    let mut listener = TcpListener::bind(addr)?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    on_listen(listener.local_addr()?);
    Ok(listener)
}

/// Blocks until events come; a signal's interruption waits again.
#[inline]
pub(super) fn wait_for_events(poll: &mut Poll, events: &mut Events) -> io::Result<()> {
    loop {
        match poll.poll(events, None) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            result => return result,
        }
    }
}

/// Accepts every connection waiting on `listener`: `TCP_NODELAY` for HTTP, registered
/// for read and write edges under its key in `table`, where `make` builds its entry.
pub(super) fn accept_each<T>(
    poll: &Poll,
    listener: &TcpListener,
    table: &mut Slab<T>,
    mode: Mode,
    mut make: impl FnMut(TcpStream, usize) -> T,
) {
    loop {
        match listener.accept() {
            Ok((mut stream, _peer)) => {
                if mode == Mode::Http {
                    let _ = stream.set_nodelay(true);
                }
                let entry = table.vacant_entry();
                let key = entry.key();
                if poll
                    .registry()
                    .register(&mut stream, Token(key), Interest::READABLE | Interest::WRITABLE)
                    .is_err()
                {
                    continue;
                }
                entry.insert(make(stream, key));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Out of descriptors and the like: the next readable edge retries (the
            // benchmark opens 64 connections, so this does not happen).
            Err(_) => return,
        }
    }
}

/// Writes what is pending; `Ok(true)` once nothing is (and the connection goes on).
fn flush(conn: &mut Conn) -> io::Result<bool> {
    while conn.sent < conn.pending.len() {
        match conn.stream.write(&conn.pending[conn.sent..]) {
            Ok(n) => conn.sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    conn.pending.clear();
    conn.sent = 0;
    if conn.close_after_flush {
        let _ = conn.stream.shutdown(Shutdown::Write);
        return Err(io::ErrorKind::ConnectionAborted.into());
    }
    Ok(true)
}

/// Writes `out` now; what the socket does not take goes to `pending`. `Ok(true)` if all
/// of it was written.
fn write_now(conn: &mut Conn, out: &[u8]) -> io::Result<bool> {
    let mut written = 0;
    while written < out.len() {
        match conn.stream.write(&out[written..]) {
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                conn.pending.extend_from_slice(&out[written..]);
                conn.sent = 0;
                return Ok(false);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Reads while the socket has data and nothing is pending, answering every read.
fn drive(conn: &mut Conn, buf: &mut [u8]) -> io::Result<Outcome> {
    while conn.readable && conn.pending.is_empty() {
        let n = match conn.stream.read(buf) {
            Ok(0) => return Ok(Outcome::Close),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                conn.readable = false;
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n < buf.len() {
            // Drained: the next data brings a new edge.
            conn.readable = false;
        }
        match conn.http.take() {
            None => {
                write_now(conn, &buf[..n])?;
            }
            Some(mut http) => {
                let next = http.feed(&buf[..n]);
                if next == Next::Abort {
                    return Ok(Outcome::Close);
                }
                let flushed = http.out.is_empty() || write_now(conn, &http.out)?;
                http.out.clear();
                conn.http = Some(http);
                if next == Next::Close {
                    if flushed {
                        let _ = conn.stream.shutdown(Shutdown::Write);
                        return Ok(Outcome::Close);
                    }
                    conn.close_after_flush = true;
                    return Ok(Outcome::Keep);
                }
            }
        }
    }
    Ok(Outcome::Keep)
}
