//! # netloop-net: TCP on pinned event loops
//!
//! [`TcpListener`] and [`TcpStream`] with tokio's API, implementing tokio's own
//! `AsyncRead` / `AsyncWrite` (and futures-io's), so hyper, tokio-util codecs and
//! friends run on netloop unchanged. [`serve`] is the acceptor: it accepts on one loop
//! and hands each connection to the next loop of the runtime, where the connection's
//! socket is registered and its future runs for life, as a Netty channel does.
//!
//! The rest of tokio's I/O surface is here too: [`UdpSocket`], Unix sockets
//! ([`unix`]), the [`io`] traits and utilities, [`signal`], [`fs`] and [`process`].
//! Everything needs a runtime of `netloop-scheduler` (or the `netloop` facade, which
//! re-exports this crate as `netloop::net`, `netloop::io`, ...).
//!
//! ## A server and a client
//!
//! The usual server accepts in a loop and spawns a task per connection. On netloop
//! each task stays on the loop it was spawned on, and the spawn after an accept goes
//! to the runtime's next loop, so the connections spread over every core. Binding port
//! 0 lets the OS pick a free port; [`local_addr`](TcpListener::local_addr) tells
//! which, here to a client on the same runtime.
//!
//! ```
//! use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
//! use netloop_net::{TcpListener, TcpStream};
//! use netloop_scheduler::{runtime::Runtime, task};
//!
//! let rt = Runtime::new()?;
//! rt.block_on(async {
//!     let listener = TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = listener.local_addr()?;
//!
//!     // The server: an echo, one task per connection.
//!     task::spawn(async move {
//!         while let Ok((mut stream, _peer)) = listener.accept().await {
//!             task::spawn(async move {
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
//!     Ok::<(), std::io::Error>(())
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! ## The acceptor: `serve`
//!
//! [`serve`] runs the accept loop for you, Netty's way: each connection is handed to
//! the next loop, registered there and served there for its whole life. So the
//! handler's future need not be `Send` (it may hold an `Rc` across an `.await`), and
//! [`Serve`] can cap the connections per loop. It returns the acceptor task: abort it to
//! stop accepting; connections being served go on.
//!
//! ```
//! use std::rc::Rc;
//! use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
//! use netloop_net::{TcpListener, TcpStream, serve};
//!
//! let rt = netloop_scheduler::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let listener = TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = listener.local_addr()?;
//!     let acceptor = serve(listener, |mut stream, _peer| async move {
//!         let greeting = Rc::new(*b"hello\n"); // !Send, held across the await
//!         let _ = stream.write_all(&greeting[..]).await;
//!     });
//!
//!     let mut client = TcpStream::connect(addr).await?;
//!     let mut got = String::new();
//!     client.read_to_string(&mut got).await?; // the handler's end closed the stream
//!     assert_eq!(got, "hello\n");
//!     acceptor.abort();
//!     Ok::<(), std::io::Error>(())
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! ## Splitting a stream
//!
//! To read and write at the same time, split the stream.
//! [`split`](TcpStream::split) borrows it as two halves for use within one task (here
//! both go to [`io::copy`], which makes an echo); [`into_split`](TcpStream::into_split)
//! gives owned halves that can move to different tasks.
//!
//! ```
//! use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
//! use netloop_net::{TcpListener, TcpStream};
//! use netloop_scheduler::task;
//!
//! # let rt = netloop_scheduler::runtime::Runtime::new()?;
//! # rt.block_on(async {
//! let listener = TcpListener::bind("127.0.0.1:0").await?;
//! let addr = listener.local_addr()?;
//! task::spawn(async move {
//!     let (mut stream, _) = listener.accept().await?;
//!     let (mut rd, mut wr) = stream.split();
//!     netloop_net::io::copy(&mut rd, &mut wr).await
//! });
//!
//! let (mut rd, mut wr) = TcpStream::connect(addr).await?.into_split();
//! let writer = task::spawn(async move {
//!     wr.write_all(b"hello").await?;
//!     wr.shutdown().await // the server's copy reads EOF, ends and closes
//! });
//! let mut echoed = String::new();
//! rd.read_to_string(&mut echoed).await?;
//! assert_eq!(echoed, "hello");
//! writer.await??;
//! # Ok::<(), std::io::Error>(())
//! # })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! ## A timeout on a read
//!
//! A read waits as long as the peer stays silent. Wrap it in
//! [`timeout`](netloop_scheduler::time::timeout) to bound the wait: on expiry the read
//! is dropped, which cancels it without losing data (none was read), and the stream can
//! be used again.
//!
//! ```
//! use std::time::Duration;
//! use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
//! use netloop_net::{TcpListener, TcpStream};
//! use netloop_scheduler::time::timeout;
//!
//! # let rt = netloop_scheduler::runtime::Runtime::new()?;
//! # rt.block_on(async {
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
//! # Ok::<(), std::io::Error>(())
//! # })?;
//! # Ok::<(), std::io::Error>(())
//! ```

#![deny(missing_docs)]

#[macro_use]
mod evented;
#[macro_use]
mod byte_stream;
#[macro_use]
mod datagram;
#[macro_use]
mod socket_setup;
mod addr;
pub mod fs;
pub mod io;
pub mod process;
mod registration;
mod serve;
pub mod signal;
pub mod tcp;
mod udp;
pub mod unix;

pub use addr::{ToSocketAddrs, lookup_host};
pub use serve::{ACCEPTS_PER_EVENT, EXHAUSTION_PAUSE, Serve, serve};
pub use tcp::{TcpListener, TcpSocket, TcpStream};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixListener, UnixSocket, UnixStream};
