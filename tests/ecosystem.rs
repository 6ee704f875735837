//! Crates written against tokio's I/O traits only, running on netloop's sockets with no
//! feature and no tokio runtime: tokio-util's codecs and tokio-tungstenite.

use std::net::SocketAddr;

use futures::{SinkExt, StreamExt};
use netloop::net::{TcpListener, TcpStream};
use netloop::task::JoinHandle;
use netloop_tests::{multi, test_body};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::codec::{Framed, LinesCodec};

/// A server task that accepts one connection on a fresh loopback port and hands it to
/// `serve`; returns the port's address and the task.
async fn serve_one<F, Fut>(serve: F) -> (SocketAddr, JoinHandle<()>)
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local address");
    let task = netloop::spawn(async move {
        let (socket, _) = listener.accept().await.expect("accept");
        serve(socket).await;
    });
    (addr, task)
}

#[test]
fn a_lines_codec_frames_a_netloop_stream() {
    test_body(|| {
        multi().block_on(async {
            let (addr, server) = serve_one(|socket| async move {
                let mut lines = Framed::new(socket, LinesCodec::new());
                while let Some(line) = lines.next().await {
                    let line = line.expect("a line");
                    lines.send(line.to_uppercase()).await.expect("send");
                }
            })
            .await;
            let mut client = Framed::new(TcpStream::connect(addr).await.expect("connect"), LinesCodec::new());
            for word in ["netloop", "frames", "lines"] {
                client.send(word).await.expect("send");
                let back = client.next().await.expect("an answer").expect("a line");
                assert_eq!(back, word.to_uppercase());
            }
            drop(client);
            server.await.expect("the server ended cleanly");
        });
    });
}

#[test]
fn tokio_tungstenite_speaks_websocket_over_netloop_streams() {
    test_body(|| {
        multi().block_on(async {
            let (addr, server) = serve_one(|socket| async move {
                let mut ws = tokio_tungstenite::accept_async(socket).await.expect("handshake");
                while let Some(msg) = ws.next().await {
                    match msg.expect("a message") {
                        Message::Text(text) => ws.send(Message::text(format!("echo: {text}"))).await.expect("send"),
                        Message::Close(_) => break,
                        _ => {}
                    }
                }
            })
            .await;
            let stream = TcpStream::connect(addr).await.expect("connect");
            let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), stream)
                .await
                .expect("client handshake");
            ws.send(Message::text("hello")).await.expect("send");
            let back = ws.next().await.expect("an answer").expect("a message");
            assert_eq!(back, Message::text("echo: hello"));
            ws.close(None).await.expect("close");
            server.await.expect("the server ended cleanly");
        });
    });
}
