//! A small netloop service for watching with tokio-console (docs/observability.md's
//! screenshot): an echo server and its clients on loopback, a ticker and a shared
//! cache behind a `Mutex`, every task named, on a two-loop runtime, with
//! console-subscriber's server on its default address (127.0.0.1:6669).
//!
//! `console_demo [seconds]` (default 60), then `tokio-console` in another terminal.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn main() {
    console_subscriber::init();
    let seconds = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(60);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("its address");
        tokio::task::Builder::new()
            .name("echo-acceptor")
            .spawn(async move {
                for n in 0.. {
                    let (mut socket, _) = listener.accept().await.expect("a connection");
                    tokio::task::Builder::new()
                        .name(&format!("echo-conn-{n}"))
                        .spawn(async move {
                            let mut buf = [0u8; 64];
                            while let Ok(read @ 1..) = socket.read(&mut buf).await {
                                if socket.write_all(&buf[..read]).await.is_err() {
                                    break;
                                }
                            }
                        })
                        .expect("spawned");
                }
            })
            .expect("spawned");
        for c in 0..3 {
            tokio::task::Builder::new()
                .name(&format!("echo-client-{c}"))
                .spawn(async move {
                    let mut stream = TcpStream::connect(addr).await.expect("connected");
                    let mut buf = [0u8; 5];
                    loop {
                        stream.write_all(b"hello").await.expect("written");
                        stream.read_exact(&mut buf).await.expect("echoed");
                        tokio::time::sleep(Duration::from_millis(20 + c * 15)).await;
                    }
                })
                .expect("spawned");
        }
        let cache = Arc::new(tokio::sync::Mutex::new(Vec::<u64>::new()));
        for w in 0..2 {
            let cache = cache.clone();
            tokio::task::Builder::new()
                .name(&format!("cache-writer-{w}"))
                .spawn(async move {
                    let mut tick = tokio::time::interval(Duration::from_millis(50));
                    loop {
                        tick.tick().await;
                        let mut entries = cache.lock().await;
                        entries.push(w);
                        entries.truncate(100);
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
                .expect("spawned");
        }
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    });
}
