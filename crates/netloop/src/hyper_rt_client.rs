//! A connector for hyper-util's pooled client (feature `hyper-client`).

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;

use crate::net::TcpStream;

/// Connects hyper-util's client (`hyper_util::client::legacy::Client`) over netloop's
/// [`TcpStream`], so that a client with a connection pool runs on netloop without a
/// tokio runtime: each connection is a netloop socket, registered with the loop of the
/// task that first uses it.
///
/// It speaks plain `http://` (put a TLS connector in front of it for `https://`), and
/// resolves host names as [`TcpStream::connect`] does. Give the client
/// [`NetloopExecutor`](super::NetloopExecutor) for its connection tasks and
/// [`NetloopTimer`](super::NetloopTimer) for its pool's idle timeout:
///
/// ```
/// use hyper_util::client::legacy::Client;
/// use netloop::hyper_rt::{NetloopConnector, NetloopExecutor, NetloopTimer};
///
/// # #[netloop::main(flavor = "current_thread")]
/// # async fn main() {
/// let client: Client<NetloopConnector, String> = Client::builder(NetloopExecutor)
///     .timer(NetloopTimer)
///     .pool_timer(NetloopTimer)
///     .build(NetloopConnector::new());
/// // https is refused with an error that says why.
/// let err = client.get("https://127.0.0.1/".parse().unwrap()).await.unwrap_err();
/// assert!(err.is_connect());
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct NetloopConnector {
    nodelay: bool,
}

impl NetloopConnector {
    /// A connector whose connections have `TCP_NODELAY` set, as request/response
    /// traffic wants.
    pub fn new() -> NetloopConnector {
        NetloopConnector { nodelay: true }
    }

    /// Sets `TCP_NODELAY` on new connections, or not.
    pub fn set_nodelay(&mut self, nodelay: bool) {
        self.nodelay = nodelay;
    }
}

impl Default for NetloopConnector {
    fn default() -> Self {
        NetloopConnector::new()
    }
}

impl tower_service::Service<Uri> for NetloopConnector {
    type Response = NetloopStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<NetloopStream>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let nodelay = self.nodelay;
        Box::pin(async move {
            let (host, port) = host_and_port(&uri)?;
            let stream = TcpStream::connect((host.as_str(), port)).await?;
            stream.set_nodelay(nodelay)?;
            Ok(NetloopStream(TokioIo::new(stream)))
        })
    }
}

/// Where an `http://` URI points: its host (an IPv6 literal without its brackets) and
/// port (80 if it names none).
fn host_and_port(uri: &Uri) -> io::Result<(String, u16)> {
    match uri.scheme_str() {
        None | Some("http") => {}
        Some(scheme) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("NetloopConnector connects http:// only, not {scheme}:// (put a TLS connector in front of it)"),
            ));
        }
    }
    let host = uri
        .host()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("no host in the URI {uri}")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_string(), uri.port_u16().unwrap_or(80)))
}

/// A netloop [`TcpStream`] as hyper-util's client takes it: hyper's I/O traits, and
/// hyper-util's [`Connection`].
pub struct NetloopStream(TokioIo<TcpStream>);

impl NetloopStream {
    /// The socket.
    pub fn get_ref(&self) -> &TcpStream {
        self.0.inner()
    }
}

impl fmt::Debug for NetloopStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NetloopStream").field(self.get_ref()).finish()
    }
}

impl Read for NetloopStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl Write for NetloopStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
}

impl Connection for NetloopStream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_uris_give_their_host_and_port_and_others_are_refused() {
        let at = |s: &str| host_and_port(&s.parse().expect("a URI"));
        assert_eq!(at("http://example.test/x").unwrap(), ("example.test".to_string(), 80));
        assert_eq!(at("http://127.0.0.1:8080/").unwrap(), ("127.0.0.1".to_string(), 8080));
        assert_eq!(at("http://[::1]:9/").unwrap(), ("::1".to_string(), 9));
        let err = at("https://example.test/").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("http:// only"), "{err}");
        assert!(at("/just/a/path").is_err(), "no host");
    }
}
