//! The acceptor: Netty's `ServerBootstrap`, with a boss loop and worker loops.
//!
//! One task accepts on the listener's loop. Each new connection goes to the next loop
//! of the runtime, round-robin: its socket is registered with that loop's `Poll`, and the handler's
//! future is built and run there for the connection's whole life, so it may be
//! `!Send`.

use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::time::Duration;

use netloop_reactor::EventLoopHandle;
use netloop_reactor::io::Direction;
use netloop_scheduler::runtime::Handle;
use netloop_scheduler::task::{JoinHandle, spawn_on, spawn_pinned_on, yield_now};

use crate::tcp::{TcpListener, TcpStream};

/// Accepts per readiness event before the acceptor yields (Netty reads at most 16
/// messages per event).
pub const ACCEPTS_PER_EVENT: usize = 16;
/// How long accepting pauses when the process or system is out of descriptors or
/// memory (EMFILE, ENFILE, ENOBUFS, ENOMEM).
pub const EXHAUSTION_PAUSE: Duration = Duration::from_secs(1);

/// Serves every connection of `listener` with `handler`, spread over the runtime's
/// loops. Returns the acceptor task: abort it to stop accepting.
///
/// ```no_run
/// use netloop_net::{serve, TcpListener};
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
///
/// # let rt = netloop_scheduler::runtime::Runtime::new()?;
/// rt.block_on(async {
///     let listener = TcpListener::bind("127.0.0.1:7000").await?;
///     let acceptor = serve(listener, |mut stream, _peer| async move {
///         let mut buf = [0u8; 1024];
///         while let Ok(n @ 1..) = stream.read(&mut buf).await {
///             if stream.write_all(&buf[..n]).await.is_err() {
///                 break;
///             }
///         }
///     });
///     acceptor.await.ok();
///     Ok::<(), std::io::Error>(())
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn serve<F, Fut>(listener: TcpListener, handler: F) -> JoinHandle<()>
where
    F: Fn(TcpStream, SocketAddr) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    Serve::new(listener).serve(handler)
}

/// Configures an acceptor; see [`serve`].
///
/// A cap on the connections each loop serves at once keeps an overload from piling
/// up: past it, new connections are closed at once. Here the runtime has one loop and
/// the cap is 1, so a second client is turned away while the first is served.
///
/// ```
/// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
/// use netloop_net::{Serve, TcpListener, TcpStream};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let listener = TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// let acceptor = Serve::new(listener)
///     .max_connections_per_loop(1)
///     .serve(|mut stream, _peer| async move {
///         let _ = stream.write_all(b"welcome\n").await;
///         let _ = stream.read(&mut [0u8; 1]).await; // until the client leaves
///     });
///
/// let mut first = TcpStream::connect(addr).await?;
/// let mut welcome = [0u8; 8];
/// first.read_exact(&mut welcome).await?;
///
/// let mut second = TcpStream::connect(addr).await?;
/// let mut buf = [0u8; 8];
/// assert!(matches!(second.read(&mut buf).await, Ok(0) | Err(_)), "closed at once");
/// acceptor.abort();
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Serve {
    listener: TcpListener,
    max_connections_per_loop: Option<usize>,
}

impl Serve {
    /// An acceptor for `listener` with no connection cap.
    pub fn new(listener: TcpListener) -> Serve {
        Serve {
            listener,
            max_connections_per_loop: None,
        }
    }

    /// Caps the connections each loop serves at once. A connection arriving when every
    /// loop is at its cap is closed at once (the client sees a reset or EOF).
    pub fn max_connections_per_loop(mut self, max: usize) -> Serve {
        self.max_connections_per_loop = Some(max.max(1));
        self
    }

    /// Starts accepting on the listener's loop; returns the acceptor task.
    #[track_caller]
    pub fn serve<F, Fut>(self, handler: F) -> JoinHandle<()>
    where
        F: Fn(TcpStream, SocketAddr) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let runtime = Handle::current();
        let workers: Vec<Worker> = runtime
            .event_loops()
            .iter()
            .map(|l| Worker {
                event_loop: l.clone(),
                connections: Arc::new(AtomicUsize::new(0)),
            })
            .collect();
        let acceptor = Acceptor {
            workers,
            next: AtomicUsize::new(0),
            max_per_loop: self.max_connections_per_loop,
            handler: Arc::new(handler),
        };
        let boss = self
            .listener
            .io
            .registered_loop()
            .expect("a listener is registered when it is made");
        let listener = self.listener;
        spawn_on(&boss, async move { acceptor.run(listener).await })
    }
}

struct Worker {
    event_loop: EventLoopHandle,
    connections: Arc<AtomicUsize>,
}

struct Acceptor<F> {
    workers: Vec<Worker>,
    /// The acceptor's own round-robin over `workers`: sharing the group's `next()`
    /// would let off-loop spawns and timers skew where connections land.
    next: AtomicUsize,
    max_per_loop: Option<usize>,
    handler: Arc<F>,
}

/// Counts a connection until its future is dropped, on its loop.
struct Connection(Arc<AtomicUsize>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.fetch_sub(1, AcqRel);
    }
}

enum AcceptError {
    /// Out of descriptors or memory: pause, then retry.
    Exhausted(io::Error),
    /// Only this connection failed (aborted before accept, ...): go on.
    Skip(io::Error),
}

fn classify(e: io::Error) -> AcceptError {
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => AcceptError::Exhausted(e),
        _ => AcceptError::Skip(e),
    }
}

impl<F, Fut> Acceptor<F>
where
    F: Fn(TcpStream, SocketAddr) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    async fn run(self, listener: TcpListener) {
        loop {
            // Wait for readiness and take the first connection...
            let first = poll_fn(|cx| listener.poll_accept_raw(cx)).await;
            let mut outcome = self.handle(first);
            // ...then up to 15 more from the same readiness event.
            for _ in 1..ACCEPTS_PER_EVENT {
                if outcome.is_some() {
                    break;
                }
                match listener.io.evented().try_io(Direction::Read, |l| l.accept()) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    res => outcome = self.handle(res),
                }
            }
            match outcome {
                Some(AcceptError::Exhausted(e)) => {
                    // Edge-triggered epoll will not report the backlog again when
                    // descriptors free up, so retry after a pause; never close.
                    tracing::warn!(target: "netloop::net", error = %e,
                        "accept failed for lack of resources; pausing accepts for 1 s");
                    netloop_scheduler::time::sleep(EXHAUSTION_PAUSE).await;
                }
                Some(AcceptError::Skip(e)) => {
                    tracing::debug!(target: "netloop::net", error = %e, "accept failed for one connection; skipping it");
                    yield_now().await;
                }
                None => yield_now().await,
            }
        }
    }

    /// Dispatches one accepted connection; `Some` on an accept error.
    fn handle(&self, accepted: io::Result<(mio::net::TcpStream, SocketAddr)>) -> Option<AcceptError> {
        match accepted {
            Ok((socket, peer)) => {
                self.dispatch(socket, peer);
                None
            }
            Err(e) => Some(classify(e)),
        }
    }

    fn dispatch(&self, socket: mio::net::TcpStream, peer: SocketAddr) {
        let Some(worker) = self.choose() else {
            tracing::debug!(target: "netloop::net", %peer, "every loop is at max_connections_per_loop; closing");
            drop(socket);
            return;
        };
        let connection = Connection(worker.connections.clone());
        let handler = self.handler.clone();
        // Built on the worker loop: the socket is registered with that loop's Poll (or,
        // on an io_uring loop, goes on its ring) and the handler's (possibly !Send)
        // future lives there.
        let task = spawn_pinned_on(&worker.event_loop, move || {
            let stream = TcpStream::on_this_loop(socket);
            async move {
                let _connection = connection;
                match stream {
                    Ok(stream) => handler(stream, peer).await,
                    Err(e) => {
                        tracing::warn!(target: "netloop::net", %peer, error = %e, "could not register a connection")
                    }
                }
            }
        });
        drop(task);
    }

    /// The next worker round-robin (a mask for power-of-two counts, a modulo
    /// otherwise), skipping loops at their cap (at most one full round).
    fn choose(&self) -> Option<&Worker> {
        let n = self.workers.len();
        for _ in 0..n {
            let i = self.next.fetch_add(1, AcqRel);
            let worker = &self.workers[if n.is_power_of_two() { i & (n - 1) } else { i % n }];
            match self.max_per_loop {
                Some(max) if worker.connections.load(Acquire) >= max => continue,
                _ => {
                    worker.connections.fetch_add(1, AcqRel);
                    return Some(worker);
                }
            }
        }
        None
    }
}
