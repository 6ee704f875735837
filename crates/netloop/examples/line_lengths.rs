//! The program of `docs/getting-started.md`: a tokio service moved to netloop by
//! changing the crate name. It answers each line with its length, gives each
//! connection a 30 s idle timeout pushed back by every line, counts connections in
//! shared state (`netloop::sync`), and stops on Ctrl-C.
//!
//! ```sh
//! cargo run -p netloop --example line_lengths
//! printf 'hello\nnetloop\n' | nc -q1 127.0.0.1 7879     # prints 5 and 7
//! ```

use std::sync::Arc;

use netloop::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use netloop::net::TcpListener;
use netloop::sync::Mutex;
use netloop::time::{Duration, timeout};

#[netloop::main]
async fn main() -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:7879").await?;
    println!("line_lengths: listening on {}", listener.local_addr()?);
    let served = Arc::new(Mutex::new(0u64));
    loop {
        netloop::select! {
            accepted = listener.accept() => {
                let (socket, _) = accepted?;
                let served = served.clone();
                netloop::spawn(async move {
                    *served.lock().await += 1;
                    let (read, mut write) = socket.into_split();
                    let mut lines = BufReader::new(read).lines();
                    // A 30 s idle timeout, pushed back by every line.
                    while let Ok(Ok(Some(line))) = timeout(Duration::from_secs(30), lines.next_line()).await {
                        if write.write_all(format!("{}\n", line.len()).as_bytes()).await.is_err() {
                            break;
                        }
                    }
                });
            }
            _ = netloop::signal::ctrl_c() => break,
        }
    }
    println!("served {} connections", served.lock().await);
    Ok(())
}
