//! The server of the `websocket_echo` example: tokio-tungstenite's `accept_async` over
//! netloop's `TcpStream`s, natively (tokio-tungstenite uses only tokio's I/O traits).

use std::net::SocketAddr;

use futures::{SinkExt, StreamExt};
use netloop::net::{TcpListener, TcpStream, serve};
use netloop::task::JoinHandle;
use tokio_tungstenite::tungstenite;

/// Echoes the websocket messages of every connection of `listener`, each connection on
/// the event loop the acceptor hands it to. Returns the acceptor task: abort it to stop
/// accepting.
pub fn serve_websocket_echo(listener: TcpListener) -> JoinHandle<()> {
    serve(listener, |stream, peer: SocketAddr| async move {
        if let Err(e) = echo(stream).await {
            eprintln!("{peer}: {e}");
        }
    })
}

/// Takes the websocket handshake on `stream`, then sends each text and binary message
/// back as it came. tungstenite answers pings with pongs and a close with a close by
/// itself: the reply to a close goes out on the read after it, which then ends the
/// stream, so the loop ends once the closing handshake is complete.
pub async fn echo(stream: TcpStream) -> Result<(), tungstenite::Error> {
    let mut ws = tokio_tungstenite::accept_async(stream).await?;
    while let Some(message) = ws.next().await {
        let message = message?;
        if message.is_text() || message.is_binary() {
            ws.send(message).await?;
        }
    }
    Ok(())
}
