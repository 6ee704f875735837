//! `io::unix::AsyncFd`: readiness for any descriptor.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use netloop::io::Interest;
use netloop::io::unix::AsyncFd;
use netloop_tests::{current, multi, test_body};

fn pair() -> (UnixStream, UnixStream) {
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    (a, b)
}

fn register(s: UnixStream) -> AsyncFd<UnixStream> {
    // SAFETY: the stream owns its descriptor for as long as the AsyncFd holds it.
    unsafe { AsyncFd::register(s) }.unwrap()
}

#[test]
fn readable_after_a_write_and_not_again_after_clear_until_new_data() {
    test_body(|| {
        current().block_on(async {
            let (a, mut b) = pair();
            let a = register(a);
            b.write_all(b"x").unwrap();
            let mut guard = a.readable().await.unwrap();
            assert!(guard.ready().is_readable());
            let mut buf = [0u8; 8];
            assert_eq!(guard.get_inner().read(&mut buf).unwrap(), 1);
            // Drained: the next read would block, so the guard clears the readiness.
            let again = guard.try_io(|fd| fd.get_ref().read(&mut buf));
            assert!(again.is_err(), "WouldBlock becomes TryIoError");
            let wait = a.readable();
            netloop::pin!(wait);
            assert!(
                futures::poll!(wait.as_mut()).is_pending(),
                "cleared: waits for new data"
            );
            b.write_all(b"y").unwrap();
            wait.await.unwrap().retain_ready();
            // Writable from the start.
            assert!(a.writable().await.unwrap().ready().is_writable());
        });
    });
}

#[test]
fn async_io_and_try_io() {
    test_body(|| {
        current().block_on(async {
            let (a, mut b) = pair();
            let a = register(a);
            let mut buf = [0u8; 4];
            assert_eq!(
                a.try_io(Interest::READABLE, |s| (&*s).read(&mut buf))
                    .unwrap_err()
                    .kind(),
                ErrorKind::WouldBlock
            );
            b.write_all(b"ping").unwrap();
            let n = a.async_io(Interest::READABLE, |s| (&*s).read(&mut buf)).await.unwrap();
            assert_eq!(&buf[..n], b"ping");
            let n = a.async_io(Interest::WRITABLE, |s| (&*s).write(b"pong")).await.unwrap();
            assert_eq!(n, 4);
            let mut got = [0u8; 4];
            b.read_exact(&mut got).unwrap();
            assert_eq!(&got, b"pong");
        });
    });
}

#[test]
fn every_waiting_task_is_woken() {
    test_body(|| {
        multi().block_on(async {
            let (a, mut b) = pair();
            let a = Arc::new(register(a));
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    let a = a.clone();
                    netloop::spawn(async move { a.readable().await.unwrap().ready().is_readable() })
                })
                .collect();
            netloop::task::yield_now().await;
            b.write_all(b"x").unwrap();
            for w in waiters {
                assert!(w.await.unwrap());
            }
        });
    });
}

#[test]
fn into_inner_deregisters_and_a_bad_descriptor_is_an_error_that_gives_the_object_back() {
    test_body(|| {
        current().block_on(async {
            let (a, _b) = pair();
            let fd = a.as_raw_fd();
            let a = register(a).into_inner();
            assert_eq!(a.as_raw_fd(), fd);
            // Registered again after into_inner: the first registration is gone.
            let a = register(a);
            drop(a);

            /// A descriptor number that is not open.
            #[derive(Debug)]
            struct Closed;
            impl AsRawFd for Closed {
                fn as_raw_fd(&self) -> std::os::fd::RawFd {
                    1_000_000
                }
            }
            // SAFETY: the registration fails before the number is used for anything.
            let err = unsafe { AsyncFd::register(Closed) }.unwrap_err();
            let (_closed, cause) = err.into_parts();
            assert_eq!(cause.raw_os_error(), Some(libc::EBADF));
        });
    });
}

#[test]
fn error_interest_ignores_plain_readability() {
    test_body(|| {
        current().block_on(async {
            let (a, mut b) = pair();
            // SAFETY: as in `register`.
            let a = unsafe { AsyncFd::register_with_interest(a, Interest::ERROR) }.unwrap();
            b.write_all(b"x").unwrap();
            let wait = a.ready(Interest::ERROR);
            netloop::pin!(wait);
            for _ in 0..3 {
                assert!(futures::poll!(wait.as_mut()).is_pending(), "readable is not an error");
                netloop::task::yield_now().await;
            }
        });
    });
}

#[test]
#[should_panic(expected = "there is no reactor running")]
fn registering_outside_a_runtime_panics() {
    let (a, _b) = pair();
    let _ = register(a);
}
