//! The halves of a `TcpStream` (tokio's `tcp::{ReadHalf, WriteHalf, OwnedReadHalf,
//! OwnedWriteHalf, ReuniteError}`): `split` borrows the stream for one task,
//! `into_split` shares it between two.

use super::TcpStream;

byte_stream_halves! {
    TcpStream, std::net::SocketAddr;

    /// An echo: the two halves of one stream, given to `copy`.
    ///
    /// ```
    /// use netloop_net::io::{self, AsyncReadExt, AsyncWriteExt};
    /// use netloop_net::{TcpListener, TcpStream};
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let mut peer = TcpStream::connect(listener.local_addr()?).await?;
    /// let (mut stream, _) = listener.accept().await?;
    ///
    /// peer.write_all(b"hello").await?;
    /// peer.shutdown().await?;
    ///
    /// let (mut rd, mut wr) = stream.split();
    /// let echoed = io::copy(&mut rd, &mut wr).await?; // until the peer's EOF
    /// assert_eq!(echoed, 5);
    ///
    /// let mut buf = [0u8; 5];
    /// peer.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hello");
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ReadHalf;

    /// A request, a half-close to say it is complete, then the response:
    ///
    /// ```
    /// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
    /// use netloop_net::{TcpListener, TcpStream};
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let mut stream = TcpStream::connect(listener.local_addr()?).await?;
    /// let (mut peer, _) = listener.accept().await?;
    ///
    /// let (mut rd, mut wr) = stream.split();
    /// wr.write_all(b"request").await?;
    /// wr.shutdown().await?;
    ///
    /// // The peer reads up to the EOF, then answers.
    /// let mut request = String::new();
    /// peer.read_to_string(&mut request).await?;
    /// peer.write_all(b"response").await?;
    /// drop(peer);
    ///
    /// let mut response = String::new();
    /// rd.read_to_string(&mut response).await?;
    /// assert_eq!((request.as_str(), response.as_str()), ("request", "response"));
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    WriteHalf;

    /// A reader in a task of its own:
    ///
    /// ```
    /// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
    /// use netloop_net::{TcpListener, TcpStream};
    /// use netloop_scheduler::task;
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// let (mut peer, _) = listener.accept().await?;
    ///
    /// let (mut rd, _wr) = stream.into_split();
    /// let reader = task::spawn(async move {
    ///     let mut got = String::new();
    ///     rd.read_to_string(&mut got).await.map(|_| got)
    /// });
    ///
    /// peer.write_all(b"pong").await?;
    /// drop(peer);
    /// assert_eq!(reader.await??, "pong");
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    OwnedReadHalf;

    /// A writer in a task of its own; its end closes the stream's write direction:
    ///
    /// ```
    /// use netloop_net::io::{AsyncReadExt, AsyncWriteExt};
    /// use netloop_net::{TcpListener, TcpStream};
    /// use netloop_scheduler::task;
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// let (mut peer, _) = listener.accept().await?;
    ///
    /// let (_rd, mut wr) = stream.into_split();
    /// task::spawn(async move { wr.write_all(b"ping").await });
    ///
    /// let mut got = String::new();
    /// peer.read_to_string(&mut got).await?; // ends when `wr` is dropped
    /// assert_eq!(got, "ping");
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    OwnedWriteHalf;

    /// ```
    /// use netloop_net::tcp::ReuniteError;
    /// use netloop_net::{TcpListener, TcpStream};
    ///
    /// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let a = TcpStream::connect(listener.local_addr()?).await?;
    /// let (b, _) = listener.accept().await?;
    ///
    /// let (a_rd, a_wr) = a.into_split();
    /// let (b_rd, b_wr) = b.into_split();
    /// let ReuniteError(a_rd, b_wr) = a_rd.reunite(b_wr).unwrap_err();
    ///
    /// // Matching halves make the stream again.
    /// let a = a_rd.reunite(a_wr).unwrap();
    /// let b = b_rd.reunite(b_wr).unwrap();
    /// assert_eq!(a.peer_addr()?, b.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ReuniteError;
}

impl ReadHalf<'_> {
    tcp_peek_methods!(0);
}

impl OwnedReadHalf {
    tcp_peek_methods!(inner);
}
