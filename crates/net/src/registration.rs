//! A socket's registration: the loop it joins, and the waits and operations every
//! socket type runs through it.

use std::future::Future;
use std::io;
use std::task::{Context, Poll, ready};

use netloop_io::ReadBuf;
use netloop_reactor::io::{Direction, PollEvented, Ready};

/// Registers `source` now, with the loop driving this thread, else the runtime's next.
///
/// # Panics
///
/// Outside a runtime, as tokio's sockets do: there is no loop to register with.
#[track_caller]
pub(crate) fn register<S: mio::event::Source>(source: S, interest: mio::Interest) -> io::Result<PollEvented<S>> {
    match netloop_scheduler::placement::registration_loop() {
        Ok(event_loop) => event_loop.register(source, interest),
        Err(no_runtime) => panic!("{no_runtime}"),
    }
}

/// Waits for any readiness in `interest` on `io` and returns all of it that is ready
/// (the `ready` of every socket type). Several tasks may wait at once; each is woken by
/// the next event.
pub(crate) async fn ready<S: mio::event::Source>(
    io: &PollEvented<S>,
    interest: crate::io::Interest,
) -> io::Result<Ready> {
    std::future::poll_fn(|cx| {
        let mut ready = Ready::EMPTY;
        // An error alone ends only a wait that asks for errors (tokio's
        // `Interest::ERROR`, waited for on the read side).
        for (wanted, direction) in [
            (interest.is_readable() || interest.is_error(), Direction::Read),
            (interest.is_writable(), Direction::Write),
        ] {
            if !wanted {
                continue;
            }
            let polled = if interest.is_error() && direction == Direction::Read {
                io.poll_ready_shared_or_error(cx, direction)
            } else {
                io.poll_ready_shared(cx, direction)
            };
            if let Poll::Ready(event) = polled {
                ready |= event?.ready;
            }
        }
        if ready.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(Ok(ready))
        }
    })
    .await
}

/// Waits until `io` is ready in `direction` (the `readable` and `writable` of every
/// socket type; may be spurious). Several tasks may wait at once.
pub(crate) async fn ready_for<S: mio::event::Source>(io: &PollEvented<S>, direction: Direction) -> io::Result<()> {
    std::future::poll_fn(|cx| io.poll_ready_shared(cx, direction))
        .await
        .map(drop)
}

/// Runs `op` on `io`'s socket whenever it is ready in `direction`, until it does not
/// fail with `WouldBlock`: the waiting form of every socket operation (`accept`,
/// `send_to`, `peek`, ...). Several tasks may await one socket at once.
pub(crate) fn io_shared<S: mio::event::Source, R>(
    io: &PollEvented<S>,
    direction: Direction,
    mut op: impl FnMut(&S) -> io::Result<R>,
) -> impl Future<Output = io::Result<R>> {
    std::future::poll_fn(move |cx| io.poll_io_shared(cx, direction, &mut op))
}

/// Polls `op` on `io`'s socket into `buf`'s unfilled part, retried across
/// `WouldBlock`, and advances `buf` over the `n` bytes it read; the rest of `op`'s
/// output (a sender's address, ...) comes back.
pub(crate) fn poll_read_into<S: mio::event::Source, A>(
    io: &PollEvented<S>,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
    mut op: impl FnMut(&S, &mut [u8]) -> io::Result<(usize, A)>,
) -> Poll<io::Result<A>> {
    let (n, out) = ready!(io.poll_read_io(cx, |s| op(s, buf.initialize_unfilled())))?;
    buf.advance(n);
    Poll::Ready(Ok(out))
}

/// The largest datagram (UDP's limit, and more than a Unix socket carries by
/// default): the most one `recv_buf` takes.
pub(crate) const MAX_DATAGRAM: usize = 64 * 1024;

/// Runs `recv` into a zeroed buffer as large as `buf`'s spare capacity (up to a
/// datagram's size) and appends what it received: no uninitialized memory is handed to
/// the kernel, at the cost of a copy.
pub(crate) fn recv_into<B: bytes::BufMut>(
    buf: &mut B,
    recv: impl FnOnce(&mut [u8]) -> io::Result<usize>,
) -> io::Result<usize> {
    let mut tmp = vec![0u8; buf.remaining_mut().min(MAX_DATAGRAM)];
    let n = recv(&mut tmp)?;
    buf.put_slice(&tmp[..n]);
    Ok(n)
}

/// [`recv_into`] for a `recv_from`, which also says where the datagram came from.
pub(crate) fn recv_from_into<B: bytes::BufMut, A>(
    buf: &mut B,
    recv_from: impl FnOnce(&mut [u8]) -> io::Result<(usize, A)>,
) -> io::Result<(usize, A)> {
    let mut from = None;
    let n = recv_into(buf, |b| {
        let (n, addr) = recv_from(b)?;
        from = Some(addr);
        Ok(n)
    })?;
    Ok((n, from.expect("set by a successful recv_from")))
}
