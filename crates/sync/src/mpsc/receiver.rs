//! The receiving methods that [`Receiver`](super::Receiver) and
//! [`UnboundedReceiver`](super::UnboundedReceiver) share, written once.
//!
//! Both hold a `chan: chan::Rx<T, S>` and differ only in the semaphore `S`; every
//! method here just forwards to the channel, so both halves behave the same.

/// The shared methods, in an `impl<T> $rx<T>` block of their own.
macro_rules! receiver_methods {
    ($rx:ident) => {
        impl<T> $rx<T> {
            /// Waits for the next message; `None` once the channel is closed (every
            /// sender dropped, or [`close`](Self::close) called) and every buffered
            /// message received.
            ///
            /// Cancel safe: dropping the future before it completes loses no message.
            pub async fn recv(&mut self) -> Option<T> {
                std::future::poll_fn(|cx| self.chan.recv(cx)).await
            }

            /// Waits for at least one message, then moves up to `limit` of them to the
            /// end of `buffer`, returning how many. Returns 0 at once if `limit` is 0,
            /// and 0 once the channel is closed and drained. Cancel safe.
            pub async fn recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
                std::future::poll_fn(|cx| self.chan.recv_many(cx, buffer, limit)).await
            }

            /// Takes the next message if one is buffered, without waiting.
            pub fn try_recv(&mut self) -> Result<T, $crate::mpsc::error::TryRecvError> {
                self.chan.try_recv()
            }

            /// [`recv`](Self::recv) for code outside async: parks this thread until a
            /// message or the close arrives.
            ///
            /// # Panics
            ///
            /// On a loop's thread or inside a runtime's `block_on`.
            #[track_caller]
            pub fn blocking_recv(&mut self) -> Option<T> {
                $crate::blocking::block_on(self.recv())
            }

            /// [`recv_many`](Self::recv_many) for code outside async, parking this
            /// thread.
            ///
            /// # Panics
            ///
            /// On a loop's thread or inside a runtime's `block_on`.
            #[track_caller]
            pub fn blocking_recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
                $crate::blocking::block_on(self.recv_many(buffer, limit))
            }

            /// Closes the channel to further sends while keeping what is buffered
            /// receivable. On a bounded channel, senders waiting for room fail;
            /// permits already reserved may still be used.
            pub fn close(&mut self) {
                self.chan.close();
            }

            /// True once [`close`](Self::close) was called or every sender is gone.
            pub fn is_closed(&self) -> bool {
                self.chan.is_closed()
            }

            /// True if no message is buffered.
            pub fn is_empty(&self) -> bool {
                self.chan.is_empty()
            }

            /// How many messages are buffered.
            pub fn len(&self) -> usize {
                self.chan.len()
            }

            /// Polls for the next message: the building block of [`recv`](Self::recv),
            /// for hand-written futures and streams.
            pub fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<T>> {
                self.chan.recv(cx)
            }

            /// Polls for up to `limit` messages into `buffer`: the building block of
            /// [`recv_many`](Self::recv_many).
            pub fn poll_recv_many(
                &mut self,
                cx: &mut std::task::Context<'_>,
                buffer: &mut Vec<T>,
                limit: usize,
            ) -> std::task::Poll<usize> {
                self.chan.recv_many(cx, buffer, limit)
            }

            /// How many strong senders (including owned permits) are alive.
            pub fn sender_strong_count(&self) -> usize {
                self.chan.sender_strong_count()
            }

            /// How many weak senders are alive.
            pub fn sender_weak_count(&self) -> usize {
                self.chan.sender_weak_count()
            }
        }

        impl<T> std::fmt::Debug for $rx<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($rx)).field("chan", &self.chan).finish()
            }
        }
    };
}

pub(super) use receiver_methods;
