//! `net::unix::pipe`: anonymous pipes and FIFOs as tokio has them. Round trips, the
//! end of file once every sender is gone, `BrokenPipe` once the receiver is, the
//! errors of opening and converting something that is not a pipe (or the wrong end
//! of one), the readiness `try_io` sees, descriptors handed to a child, and tokio's
//! own I/O traits on the pipe ends. Every body runs under `test_body`'s time limit and
//! every wait that could hang under a `timeout`.

use std::ffi::CString;
use std::io::ErrorKind;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use netloop::io::{AsyncReadExt, AsyncWriteExt, Interest};
use netloop::net::unix::pipe;
use netloop::time::timeout;
use netloop_tests::{TempPath, WAIT, current, multi, test_body};

/// A FIFO at a fresh path, removed when dropped.
fn fifo(name: &str) -> TempPath {
    let path = TempPath::new(&format!("{name}.fifo"));
    let c_path = CString::new(path.0.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c_path` is a NUL-terminated string that outlives the call.
    let rc = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
    path
}

/// A regular file at a fresh path, removed when dropped.
fn regular_file(name: &str) -> TempPath {
    let path = TempPath::new(&format!("{name}.txt"));
    std::fs::File::create(&path.0).unwrap();
    path
}

fn is_nonblocking(fd: &impl AsFd) -> bool {
    // SAFETY: the descriptor is borrowed for the call; F_GETFL takes no pointer.
    let flags = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_GETFL) };
    assert!(flags >= 0);
    flags & libc::O_NONBLOCK != 0
}

/// More than a pipe's default buffer (64 KiB), so the writer has to wait for the
/// reader several times.
fn payload() -> Vec<u8> {
    (0..1024 * 1024).map(|i| (i % 251) as u8).collect()
}

#[test]
fn a_megabyte_crosses_loops_and_ends_with_eof() {
    test_body(|| {
        multi().block_on(async {
            let (mut tx, mut rx) = pipe::pipe().unwrap();
            let data = payload();
            let sent = data.clone();
            let writer = netloop::spawn(async move {
                for chunk in sent.chunks(10_000) {
                    tx.write_all(chunk).await.unwrap();
                }
                // Dropping the only sender is the end of file.
            });
            let mut got = Vec::new();
            timeout(WAIT, rx.read_to_end(&mut got)).await.unwrap().unwrap();
            assert_eq!(got.len(), data.len());
            assert!(got == data, "the bytes arrive in order");
            writer.await.unwrap();
        });
    });
}

#[test]
fn a_pending_read_sees_eof_when_the_sender_drops() {
    test_body(|| {
        current().block_on(async {
            let (tx, mut rx) = pipe::pipe().unwrap();
            let reader = netloop::spawn(async move {
                let mut buf = [0u8; 8];
                let n = rx.read(&mut buf).await.unwrap();
                (n, rx)
            });
            netloop::task::yield_now().await;
            assert!(!reader.is_finished(), "nothing was written: the read waits");
            drop(tx);
            let (n, rx) = timeout(WAIT, reader).await.unwrap().unwrap();
            assert_eq!(n, 0, "end of file");
            let ready = timeout(WAIT, rx.ready(Interest::READABLE)).await.unwrap().unwrap();
            assert!(ready.is_read_closed());
            assert_eq!(rx.try_read(&mut [0u8; 8]).unwrap(), 0);
        });
    });
}

#[test]
fn writes_fail_with_broken_pipe_once_the_receiver_is_gone() {
    test_body(|| {
        current().block_on(async {
            let (mut tx, rx) = pipe::pipe().unwrap();
            drop(rx);
            let err = timeout(WAIT, tx.write_all(b"nobody listens"))
                .await
                .unwrap()
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe);
        });
    });
}

#[test]
fn opening_what_is_not_a_fifo_fails_as_tokio_says() {
    test_body(|| {
        current().block_on(async {
            let file = regular_file("not-a-fifo");
            for err in [
                pipe::OpenOptions::new().open_sender(&file.0).unwrap_err(),
                pipe::OpenOptions::new().open_receiver(&file.0).unwrap_err(),
            ] {
                assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
            }
            let missing = TempPath::new("no-such-fifo");
            for err in [
                pipe::OpenOptions::new().open_sender(&missing.0).unwrap_err(),
                pipe::OpenOptions::new().open_receiver(&missing.0).unwrap_err(),
            ] {
                assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
            }
        });
    });
}

#[test]
fn a_sender_needs_a_receiver_unless_read_write() {
    test_body(|| {
        current().block_on(async {
            let path = fifo("sender-first");
            let err = pipe::OpenOptions::new().open_sender(&path.0).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ENXIO));

            // Read-write: it opens, and what it writes waits in the FIFO.
            let mut tx = pipe::OpenOptions::new().read_write(true).open_sender(&path.0).unwrap();
            timeout(WAIT, tx.write_all(b"early")).await.unwrap().unwrap();
            let mut rx = pipe::OpenOptions::new().open_receiver(&path.0).unwrap();
            let mut buf = [0u8; 5];
            timeout(WAIT, rx.read_exact(&mut buf)).await.unwrap().unwrap();
            assert_eq!(&buf, b"early");
        });
    });
}

async fn write_and_close(path: &Path, msg: &[u8]) {
    let mut tx = pipe::OpenOptions::new().open_sender(path).unwrap();
    timeout(WAIT, tx.write_all(msg)).await.unwrap().unwrap();
}

#[test]
fn a_fifo_receiver_reads_each_sender_in_turn() {
    test_body(|| {
        current().block_on(async {
            let path = fifo("senders-in-turn");
            let mut rx = pipe::OpenOptions::new().open_receiver(&path.0).unwrap();
            let mut buf = [0u8; 3];

            write_and_close(&path.0, b"one").await;
            timeout(WAIT, rx.read_exact(&mut buf)).await.unwrap().unwrap();
            assert_eq!(&buf, b"one");
            let err = timeout(WAIT, rx.read_exact(&mut buf)).await.unwrap().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::UnexpectedEof);

            write_and_close(&path.0, b"two").await;
            timeout(WAIT, rx.read_exact(&mut buf)).await.unwrap().unwrap();
            assert_eq!(&buf, b"two");
        });
    });
}

#[test]
fn a_read_write_receiver_waits_for_the_next_sender_instead_of_eof() {
    test_body(|| {
        current().block_on(async {
            let path = fifo("resilient");
            let mut rx = pipe::OpenOptions::new()
                .read_write(true)
                .open_receiver(&path.0)
                .unwrap();
            let mut buf = [0u8; 3];
            write_and_close(&path.0, b"one").await;
            timeout(WAIT, rx.read_exact(&mut buf)).await.unwrap().unwrap();

            // The sender is gone, and yet the read waits rather than ending.
            let waited = timeout(Duration::from_millis(50), rx.read_exact(&mut buf)).await;
            assert!(waited.is_err(), "no end of file for a read-write receiver");

            write_and_close(&path.0, b"two").await;
            timeout(WAIT, rx.read_exact(&mut buf)).await.unwrap().unwrap();
            assert_eq!(&buf, b"two");
        });
    });
}

#[test]
fn from_file_checks_the_file_and_makes_it_nonblocking() {
    test_body(|| {
        current().block_on(async {
            // Not a pipe at all.
            let file = regular_file("from-file");
            let write_only = std::fs::OpenOptions::new().write(true).open(&file.0).unwrap();
            assert_eq!(
                pipe::Sender::from_file(write_only).unwrap_err().kind(),
                ErrorKind::InvalidInput
            );
            let read_only = std::fs::File::open(&file.0).unwrap();
            assert_eq!(
                pipe::Receiver::from_file(read_only).unwrap_err().kind(),
                ErrorKind::InvalidInput
            );
            let (socket, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
            let err = pipe::Receiver::from_owned_fd(OwnedFd::from(socket)).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "a socket is no pipe");

            // A pipe, but the wrong end of it.
            let path = fifo("from-file");
            let _rx = pipe::OpenOptions::new().open_receiver(&path.0).unwrap();
            let nonblocking = |write: bool| {
                std::fs::OpenOptions::new()
                    .read(!write)
                    .write(write)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&path.0)
                    .unwrap()
            };
            let err = pipe::Receiver::from_file(nonblocking(true)).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
            let err = pipe::Sender::from_file(nonblocking(false)).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput);

            // The right ends, opened blocking (each open waits for the other side, which
            // `_rx` and `_writer` are): made non-blocking.
            let _writer = nonblocking(true);
            let blocking_rx = std::fs::File::open(&path.0).unwrap();
            assert!(!is_nonblocking(&blocking_rx));
            let rx = pipe::Receiver::from_file(blocking_rx).unwrap();
            assert!(is_nonblocking(&rx));
            let blocking_tx = std::fs::OpenOptions::new().write(true).open(&path.0).unwrap();
            let mut tx = pipe::Sender::from_file(blocking_tx).unwrap();
            assert!(is_nonblocking(&tx));
            tx.write_all(b"x").await.unwrap();
            let mut buf = [0u8; 1];
            let mut rx = rx;
            timeout(WAIT, rx.read_exact(&mut buf)).await.unwrap().unwrap();
            assert_eq!(&buf, b"x");
        });
    });
}

#[test]
fn the_descriptors_come_back_blocking_or_not() {
    test_body(|| {
        current().block_on(async {
            let (tx, rx) = pipe::pipe().unwrap();
            assert!(is_nonblocking(&tx) && is_nonblocking(&rx));
            let (tx_fd, rx_fd) = (tx.into_nonblocking_fd().unwrap(), rx.into_blocking_fd().unwrap());
            assert!(is_nonblocking(&tx_fd));
            assert!(!is_nonblocking(&rx_fd));

            // And back: a descriptor of either end makes an end again.
            let tx = pipe::Sender::from_owned_fd(tx_fd).unwrap();
            let mut rx = pipe::Receiver::from_owned_fd(rx_fd).unwrap();
            assert!(is_nonblocking(&rx));
            timeout(WAIT, tx.writable()).await.unwrap().unwrap();
            tx.try_write(b"again").unwrap();
            let mut buf = [0u8; 5];
            timeout(WAIT, rx.read_exact(&mut buf)).await.unwrap().unwrap();
            assert_eq!(&buf, b"again");
        });
    });
}

#[test]
fn a_child_writes_into_a_blocking_descriptor() {
    test_body(|| {
        current().block_on(async {
            let (tx, mut rx) = pipe::pipe().unwrap();
            let status = netloop::process::Command::new("sh")
                .args(["-c", "printf 'from the child'"])
                .stdout(tx.into_blocking_fd().unwrap())
                .status();
            let mut got = String::new();
            // The child's copy of the sender is the last: its exit is the end of file.
            timeout(WAIT, rx.read_to_string(&mut got)).await.unwrap().unwrap();
            assert_eq!(got, "from the child");
            assert!(timeout(WAIT, status).await.unwrap().unwrap().success());
        });
    });
}

#[test]
fn try_io_runs_only_while_the_end_is_ready() {
    test_body(|| {
        current().block_on(async {
            let (mut tx, rx) = pipe::pipe().unwrap();
            let ran = |res: std::io::Result<bool>| res.unwrap_or(false);

            // A new pipe is writable at once; a `WouldBlock` from the closure clears it.
            assert!(ran(tx.try_io(|| Ok(true))));
            let _ = tx.try_io(|| Err::<bool, _>(ErrorKind::WouldBlock.into()));
            assert!(!ran(tx.try_io(|| Ok(true))), "writability was cleared");

            // Nothing to read yet, even once the loop has polled.
            netloop::task::yield_now().await;
            assert!(!ran(rx.try_io(|| Ok(true))));
            tx.write_all(b"!").await.unwrap();
            timeout(WAIT, rx.readable()).await.unwrap().unwrap();
            assert!(ran(rx.try_io(|| Ok(true))));
            let mut buf = [0u8; 4];
            assert_eq!(rx.try_read(&mut buf).unwrap(), 1);
            assert_eq!(rx.try_read(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
            assert!(!ran(rx.try_io(|| Ok(true))), "the WouldBlock cleared the readability");
        });
    });
}

#[test]
fn vectored_and_buf_reads_and_writes() {
    test_body(|| {
        current().block_on(async {
            let (tx, rx) = pipe::pipe().unwrap();
            let parts = [std::io::IoSlice::new(b"ab"), std::io::IoSlice::new(b"cd")];
            assert_eq!(tx.try_write_vectored(&parts).unwrap(), 4);
            timeout(WAIT, rx.readable()).await.unwrap().unwrap();
            let (mut one, mut two) = ([0u8; 1], [0u8; 1]);
            let mut bufs = [std::io::IoSliceMut::new(&mut one), std::io::IoSliceMut::new(&mut two)];
            assert_eq!(rx.try_read_vectored(&mut bufs).unwrap(), 2);
            assert_eq!((one, two), ([b'a'], [b'b']));
            let mut rest = b">".to_vec();
            assert_eq!(rx.try_read_buf(&mut rest).unwrap(), 2);
            assert_eq!(rest, b">cd");
        });
    });
}

/// tokio's traits (the `tokio-io` feature): tokio-util's codec reads lines off a
/// receiver.
#[test]
fn tokio_util_reads_lines_off_a_receiver() {
    use futures::StreamExt;
    use tokio_util::codec::{FramedRead, LinesCodec};
    test_body(|| {
        current().block_on(async {
            let (mut tx, rx) = pipe::pipe().unwrap();
            tx.write_all(b"first\nsecond\n").await.unwrap();
            drop(tx);
            let lines: Vec<String> = timeout(
                WAIT,
                FramedRead::new(rx, LinesCodec::new()).map(Result::unwrap).collect(),
            )
            .await
            .unwrap();
            assert_eq!(lines, ["first", "second"]);
        });
    });
}
