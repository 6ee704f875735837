//! An echo server and eight concurrent clients in one process: accept loop, a task per
//! connection, `read`/`write_all`, `shutdown`, `read_to_end`.

use std::io;

use netloop_dropin::rt;
use rt::io::{AsyncReadExt, AsyncWriteExt};
use rt::net::{TcpListener, TcpStream};

const CLIENTS: usize = 8;

#[rt::main]
async fn main() -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;

    let server = rt::spawn(async move {
        loop {
            let (mut socket, _peer) = listener.accept().await?;
            rt::spawn(async move {
                let mut buf = vec![0; 1024];
                loop {
                    let n = match socket.read(&mut buf).await {
                        Ok(0) => return,
                        Ok(n) => n,
                        Err(e) => {
                            eprintln!("failed to read from socket; err = {e:?}");
                            return;
                        }
                    };
                    if let Err(e) = socket.write_all(&buf[..n]).await {
                        eprintln!("failed to write to socket; err = {e:?}");
                        return;
                    }
                }
            });
        }
        #[allow(unreachable_code)]
        Ok::<(), io::Error>(())
    });

    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        clients.push(rt::spawn(async move {
            let mut stream = TcpStream::connect(addr).await?;
            let msg = format!("hello from client {i}\n").repeat(200);
            stream.write_all(msg.as_bytes()).await?;
            stream.shutdown().await?;
            let mut echoed = Vec::new();
            stream.read_to_end(&mut echoed).await?;
            assert_eq!(echoed, msg.as_bytes(), "client {i} got its bytes back");
            Ok::<usize, io::Error>(echoed.len())
        }));
    }
    let mut total = 0;
    for client in clients {
        total += client.await??;
    }
    server.abort();
    assert!(server.await.unwrap_err().is_cancelled());
    println!(
        "echo_server: ok on {}: {CLIENTS} clients echoed {total} bytes",
        netloop_dropin::RUNTIME
    );
    Ok(())
}
