//! An echo server: `cargo run --example echo [-- ADDR]`, then `nc 127.0.0.1 7878`.
//!
//! The acceptor takes connections on one event loop and hands each to the next loop,
//! where the connection lives for good (Netty's boss and worker groups). Ctrl-C stops
//! it gracefully: no new connections, and the open ones get up to `DRAIN` to finish.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use netloop::io::{AsyncReadExt, AsyncWriteExt};
use netloop::net::{TcpListener, TcpStream, serve};
use netloop::signal::unix::{SignalKind, signal};
use netloop::sync::Notify;

/// How long open connections may go on after Ctrl-C.
const DRAIN: Duration = Duration::from_secs(10);

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

/// The connections still open, and a wakeup when the last one closes.
#[derive(Default)]
struct Open {
    count: AtomicUsize,
    none_left: Notify,
}

/// Counts one connection for as long as it lives.
struct Counted(Arc<Open>);

impl Counted {
    fn new(open: &Arc<Open>) -> Counted {
        open.count.fetch_add(1, Ordering::SeqCst);
        Counted(open.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.none_left.notify_waiters();
        }
    }
}

impl Open {
    fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    async fn all_closed(&self) {
        loop {
            // Register before checking, so a close in between is not missed.
            let closed = self.none_left.notified();
            if self.count() == 0 {
                return;
            }
            closed.await;
        }
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:7878".to_string());
    let rt = netloop::runtime::Runtime::new()?;
    rt.block_on(async {
        let listener = TcpListener::bind(&addr).await?;
        // Listen for Ctrl-C (SIGINT) before announcing the address, so none is missed.
        let mut ctrl_c = signal(SignalKind::interrupt())?;
        let local = listener.local_addr()?;
        let loops = netloop::runtime::Handle::current().event_loops().len();
        println!("netloop echo server listening on {local} ({loops} event loops)");
        println!(
            "try it:  nc {} {}   (type a line, it comes back; Ctrl-C to stop)",
            local.ip(),
            local.port()
        );
        let open = Arc::new(Open::default());
        let acceptor = serve(listener, {
            let open = open.clone();
            move |stream, peer| {
                let counted = Counted::new(&open);
                async move {
                    let _counted = counted;
                    echo(stream, peer).await
                }
            }
        });
        ctrl_c.recv().await;
        // Stop accepting: once the acceptor task is gone, so is the listening socket.
        acceptor.abort();
        let _ = acceptor.await;
        println!(
            "\nCtrl-C: no longer accepting; draining {} open connection(s), for up to {DRAIN:?}",
            open.count()
        );
        match netloop::time::timeout(DRAIN, open.all_closed()).await {
            Ok(()) => println!("all connections closed; stopped"),
            Err(_) => println!(
                "{} connection(s) still open after {DRAIN:?}; closing them",
                open.count()
            ),
        }
        Ok(())
    })
}
