//! The methods every datagram socket (`UdpSocket`, `UnixDatagram`) has alike: readiness,
//! the connected-peer `send`/`recv` forms, and `try_io`/`async_io`. A macro, as in
//! `byte_stream`, so that each type keeps tokio's inherent methods (no trait to import).
//! The type must hold its socket in a field `io: PollEvented<S>` whose `S` has
//! `send(&[u8])` and `recv(&mut [u8])`.

macro_rules! datagram_methods {
    () => {
        /// Waits for any of `interest`; several tasks may wait at once.
        pub async fn ready(&self, interest: $crate::io::Interest) -> std::io::Result<$crate::io::Ready> {
            $crate::registration::ready(&self.io, interest).await
        }

        /// Waits until a datagram may be read (may be spurious).
        pub async fn readable(&self) -> std::io::Result<()> {
            $crate::registration::ready_for(&self.io, netloop_reactor::io::Direction::Read).await
        }

        /// Waits until a datagram may be sent.
        pub async fn writable(&self) -> std::io::Result<()> {
            $crate::registration::ready_for(&self.io, netloop_reactor::io::Direction::Write).await
        }

        /// Polls for read readiness (only the last waker is woken).
        pub fn poll_recv_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
            self.io.poll_read_ready(cx).map_ok(drop)
        }

        /// Polls for write readiness (only the last waker is woken).
        pub fn poll_send_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
            self.io.poll_write_ready(cx).map_ok(drop)
        }

        /// Sends `buf` to the connected peer; returns the bytes sent.
        pub async fn send(&self, buf: &[u8]) -> std::io::Result<usize> {
            std::future::poll_fn(|cx| {
                self.io
                    .poll_io_shared(cx, netloop_reactor::io::Direction::Write, |s| s.send(buf))
            })
            .await
        }

        /// Polls to send `buf` to the connected peer.
        pub fn poll_send(
            &self,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.io.poll_write_io(cx, |s| s.send(buf))
        }

        /// Sends without waiting; `WouldBlock` if the socket is not ready.
        pub fn try_send(&self, buf: &[u8]) -> std::io::Result<usize> {
            self.io
                .try_io(netloop_reactor::io::Direction::Write, |s| s.send(buf))
        }

        /// Receives one datagram from the connected peer into `buf`; a datagram larger
        /// than `buf` is cut to fit (the rest is lost, as with `recv(2)`).
        pub async fn recv(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            std::future::poll_fn(|cx| {
                self.io
                    .poll_io_shared(cx, netloop_reactor::io::Direction::Read, |s| s.recv(buf))
            })
            .await
        }

        /// Polls to receive one datagram into `buf`'s unfilled part.
        pub fn poll_recv(
            &self,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let n = std::task::ready!(self.io.poll_read_io(cx, |s| s.recv(buf.initialize_unfilled())))?;
            buf.advance(n);
            std::task::Poll::Ready(Ok(()))
        }

        /// Receives without waiting; `WouldBlock` if nothing is there.
        pub fn try_recv(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.io
                .try_io(netloop_reactor::io::Direction::Read, |s| s.recv(buf))
        }

        /// Receives one datagram from the connected peer into the spare capacity of `buf`.
        pub async fn recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
            std::future::poll_fn(|cx| {
                self.io
                    .poll_io_shared(cx, netloop_reactor::io::Direction::Read, |s| {
                        $crate::registration::recv_into(buf, |b| s.recv(b))
                    })
            })
            .await
        }

        /// [`recv_buf`](Self::recv_buf) without waiting.
        pub fn try_recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
            self.io.try_io(netloop_reactor::io::Direction::Read, |s| {
                $crate::registration::recv_into(buf, |b| s.recv(b))
            })
        }

        /// Runs `f` once if the socket was last seen ready for `interest`; `WouldBlock`
        /// otherwise, or if `f` returns it (which clears the readiness).
        pub fn try_io<R>(
            &self,
            interest: $crate::io::Interest,
            f: impl FnOnce() -> std::io::Result<R>,
        ) -> std::io::Result<R> {
            self.io.try_io(interest.direction(), |_| f())
        }

        /// Runs `f` each time the socket is ready for `interest`, until it returns
        /// something other than `WouldBlock`.
        pub async fn async_io<R>(
            &self,
            interest: $crate::io::Interest,
            mut f: impl FnMut() -> std::io::Result<R>,
        ) -> std::io::Result<R> {
            std::future::poll_fn(|cx| self.io.poll_io_shared(cx, interest.direction(), |_| f())).await
        }
    };
}
