//! `Send`, `Sync` and `Unpin` of netloop's types and futures, as tokio's: code that
//! compiles on one runtime must compile on the other. The checks are made by the type
//! checker; the file compiling is the test.

#![allow(dead_code)]

use std::cell::Cell;
use std::future::Future;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use netloop::io::unix::AsyncFd;
use netloop::runtime::EnterGuard;
use netloop::task::coop::RestoreOnPending;
use netloop::task::{JoinHandle, JoinSet};
use netloop::time::{Instant, Sleep, Timeout};

fn send<T: Send>(_: &T) {}
fn sync<T: Sync>(_: &T) {}
fn unpin<T: Unpin>(_: &T) {}

// A negative check: the call `NotX::check(&value)` has one candidate (so it compiles)
// only if the value's type lacks the trait; with it, both impls apply and the call is
// ambiguous.
macro_rules! negative {
    ($name:ident, $tr:path) => {
        trait $name<Which> {
            fn check(&self) {}
        }
        impl<T: ?Sized> $name<()> for T {}
        impl<T: ?Sized + $tr> $name<u8> for T {}
    };
}
negative!(NotSend, Send);
negative!(NotSync, Sync);
negative!(NotUnpin, Unpin);

/// Sends, but is not shared.
struct SendOnly(Cell<u8>);
type FutSend = Pin<Box<dyn Future<Output = ()> + Send>>;
type FutSendSync = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;
type FutLocal = Pin<Box<dyn Future<Output = ()>>>;

fn join_handles(
    ok: JoinHandle<u8>,
    local: JoinHandle<Rc<u8>>,
    shared_not_sent: JoinHandle<std::sync::MutexGuard<'static, ()>>,
) {
    send(&ok);
    sync(&ok);
    unpin(&ok);
    NotSend::check(&local);
    NotSync::check(&local);
    // Sync only with `T: Send`, not with `T: Sync`.
    NotSync::check(&shared_not_sent);
}

fn join_sets(ok: JoinSet<u8>, mut local: JoinSet<Rc<u8>>) {
    send(&ok);
    sync(&ok);
    NotSend::check(&local);
    NotSync::check(&local);
    let next = local.join_next();
    NotSend::check(&next);
    NotSync::check(&next);
    NotUnpin::check(&next);
    drop(next);
    let shutdown = local.shutdown();
    NotSend::check(&shutdown);
    NotSync::check(&shutdown);
}

fn restore_on_pending(r: RestoreOnPending) {
    NotSend::check(&r);
    NotSync::check(&r);
    unpin(&r);
}

fn enter_guard(g: EnterGuard<'_>) {
    NotSend::check(&g);
    sync(&g);
    unpin(&g);
}

fn sleeps(s: Sleep) {
    send(&s);
    sync(&s);
    NotUnpin::check(&s);
    let until = netloop::time::sleep_until(Instant::now());
    send(&until);
    sync(&until);
    NotUnpin::check(&until);
    let advance = netloop::time::advance(Duration::ZERO);
    send(&advance);
    sync(&advance);
    NotUnpin::check(&advance);
}

fn timeouts(a: Timeout<FutSendSync>, b: Timeout<FutSend>, c: Timeout<FutLocal>) {
    send(&a);
    sync(&a);
    NotUnpin::check(&a);
    send(&b);
    NotSync::check(&b);
    NotUnpin::check(&b);
    NotSend::check(&c);
    NotSync::check(&c);
    NotUnpin::check(&c);
}

impl AsRawFd for SendOnly {
    fn as_raw_fd(&self) -> RawFd {
        unreachable!()
    }
}

fn async_fd(mut fd: AsyncFd<SendOnly>) {
    let read = fd.readable_mut();
    send(&read);
    NotSync::check(&read);
    NotUnpin::check(&read);
    drop(read);
    let write = fd.writable_mut();
    send(&write);
    NotSync::check(&write);
    drop(write);
    // The shared waits hold `&AsyncFd`, which needs `Sync` to be sent.
    let shared = fd.readable();
    NotSend::check(&shared);
}

#[test]
fn the_checks_compile() {
    // Everything above is checked by the compiler; this only makes the file a test.
    let _ = (join_handles as fn(_, _, _), join_sets as fn(_, _), sleeps as fn(_));
}

fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}

#[test]
fn sockets_and_handles_are_unwind_safe() {
    // As tokio's: a socket or a handle may cross `catch_unwind`.
    unwind_safe::<netloop::net::TcpListener>();
    unwind_safe::<netloop::net::TcpSocket>();
    unwind_safe::<netloop::net::TcpStream>();
    unwind_safe::<netloop::net::UdpSocket>();
    unwind_safe::<netloop::net::UnixDatagram>();
    unwind_safe::<netloop::net::UnixListener>();
    unwind_safe::<netloop::net::UnixStream>();
    unwind_safe::<netloop::sync::Notify>();
    unwind_safe::<JoinHandle<()>>();
}
