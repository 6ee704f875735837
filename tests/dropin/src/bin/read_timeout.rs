//! A read under `timeout`: the first read gives up when the peer stays silent, the
//! second gets the late reply. `Elapsed` converts into `io::Error` for `?`.

use std::io;
use std::time::Duration;

use netloop_dropin::rt;
use rt::io::{AsyncReadExt, AsyncWriteExt};
use rt::net::{TcpListener, TcpStream};
use rt::time::{Instant, timeout};

#[rt::main]
async fn main() -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    rt::spawn(async move {
        let (mut socket, _) = listener.accept().await?;
        // A slow server: it answers after 300 ms.
        rt::time::sleep(Duration::from_millis(300)).await;
        socket.write_all(b"late reply").await?;
        Ok::<(), io::Error>(())
    });

    let mut stream = TcpStream::connect(addr).await?;
    let mut buf = [0u8; 64];

    let start = Instant::now();
    let first = timeout(Duration::from_millis(50), stream.read(&mut buf)).await;
    let waited = start.elapsed();
    match first {
        Err(elapsed) => println!("first read: {elapsed} after {waited:?}"),
        Ok(r) => panic!("the first read should time out, got {r:?}"),
    }
    assert!(waited >= Duration::from_millis(50));
    assert!(
        waited < Duration::from_millis(300),
        "gave up before the reply: {waited:?}"
    );

    // `??`: the outer error is the deadline (as io::Error), the inner one the read's.
    let n = timeout(Duration::from_secs(2), stream.read(&mut buf)).await??;
    assert_eq!(&buf[..n], b"late reply");

    // A deadline on a whole operation, with `timeout_at`.
    let deadline = Instant::now() + Duration::from_millis(20);
    let eof = rt::time::timeout_at(deadline, stream.read(&mut buf)).await;
    assert!(matches!(eof, Ok(Ok(0)) | Err(_)), "then EOF or silence: {eof:?}");

    println!(
        "read_timeout: ok on {}: got {:?}",
        netloop_dropin::RUNTIME,
        "late reply"
    );
    Ok(())
}
