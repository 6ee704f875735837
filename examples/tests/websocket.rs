//! The `websocket_echo` example's server on netloop, driven by tokio-tungstenite's
//! client over netloop's `TcpStream`s: text, binary (one message larger than a socket
//! buffer), a ping, several clients at once, and the closing handshake.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use netloop::net::{TcpListener, TcpStream};
use netloop_examples::websocket::{echo, serve_websocket_echo};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{WebSocketStream, client_async};

fn runtime() -> netloop::runtime::Runtime {
    netloop_examples::two_loop_runtime()
}

async fn connect(addr: std::net::SocketAddr) -> WebSocketStream<TcpStream> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (ws, response) = client_async(format!("ws://{addr}/"), stream)
        .await
        .expect("the websocket handshake");
    assert_eq!(response.status(), 101);
    ws
}

async fn next(ws: &mut WebSocketStream<TcpStream>) -> Message {
    ws.next().await.expect("a message").expect("a valid message")
}

/// Sends a close frame and reads until the stream ends: the server's reply must be a
/// close frame with the same code, and nothing may follow it.
async fn close(ws: &mut WebSocketStream<TcpStream>) {
    ws.close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "done".into(),
    }))
    .await
    .expect("send the close frame");
    match next(ws).await {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Normal),
        other => panic!("expected the server's close frame, got {other:?}"),
    }
    assert!(ws.next().await.is_none(), "the stream ends after the closing handshake");
}

/// One client's conversation with the echo server.
async fn converse(addr: std::net::SocketAddr, id: usize) {
    let mut ws = connect(addr).await;

    let text = format!("hello from client {id}");
    ws.send(Message::text(text.clone())).await.expect("send text");
    assert_eq!(next(&mut ws).await, Message::text(text));

    let binary: Vec<u8> = (0..=255u8).cycle().take(4096 + id).collect();
    ws.send(Message::binary(binary.clone())).await.expect("send binary");
    assert_eq!(next(&mut ws).await, Message::binary(binary));

    // Larger than the socket buffers: written and read in many pieces.
    let large: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    ws.send(Message::binary(large.clone()))
        .await
        .expect("send a large binary");
    assert_eq!(next(&mut ws).await, Message::binary(large));

    // tungstenite answers a ping itself.
    ws.send(Message::Ping(b"are you there?".to_vec().into()))
        .await
        .expect("send a ping");
    assert_eq!(next(&mut ws).await, Message::Pong(b"are you there?".to_vec().into()));

    close(&mut ws).await;
}

#[test]
fn the_echo_server_echoes_text_and_binary_and_closes_cleanly() {
    runtime().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        let server = serve_websocket_echo(listener);
        netloop::time::timeout(Duration::from_secs(30), async {
            // Three clients at once; the acceptor spreads them over the two loops.
            futures::future::join_all((0..3).map(|id| converse(addr, id))).await;
        })
        .await
        .expect("the conversations completed within 30 s");
        server.abort();
    });
}

#[test]
fn the_echo_handler_returns_ok_after_the_closing_handshake() {
    runtime().block_on(async {
        netloop::time::timeout(Duration::from_secs(30), async {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("local address");
            let handler = netloop::spawn(async move {
                let (stream, _) = listener.accept().await.expect("accept");
                echo(stream).await
            });
            let mut ws = connect(addr).await;
            ws.send(Message::text("one message")).await.expect("send");
            assert_eq!(next(&mut ws).await, Message::text("one message"));
            close(&mut ws).await;
            handler
                .await
                .expect("the handler did not panic")
                .expect("the handler saw a clean close, not an error");
        })
        .await
        .expect("the conversation completed within 30 s");
    });
}
