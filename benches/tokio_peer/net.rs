//! Tokio peers of the network benchmarks, running the same handlers as netloop
//! (`netloop_benches::net_handlers!`: the same source, expanded here over tokio's
//! I/O traits).
//!
//! - **tokio-mt**: `Builder::new_multi_thread().worker_threads(threads).enable_io()`.
//!   The accept loop is a spawned task (as netloop's acceptor is), so the thread in
//!   `block_on` only waits; each connection is a `tokio::spawn`ed task.
//! - **tokio-ct-reuseport**: one `current_thread` runtime per thread, each with its own
//!   `SO_REUSEPORT` listener on the same address (the kernel spreads connections over
//!   them), accepting in its `block_on` and spawning connections onto itself. With one
//!   thread it is a single current-thread runtime on the main thread.

use std::io;
use std::net::SocketAddr;
use std::thread;

use netloop_benches::net::Mode;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, TcpStream};

netloop_benches::net_handlers!(tokio::io);

/// Accepts forever, one spawned task per connection.
async fn accept_loop(listener: TcpListener, mode: Mode) {
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(handle(stream, mode));
    }
}

async fn handle(stream: TcpStream, mode: Mode) {
    match mode {
        Mode::Echo => echo(stream).await,
        Mode::Http => {
            let _ = stream.set_nodelay(true);
            http(stream).await
        }
    }
}

/// tokio's multi-thread runtime with `threads` workers.
pub fn multi_thread(
    addr: SocketAddr,
    mode: Mode,
    threads: usize,
    on_listen: impl FnOnce(SocketAddr),
) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_io()
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(addr).await?;
        on_listen(listener.local_addr()?);
        tokio::spawn(accept_loop(listener, mode))
            .await
            .map_err(io::Error::other)
    })
}

/// A non-blocking listener with `SO_REUSEADDR` and `SO_REUSEPORT`.
fn reuseport_listener(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

fn current_thread(listener: std::net::TcpListener, mode: Mode) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    rt.block_on(async move {
        accept_loop(TcpListener::from_std(listener)?, mode).await;
        Ok(())
    })
}

/// `threads` current-thread runtimes, each on its own thread with its own
/// `SO_REUSEPORT` listener; the first one runs on this thread.
pub fn current_thread_reuseport(
    addr: SocketAddr,
    mode: Mode,
    threads: usize,
    on_listen: impl FnOnce(SocketAddr),
) -> io::Result<()> {
    // The first bind fixes the port (when `addr` asks for any), the others share it.
    let first = reuseport_listener(addr)?;
    let local = first.local_addr()?;
    let mut listeners = vec![first];
    for _ in 1..threads {
        listeners.push(reuseport_listener(local)?);
    }
    on_listen(local);
    let mut listeners = listeners.into_iter();
    let mine = listeners.next().expect("one listener at least");
    let others: Vec<_> = listeners
        .enumerate()
        .map(|(i, l)| {
            thread::Builder::new()
                .name(format!("tokio-ct-{}", i + 1))
                .spawn(move || current_thread(l, mode))
        })
        .collect::<io::Result<_>>()?;
    current_thread(mine, mode)?;
    for t in others {
        t.join().map_err(|_| io::Error::other("a server thread panicked"))??;
    }
    Ok(())
}
