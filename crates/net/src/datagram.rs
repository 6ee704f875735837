//! The methods every datagram socket (`UdpSocket`, `UnixDatagram`) has alike: readiness,
//! the connected-peer `send`/`recv` forms, and `try_io`/`async_io`. A macro, as in
//! `byte_stream`, so that each type keeps tokio's inherent methods (no trait to import).
//! The type must hold its socket in a field `io: PollEvented<S>` whose `S` has
//! `send(&[u8])` and `recv(&mut [u8])`.

macro_rules! datagram_methods {
    () => {
        readiness_methods!();

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
            $crate::registration::io_shared(&self.io, netloop_reactor::io::Direction::Write, |s| s.send(buf)).await
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
            $crate::registration::io_shared(&self.io, netloop_reactor::io::Direction::Read, |s| s.recv(buf)).await
        }

        /// Polls to receive one datagram into `buf`'s unfilled part.
        pub fn poll_recv(
            &self,
            cx: &mut std::task::Context<'_>,
            buf: &mut netloop_io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            $crate::registration::poll_read_into(&self.io, cx, buf, |s, b| Ok((s.recv(b)?, ())))
        }

        /// Receives without waiting; `WouldBlock` if nothing is there.
        pub fn try_recv(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.io
                .try_io(netloop_reactor::io::Direction::Read, |s| s.recv(buf))
        }

        /// Receives one datagram from the connected peer into the spare capacity of `buf`.
        pub async fn recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
            $crate::registration::io_shared(&self.io, netloop_reactor::io::Direction::Read, |s| {
                $crate::registration::recv_into(buf, |b| s.recv(b))
            })
            .await
        }

        /// [`recv_buf`](Self::recv_buf) without waiting.
        pub fn try_recv_buf<B: bytes::BufMut>(&self, buf: &mut B) -> std::io::Result<usize> {
            self.io.try_io(netloop_reactor::io::Direction::Read, |s| {
                $crate::registration::recv_into(buf, |b| s.recv(b))
            })
        }
    };
}
