//! netloop's own I/O utilities (`repeat`, `sink`, `empty`, `duplex`, `simplex`, the
//! `copy` family): tokio's behaviour, and netloop's cooperative budget.

use std::cell::Cell;
use std::io::ErrorKind;
use std::rc::Rc;

use netloop::io::{self, AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use netloop::task::{self, LocalSet};
use netloop_tests::{current, test_body};

/// Runs `endless` (which never finishes by itself) beside a task that sets a flag, on
/// one loop: returns once the flag is seen, which only happens if `endless` yields.
fn yields_to_its_neighbours<F>(endless: impl FnOnce(Rc<Cell<bool>>) -> F + Send + 'static)
where
    F: std::future::Future<Output = ()> + 'static,
{
    test_body(|| {
        let local = LocalSet::new();
        current().block_on(local.run_until(async move {
            let flag = Rc::new(Cell::new(false));
            let set = flag.clone();
            task::spawn_local(async move { set.set(true) });
            endless(flag).await;
        }));
    });
}

#[test]
fn an_endless_repeat_read_yields() {
    yields_to_its_neighbours(|flag| async move {
        let mut r = io::repeat(1);
        let mut buf = [0u8; 16];
        while !flag.get() {
            r.read_exact(&mut buf).await.unwrap();
        }
    });
}

#[test]
fn an_endless_sink_write_yields() {
    yields_to_its_neighbours(|flag| async move {
        let mut w = io::sink();
        while !flag.get() {
            w.write_all(b"x").await.unwrap();
        }
    });
}

#[test]
fn an_endless_empty_read_and_write_yield() {
    yields_to_its_neighbours(|flag| async move {
        let mut e = io::empty();
        while !flag.get() {
            assert_eq!(e.read(&mut [0u8; 4]).await.unwrap(), 0);
            assert_eq!(e.write(b"ab").await.unwrap(), 2);
        }
    });
}

#[test]
fn copy_from_an_endless_reader_yields() {
    yields_to_its_neighbours(|flag| async move {
        let copying = async { io::copy(&mut io::repeat(0), &mut io::sink()).await.unwrap() };
        netloop::select! {
            _ = copying => unreachable!("repeat never ends"),
            _ = async { while !flag.get() { task::yield_now().await } } => {}
        }
    });
}

#[test]
fn a_duplex_pair_ping_pongs_and_the_budget_is_spent() {
    yields_to_its_neighbours(|flag| async move {
        let (mut a, mut b) = io::duplex(64);
        let mut buf = [0u8; 4];
        while !flag.get() {
            a.write_all(b"ping").await.unwrap();
            b.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"ping");
        }
    });
}

#[test]
fn duplex_half_close_drop_and_backpressure() {
    test_body(|| {
        current().block_on(async {
            let (mut a, mut b) = io::duplex(4);
            // Only 4 bytes fit: a longer write takes what fits.
            assert_eq!(a.write(b"abcdef").await.unwrap(), 4);
            let more = a.write(b"ef");
            netloop::pin!(more);
            assert!(futures::poll!(more.as_mut()).is_pending(), "the buffer is full");
            let mut buf = [0u8; 4];
            b.read_exact(&mut buf).await.unwrap();
            assert_eq!(more.await.unwrap(), 2, "reading made room");
            // Shutting a's write side down: b reads the rest, then end of file.
            a.shutdown().await.unwrap();
            let mut rest = Vec::new();
            b.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, b"ef");
            // b can still write to a.
            b.write_all(b"back").await.unwrap();
            let mut back = [0u8; 4];
            a.read_exact(&mut back).await.unwrap();
            assert_eq!(&back, b"back");
            // Dropping a: b's writes fail.
            drop(a);
            assert_eq!(b.write(b"x").await.unwrap_err().kind(), ErrorKind::BrokenPipe);
        });
    });
}

#[test]
fn simplex_end_of_file_and_broken_pipe() {
    test_body(|| {
        current().block_on(async {
            let (mut rx, mut tx) = io::simplex(16);
            tx.write_all(b"data").await.unwrap();
            // The halves are tokio's `split` halves: dropping one closes nothing, a
            // shutdown does. The reader then gets end of file after the data.
            tx.shutdown().await.unwrap();
            let mut got = Vec::new();
            rx.read_to_end(&mut got).await.unwrap();
            assert_eq!(got, b"data");
            assert_eq!(tx.write(b"x").await.unwrap_err().kind(), ErrorKind::BrokenPipe);

            let caught = std::panic::catch_unwind(|| io::SimplexStream::new_unsplit(0));
            assert!(caught.is_err(), "a zero-sized pipe is refused");
        });
    });
}

#[test]
fn copies_count_bytes_and_pass_half_closes_on() {
    test_body(|| {
        current().block_on(async {
            let mut reader: &[u8] = &[7u8; 20_000];
            let mut out = Vec::new();
            assert_eq!(io::copy(&mut reader, &mut out).await.unwrap(), 20_000);
            assert_eq!(out.len(), 20_000);

            let mut buffered = io::BufReader::new(&b"hello world"[..]);
            let mut out = Vec::new();
            assert_eq!(io::copy_buf(&mut buffered, &mut out).await.unwrap(), 11);

            // A proxy between two duplex pairs: each side's end of file closes the other.
            let (mut client, mut proxy_a) = io::duplex(64);
            let (mut proxy_b, mut server) = io::duplex(64);
            let proxy = netloop::spawn(async move { io::copy_bidirectional(&mut proxy_a, &mut proxy_b).await });
            client.write_all(b"request").await.unwrap();
            client.shutdown().await.unwrap();
            let mut req = Vec::new();
            server.read_to_end(&mut req).await.unwrap();
            assert_eq!(req, b"request");
            server.write_all(b"response!").await.unwrap();
            server.shutdown().await.unwrap();
            let mut resp = Vec::new();
            client.read_to_end(&mut resp).await.unwrap();
            assert_eq!(resp, b"response!");
            assert_eq!(proxy.await.unwrap().unwrap(), (7, 9));
        });
    });
}

#[test]
fn empty_seeks_to_zero_and_reads_lines_as_nothing() {
    test_body(|| {
        current().block_on(async {
            let mut e = io::empty();
            assert_eq!(e.seek(std::io::SeekFrom::Start(42)).await.unwrap(), 0);
            let mut line = String::new();
            assert_eq!(e.read_line(&mut line).await.unwrap(), 0);
            assert_eq!(
                format!("{:?} {:?}", io::empty(), io::sink()),
                "Empty { .. } Sink { .. }"
            );
        });
    });
}
