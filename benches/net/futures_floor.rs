//! The futures floor: the least a futures executor can do on mio, with the very
//! handlers every other server runs.
//!
//! [`mio_server`](super::mio_server) is the floor of the hardware and the kernel: no
//! futures at all. This is the floor of the abstraction: one thread, one `Poll`, a slab
//! of tasks, a `VecDeque` of keys as the run queue, and sockets whose readiness lives in
//! `Cell`s. The handlers are [`echo`] and [`http`], the async functions netloop, tokio
//! and smol run, over tokio's `AsyncRead`/`AsyncWrite`. What it costs above
//! `mio_server` is what turning a connection into a polled future costs at the least;
//! what a runtime costs above it is the runtime.
//!
//! It leaves out all a runtime is for, so it is a yardstick and not a server:
//!
//! - a waker only works on this thread: a wake from another thread would push onto that
//!   thread's queue (nothing here wakes from another thread);
//! - no timers, no spawning from tasks, no `block_on`, no shutdown;
//! - no cooperative budget, no panic isolation (a panicking handler ends the process),
//!   no metrics, no I/O ratio;
//! - sockets are not `Send`, and readiness has no tick guard (one thread sets and clears
//!   it, so no event can slip between a read and its clear).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::task::{Context, Poll, Wake, Waker};

use mio::Events;
use mio::net::TcpStream;
use netloop::io::{AsyncRead, AsyncWrite, ReadBuf};
use slab::Slab;

use super::mio_server::{LISTENER, accept_each, listen, wait_for_events};
use super::{Mode, echo, http};

thread_local! {
    /// Keys of the tasks woken since they were last polled.
    static RUN_QUEUE: RefCell<VecDeque<usize>> = RefCell::new(VecDeque::with_capacity(1024));
}

/// A task's waker: queues the task's key, once until its next poll.
struct TaskWaker {
    key: usize,
    /// In the run queue already. Only this thread touches it: a plain load and store.
    queued: AtomicBool,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.load(Relaxed) {
            self.queued.store(true, Relaxed);
            RUN_QUEUE.with(|q| q.borrow_mut().push_back(self.key));
        }
    }
}

/// One direction's readiness and its waiting task.
#[derive(Default)]
struct Direction {
    ready: Cell<bool>,
    /// Wake `waker` at the next event.
    armed: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Direction {
    fn set_ready(&self) {
        self.ready.set(true);
        if self.armed.replace(false)
            && let Some(waker) = &*self.waker.borrow()
        {
            waker.wake_by_ref();
        }
    }

    /// Readiness now, or `Pending` with the waker kept for the next event.
    fn poll_ready(&self, cx: &Context<'_>) -> Poll<()> {
        if self.ready.get() {
            return Poll::Ready(());
        }
        let mut slot = self.waker.borrow_mut();
        if !slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *slot = Some(cx.waker().clone());
        }
        self.armed.set(true);
        Poll::Pending
    }
}

#[derive(Default)]
struct IoState {
    read: Direction,
    write: Direction,
}

/// The socket a handler gets.
struct FloorStream {
    socket: TcpStream,
    io: Rc<IoState>,
}

impl AsyncRead for FloorStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            if self.io.read.poll_ready(cx).is_pending() {
                return Poll::Pending;
            }
            let unfilled = buf.initialize_unfilled();
            let len = unfilled.len();
            match (&self.socket).read(unfilled) {
                Ok(n) => {
                    // A short read drained the socket, as netloop and tokio assume.
                    if n > 0 && n < len {
                        self.io.read.ready.set(false);
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.io.read.ready.set(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for FloorStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            if self.io.write.poll_ready(cx).is_pending() {
                return Poll::Pending;
            }
            match (&self.socket).write(buf) {
                Ok(n) => {
                    if n > 0 && n < buf.len() {
                        self.io.write.ready.set(false);
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.io.write.ready.set(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.socket.shutdown(Shutdown::Write))
    }
}

/// A connection: its handler's future, the waker that queues it, its readiness.
struct Task {
    future: Pin<Box<dyn Future<Output = ()>>>,
    waker_state: Arc<TaskWaker>,
    waker: Waker,
    io: Rc<IoState>,
}

/// Serves `mode` on `addr` on this thread until the process ends; calls `on_listen`
/// with the bound address first.
pub fn run(addr: SocketAddr, mode: Mode, on_listen: impl FnOnce(SocketAddr)) -> io::Result<()> {
    let mut poll = mio::Poll::new()?;
    let mut events = Events::with_capacity(1024);
    let listener = listen(&poll, addr, on_listen)?;

    let mut tasks: Slab<Task> = Slab::with_capacity(1024);
    loop {
        wait_for_events(&mut poll, &mut events)?;
        for event in events.iter() {
            if event.token() == LISTENER {
                accept_each(&poll, &listener, &mut tasks, mode, |socket, key| {
                    spawn(socket, key, mode)
                });
                continue;
            }
            let Some(task) = tasks.get(event.token().0) else {
                continue;
            };
            if event.is_readable() || event.is_read_closed() || event.is_error() {
                task.io.read.set_ready();
            }
            if event.is_writable() || event.is_write_closed() || event.is_error() {
                task.io.write.set_ready();
            }
        }
        poll_woken(&mut tasks);
    }
}

/// Polls every queued task once; a finished one is removed (its socket closes, which
/// takes it out of the epoll set). A key can outlive its task in the queue; if an
/// accept has reused the slot meanwhile, the new task gets a spurious poll, which
/// futures allow.
fn poll_woken(tasks: &mut Slab<Task>) {
    while let Some(key) = RUN_QUEUE.with(|q| q.borrow_mut().pop_front()) {
        let Some(task) = tasks.get_mut(key) else { continue };
        task.waker_state.queued.store(false, Relaxed);
        let mut cx = Context::from_waker(&task.waker);
        if task.future.as_mut().poll(&mut cx).is_ready() {
            tasks.remove(key);
        }
    }
}

/// A connection's task, queued for its first poll.
fn spawn(socket: TcpStream, key: usize, mode: Mode) -> Task {
    let io = Rc::new(IoState::default());
    let stream = FloorStream { socket, io: io.clone() };
    let future: Pin<Box<dyn Future<Output = ()>>> = match mode {
        Mode::Echo => Box::pin(echo(stream)),
        Mode::Http => Box::pin(http(stream)),
    };
    let waker_state = Arc::new(TaskWaker {
        key,
        queued: AtomicBool::new(true),
    });
    RUN_QUEUE.with(|q| q.borrow_mut().push_back(key));
    Task {
        future,
        waker: Waker::from(waker_state.clone()),
        waker_state,
        io,
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::super::{HTTP_REQUEST, HTTP_RESPONSE, Mode};

    /// Starts a floor server on a thread of its own (it serves until the test process
    /// ends) and returns its address.
    fn start(mode: Mode) -> SocketAddr {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            super::run("127.0.0.1:0".parse().expect("address"), mode, |addr| {
                tx.send(addr).expect("the test waits");
            })
        });
        rx.recv_timeout(Duration::from_secs(10)).expect("the server starts")
    }

    fn connect(addr: SocketAddr) -> TcpStream {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        stream
    }

    #[test]
    fn echoes_every_byte_over_several_connections() {
        let addr = start(Mode::Echo);
        let mut conns: Vec<TcpStream> = (0..4).map(|_| connect(addr)).collect();
        for round in 0..3u8 {
            for (i, conn) in conns.iter_mut().enumerate() {
                // 100 KiB: more than one read and, some rounds, more than the socket buffers.
                let sent: Vec<u8> = (0..100 * 1024).map(|b| (b as u8) ^ round ^ i as u8).collect();
                let mut writer = conn.try_clone().expect("clone");
                let to_send = sent.clone();
                let writing = std::thread::spawn(move || writer.write_all(&to_send));
                let mut back = vec![0; sent.len()];
                conn.read_exact(&mut back).expect("the echo comes back");
                writing.join().expect("writer").expect("write");
                assert!(back == sent, "round {round}, connection {i}: the echo differs");
            }
        }
    }

    #[test]
    fn answers_pipelined_http_requests_then_closes_on_request() {
        let addr = start(Mode::Http);
        let mut conn = connect(addr);
        conn.write_all(&[HTTP_REQUEST, HTTP_REQUEST].concat()).expect("write");
        let mut back = vec![0; 2 * HTTP_RESPONSE.len()];
        conn.read_exact(&mut back).expect("two answers");
        assert_eq!(back, [HTTP_RESPONSE, HTTP_RESPONSE].concat());
        conn.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
            .expect("write");
        let mut rest = Vec::new();
        conn.read_to_end(&mut rest).expect("the server closes");
        assert_eq!(rest, HTTP_RESPONSE);
    }
}
