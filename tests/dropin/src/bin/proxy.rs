//! A TCP proxy with `copy_bidirectional` in front of an echo server: the client talks
//! to the upstream through the proxy, half-closes, and the proxy reports the bytes
//! copied each way.

use std::io;

use netloop_dropin::rt;
use rt::io::{AsyncReadExt, AsyncWriteExt};
use rt::net::{TcpListener, TcpStream};

#[rt::main]
async fn main() -> io::Result<()> {
    // Upstream: an echo server built on `split` and `io::copy`.
    let upstream = TcpListener::bind("127.0.0.1:0").await?;
    let upstream_addr = upstream.local_addr()?;
    rt::spawn(async move {
        loop {
            let Ok((mut socket, _)) = upstream.accept().await else {
                return;
            };
            rt::spawn(async move {
                let (mut reader, mut writer) = socket.split();
                if let Err(e) = rt::io::copy(&mut reader, &mut writer).await {
                    eprintln!("upstream copy failed: {e}");
                }
            });
        }
    });

    // The proxy: one task per inbound connection, relaying to the upstream.
    let proxy = TcpListener::bind("127.0.0.1:0").await?;
    let proxy_addr = proxy.local_addr()?;
    let relay = rt::spawn(async move {
        let (mut inbound, _) = proxy.accept().await?;
        let mut outbound = TcpStream::connect(upstream_addr).await?;
        let (to_upstream, to_client) = rt::io::copy_bidirectional(&mut inbound, &mut outbound).await?;
        Ok::<(u64, u64), io::Error>((to_upstream, to_client))
    });

    // The client.
    let mut stream = TcpStream::connect(proxy_addr).await?;
    let request: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
    let (mut reader, mut writer) = stream.split();
    let send = async {
        writer.write_all(&request).await?;
        writer.shutdown().await
    };
    let mut response = Vec::new();
    let receive = reader.read_to_end(&mut response);
    let ((), received) = rt::try_join!(send, receive)?;
    assert_eq!(received, request.len());
    assert_eq!(response, request, "the echo came back through the proxy");

    let (to_upstream, to_client) = relay.await??;
    assert_eq!((to_upstream, to_client), (request.len() as u64, request.len() as u64));
    println!(
        "proxy: ok on {}: {to_upstream} bytes to the upstream, {to_client} back",
        netloop_dropin::RUNTIME
    );
    Ok(())
}
