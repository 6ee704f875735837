//! An echo server: `cargo run --example echo [-- ADDR]`, then `nc 127.0.0.1 7878`.
//!
//! The acceptor takes connections on one event loop and hands each to the next loop,
//! where the connection lives for good (Netty's boss and worker groups).

use std::net::SocketAddr;

use netloop::io::{AsyncReadExt, AsyncWriteExt};
use netloop::net::{TcpListener, TcpStream, serve};

async fn echo(mut stream: TcpStream, peer: SocketAddr) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if let Err(e) = stream.write_all(&buf[..n]).await {
                    eprintln!("{peer}: write failed: {e}");
                    break;
                }
            }
            Err(e) => {
                eprintln!("{peer}: read failed: {e}");
                break;
            }
        }
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:7878".to_string());
    let rt = netloop::runtime::Runtime::new()?;
    rt.block_on(async {
        let listener = TcpListener::bind(&addr).await?;
        let local = listener.local_addr()?;
        let loops = netloop::runtime::Handle::current().event_loops().len();
        println!("netloop echo server listening on {local} ({loops} event loops)");
        println!(
            "try it:  nc {} {}   (type a line, it comes back; Ctrl-C to stop)",
            local.ip(),
            local.port()
        );
        serve(listener, echo).await.ok();
        Ok(())
    })
}
