//! `spawn_blocking`: CPU-bound work and blocking I/O off the runtime's threads, which
//! keep serving timers and sockets meanwhile.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use netloop_dropin::rt;
use rt::io::{AsyncReadExt, AsyncWriteExt};
use rt::net::TcpListener;
use rt::task;

fn fib(n: u32) -> u64 {
    if n < 2 { n as u64 } else { fib(n - 1) + fib(n - 2) }
}

#[rt::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> io::Result<()> {
    // CPU-bound work, several at once.
    let handles: Vec<_> = (20..24).map(|n| task::spawn_blocking(move || (n, fib(n)))).collect();
    let mut fibs = Vec::new();
    for h in handles {
        fibs.push(h.await?);
    }
    assert_eq!(fibs, [(20, 6765), (21, 10946), (22, 17711), (23, 28657)]);

    // A blocking wait that only an async task can end: the runtime must keep running
    // tasks and timers while the blocking thread is parked.
    let (tx, rx) = std_mpsc::channel::<u64>();
    let waiter = task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(2)).map(|v| v * 2));
    rt::spawn(async move {
        rt::time::sleep(Duration::from_millis(20)).await;
        tx.send(21).unwrap();
    });
    let doubled = waiter.await?.expect("the async side sent in time");
    assert_eq!(doubled, 42);

    // Blocking std::net I/O against an async server.
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = rt::spawn(async move {
        let (mut socket, _) = listener.accept().await?;
        let mut request = String::new();
        socket.read_to_string(&mut request).await?;
        socket.write_all(format!("pong to {request}").as_bytes()).await?;
        Ok::<(), io::Error>(())
    });
    let reply = task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.write_all(b"ping")?;
        stream.shutdown(Shutdown::Write)?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        Ok::<String, io::Error>(reply)
    })
    .await??;
    server.await??;
    assert_eq!(reply, "pong to ping");

    println!(
        "spawn_blocking: ok on {}: {fibs:?}, {doubled}, {reply:?}",
        netloop_dropin::RUNTIME
    );
    Ok(())
}
