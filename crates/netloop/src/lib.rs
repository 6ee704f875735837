//! # netloop
//!
//! Netty's event-loop design as a Rust async runtime, with tokio's API.
//!
//! A runtime is a group of event loops, each pinned to one thread for life. Every loop
//! repeats *select → process I/O → run tasks*, with a lock-free inbox for other
//! threads, a local run queue for its own, a timing wheel, and wakeup suppression (a
//! producer writes the eventfd only when the loop is blocked, and only the first one
//! to notice). A task belongs to the loop that first polled it, for life; only a `Send`
//! task that no loop has polled yet may be handed to an idle loop. So wakes stay on one
//! thread, and `!Send` futures run anywhere on a loop.
//!
//! The module layout is tokio's: replace `tokio::` with `netloop::`.
//!
//! ```
//! use std::time::Duration;
//!
//! let rt = netloop::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let task = netloop::spawn(async {
//!         netloop::time::sleep(Duration::from_millis(1)).await;
//!         1 + 1
//!     });
//!     assert_eq!(task.await.unwrap(), 2);
//! });
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! ## A server and a client
//!
//! A server accepts in a loop and spawns a task per connection. Each task stays on
//! the loop it was spawned on, for life; the spawn that follows an accept goes to the
//! runtime's next loop, so the connections spread over every core. Binding port 0 lets
//! the OS pick a free port, which the client on the same runtime then connects to.
//!
//! ```
//! use netloop::io::{AsyncReadExt, AsyncWriteExt};
//! use netloop::net::{TcpListener, TcpStream};
//!
//! #[netloop::main]
//! async fn main() -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = listener.local_addr()?;
//!
//!     // The server: an echo, one task per connection.
//!     netloop::spawn(async move {
//!         while let Ok((mut stream, _peer)) = listener.accept().await {
//!             netloop::spawn(async move {
//!                 let mut buf = [0u8; 1024];
//!                 // A read of 0 bytes: the client closed its side.
//!                 while let Ok(n @ 1..) = stream.read(&mut buf).await {
//!                     if stream.write_all(&buf[..n]).await.is_err() {
//!                         break;
//!                     }
//!                 }
//!             });
//!         }
//!     });
//!
//!     // The client.
//!     let mut stream = TcpStream::connect(addr).await?;
//!     stream.write_all(b"hello").await?;
//!     let mut buf = [0u8; 5];
//!     stream.read_exact(&mut buf).await?;
//!     assert_eq!(&buf, b"hello");
//!     Ok(())
//! }
//! ```
//!
//! ## The acceptor: `serve`
//!
//! [`net::serve`] runs the accept loop the way Netty does: each connection is handed
//! to the next loop, registered there and served there for its whole life. So the
//! handler's future need not be `Send` (it may hold an `Rc` or a `RefCell` across an
//! `.await`), and [`net::Serve`] can cap the connections per loop. `serve` returns the
//! acceptor task: abort it to stop accepting; connections being served go on.
//!
//! ```
//! use std::rc::Rc;
//! use netloop::io::{AsyncReadExt, AsyncWriteExt};
//! use netloop::net::{TcpListener, TcpStream};
//!
//! #[netloop::main]
//! async fn main() -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = listener.local_addr()?;
//!     let acceptor = netloop::net::serve(listener, |mut stream, _peer| async move {
//!         let greeting = Rc::new(*b"hello\n"); // !Send, held across the await
//!         let _ = stream.write_all(&greeting[..]).await;
//!     });
//!
//!     let mut client = TcpStream::connect(addr).await?;
//!     let mut got = String::new();
//!     client.read_to_string(&mut got).await?; // the handler's end closed the stream
//!     assert_eq!(got, "hello\n");
//!     acceptor.abort();
//!     Ok(())
//! }
//! ```
//!
//! ## Splitting a stream
//!
//! To read and write at the same time, split the stream.
//! [`split`](net::TcpStream::split) borrows it as two halves for use within one task
//! (here both go to [`io::copy`], which makes an echo);
//! [`into_split`](net::TcpStream::into_split) gives owned halves that can move to
//! different tasks.
//!
//! ```
//! use netloop::io::{AsyncReadExt, AsyncWriteExt};
//! use netloop::net::{TcpListener, TcpStream};
//!
//! # #[netloop::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let listener = TcpListener::bind("127.0.0.1:0").await?;
//! let addr = listener.local_addr()?;
//! netloop::spawn(async move {
//!     let (mut stream, _) = listener.accept().await?;
//!     let (mut rd, mut wr) = stream.split();
//!     netloop::io::copy(&mut rd, &mut wr).await
//! });
//!
//! let (mut rd, mut wr) = TcpStream::connect(addr).await?.into_split();
//! let writer = netloop::spawn(async move {
//!     wr.write_all(b"hello").await?;
//!     wr.shutdown().await // the server's copy reads EOF, ends and closes
//! });
//! let mut echoed = String::new();
//! rd.read_to_string(&mut echoed).await?;
//! assert_eq!(echoed, "hello");
//! writer.await??;
//! # Ok(())
//! # }
//! ```
//!
//! ## A timeout on a read
//!
//! A read waits as long as the peer stays silent. Wrap it in [`time::timeout`] to
//! bound the wait: on expiry the read is dropped, which cancels it without losing data
//! (none was read), and the stream can be used again. The error converts to an
//! `io::Error` of kind `TimedOut`, so `?` passes it on.
//!
//! ```
//! use std::time::Duration;
//! use netloop::io::{AsyncReadExt, AsyncWriteExt};
//! use netloop::net::{TcpListener, TcpStream};
//! use netloop::time::timeout;
//!
//! # #[netloop::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let listener = TcpListener::bind("127.0.0.1:0").await?;
//! let mut stream = TcpStream::connect(listener.local_addr()?).await?;
//! let (mut peer, _) = listener.accept().await?;
//!
//! let mut buf = [0u8; 1024];
//! let res = timeout(Duration::from_millis(20), stream.read(&mut buf)).await;
//! assert!(res.is_err(), "the peer sent nothing within 20 ms");
//!
//! // The stream is as good as before: once the peer writes, a read gets it.
//! peer.write_all(b"late").await?;
//! let n = timeout(Duration::from_secs(5), stream.read(&mut buf)).await??;
//! assert_eq!(&buf[..n], b"late");
//! # Ok(())
//! # }
//! ```
//!
//! ## When to choose netloop over tokio
//!
//! When connections are independent and long-lived (proxies, gateways, protocol
//! servers): pinning each to one loop keeps its state on one core and its wakes free of
//! cross-thread traffic. tokio's work stealing wins when task sizes are very uneven and
//! cannot be spread by connection.

#![deny(missing_docs)]

pub use netloop_macros::{main, test};
pub use netloop_net::fs;
pub use netloop_net::io;
pub use netloop_net::process;
pub use netloop_net::signal;
pub use netloop_scheduler::task::spawn;
pub use netloop_scheduler::{runtime, task, task_local, time};

/// Synchronization primitives with tokio's `sync` API (channels, `Mutex`, `RwLock`,
/// `Semaphore`, `Notify`, `Barrier`, `OnceCell`, `SetOnce`), netloop's own: their waits
/// spend netloop's cooperative budget, and their `blocking_*` calls panic on a loop's
/// thread as tokio's do inside a runtime.
pub mod sync {
    pub use netloop_sync::*;
}

#[cfg(feature = "hyper")]
pub mod hyper_rt;

/// The `macro_rules!` macros, and `macros::support`: the items tokio's macro expansions
/// name, public and hidden under tokio's path.
#[doc(hidden)]
pub mod macros;

#[doc(hidden)]
pub mod __private;

/// TCP networking (tokio's `net`), plus netloop's acceptor [`net::serve`].
pub mod net {
    pub use netloop_net::{
        Serve, TcpListener, TcpSocket, TcpStream, ToSocketAddrs, UdpSocket, UnixDatagram, UnixListener, UnixSocket,
        UnixStream, lookup_host, serve, tcp, unix,
    };
}

/// Netty-level access to the event loops: the group, each loop's handle (`execute`,
/// `schedule*`, `in_event_loop`, metrics), and the single-loop reactor itself.
pub mod event_loop {
    pub use netloop_reactor::*;
    pub use netloop_scheduler::EventLoopGroup;
}

/// The README's Rust code, built by `cargo test` as this crate's doc tests, so that
/// what a newcomer copies from it compiles.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
