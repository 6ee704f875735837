//! A minimal keep-alive HTTP/1.1 server: `cargo run --release --example http_hello [-- ADDR]`,
//! then `curl http://127.0.0.1:8080/` or load it with `wrk`.
//!
//! It parses just enough HTTP/1.1 to serve "Hello, world!" to every request on a
//! connection, pipelined requests included, and answers with one `write` per batch of
//! requests read.

use netloop::io::{AsyncReadExt, AsyncWriteExt};
use netloop::net::{TcpListener, TcpStream, serve};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, world!";

/// Finds the end of one request head, if the buffer holds a whole one.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// True if the request head asks to close the connection.
fn wants_close(head: &[u8]) -> bool {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    head.contains("\r\nconnection: close") || head.starts_with("get / http/1.0") && !head.contains("keep-alive")
}

async fn serve_connection(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::with_capacity(8 * 1024);
    let mut out = Vec::with_capacity(8 * 1024);
    let mut chunk = [0u8; 8 * 1024];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut close = false;
        let mut consumed = 0;
        while let Some(end) = head_end(&buf[consumed..]) {
            close |= wants_close(&buf[consumed..consumed + end]);
            out.extend_from_slice(RESPONSE);
            consumed += end;
            if close {
                break;
            }
        }
        buf.drain(..consumed);
        if buf.len() > 64 * 1024 {
            return; // a head this long is not a request we serve
        }
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let rt = netloop::runtime::Runtime::new()?;
    rt.block_on(async {
        let listener = TcpListener::bind(&addr).await?;
        println!("netloop http_hello listening on http://{}/", listener.local_addr()?);
        serve(listener, |stream, _peer| serve_connection(stream)).await.ok();
        Ok(())
    })
}
