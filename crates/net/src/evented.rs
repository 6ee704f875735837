//! What every socket type over a registration has alike, written once for
//! `TcpListener`, `TcpStream`, `UdpSocket`, `UnixListener`, `UnixStream` and
//! `UnixDatagram`.
//!
//! They are macros, not a generic type or a trait, for the reason `byte_stream` gives:
//! each socket is a distinct public type with tokio's inherent methods. A type using
//! them holds its socket in a field `io: PollEvented<S>`.

/// The readiness waits and the custom operations (`try_io`, `async_io`) of a socket.
/// Expands inside `impl $Socket { .. }`.
macro_rules! readiness_methods {
    () => {
        readiness_methods!(@common);

        /// Waits until the socket is readable (may be spurious: a `try_` read may still
        /// say `WouldBlock`).
        pub async fn readable(&self) -> std::io::Result<()> {
            $crate::registration::ready_for(&self.io, netloop_reactor::io::Direction::Read).await
        }

        /// Waits until the socket is writable (may be spurious).
        pub async fn writable(&self) -> std::io::Result<()> {
            $crate::registration::ready_for(&self.io, netloop_reactor::io::Direction::Write).await
        }
    };
    // A byte stream's (`self.io` is a `StreamIo`): `readable` and `writable` follow the
    // stream's driver; `ready`, `try_io` and `async_io` need readiness itself (a stream
    // on io_uring leaves the ring for them).
    (stream) => {
        readiness_methods!(@common);

        /// Waits until the socket is readable (may be spurious: a `try_` read may still
        /// say `WouldBlock`). Several tasks may wait at once; each is woken.
        pub async fn readable(&self) -> std::io::Result<()> {
            std::future::poll_fn(|cx| self.io.poll_ready_shared(cx, netloop_reactor::io::Direction::Read)).await
        }

        /// Waits until the socket is writable (may be spurious). Several tasks may wait
        /// at once; each is woken.
        pub async fn writable(&self) -> std::io::Result<()> {
            std::future::poll_fn(|cx| self.io.poll_ready_shared(cx, netloop_reactor::io::Direction::Write)).await
        }
    };
    (@common) => {
        /// Waits for any of `interest` and returns everything of it that is ready.
        /// Several tasks may wait at once; each is woken by the next event.
        pub async fn ready(&self, interest: $crate::io::Interest) -> std::io::Result<$crate::io::Ready> {
            $crate::registration::ready(self.io.evented(), interest).await
        }

        /// Runs `f` once if the socket was last seen ready for `interest`; `WouldBlock`
        /// otherwise, or if `f` returns it (which clears the readiness).
        pub fn try_io<R>(
            &self,
            interest: $crate::io::Interest,
            f: impl FnOnce() -> std::io::Result<R>,
        ) -> std::io::Result<R> {
            self.io.evented().try_io(interest.direction(), |_| f())
        }

        /// Runs `f` whenever `interest` is ready, until it does not fail with
        /// `WouldBlock` (which clears the readiness and waits again): tokio's way to
        /// run a custom operation (a `recvmsg`, a `sendfile`) on the socket.
        pub async fn async_io<R>(
            &self,
            interest: $crate::io::Interest,
            mut f: impl FnMut() -> std::io::Result<R>,
        ) -> std::io::Result<R> {
            $crate::registration::io_shared(self.io.evented(), interest.direction(), |_| f()).await
        }
    };
}

/// Registering a `$Mio` socket as a `$Socket` (`new`, with `$interest`), the
/// conversions from and to the standard library's `$Std` (`from_std`, `into_std`,
/// `TryFrom`), and the traits that show the socket (`Debug`, `AsRawFd`, `AsFd`).
/// `placed by $placed`: `from_std` hands the registered socket to `$placed` (a byte
/// stream's `connected`, which puts it on its loop's ring where that runs io_uring).
macro_rules! evented_socket {
    ($Socket:ident, $Std:ty, $Mio:ty, $interest:expr $(, placed by $placed:ident)?) => {
        impl $Socket {
            /// Registers `socket` with this thread's loop, else the runtime's next.
            #[track_caller]
            pub(crate) fn new(socket: $Mio) -> std::io::Result<$Socket> {
                Ok($Socket {
                    // A stream's `StreamIo` from the registration, or the registration.
                    io: $crate::registration::register(socket, $interest)?.into(),
                })
            }

            /// Wraps a standard-library socket, setting it non-blocking, registered with
            /// this thread's loop (or the runtime's next).
            $(
            #[doc = concat!(
                "\n\nnetloop: on a loop that runs on io_uring the socket is placed as a ",
                stringify!($placed),
                " one is: on the ring at its first use on such a loop's thread \
                 (see `docs/io-uring.md`)."
            )]
            )?
            ///
            /// # Panics
            ///
            /// Outside a runtime (as tokio's does): call it inside `block_on`, a task, or
            /// after `Runtime::enter`.
            #[track_caller]
            pub fn from_std(socket: $Std) -> std::io::Result<$Socket> {
                socket.set_nonblocking(true)?;
                let socket = $Socket::new(<$Mio>::from_std(socket))?;
                $(let socket = socket.$placed()?;)?
                Ok(socket)
            }

            /// Deregisters the socket and returns it as the standard library's (still
            /// non-blocking).
            pub fn into_std(self) -> std::io::Result<$Std> {
                Ok(<$Std>::from(std::os::fd::OwnedFd::from(self.io.into_inner()?)))
            }
        }

        impl TryFrom<$Std> for $Socket {
            type Error = std::io::Error;

            /// [`from_std`](Self::from_std): the socket is set non-blocking and
            /// registered; panics outside a runtime, as it does.
            #[track_caller]
            fn try_from(socket: $Std) -> std::io::Result<$Socket> {
                $Socket::from_std(socket)
            }
        }

        impl std::fmt::Debug for $Socket {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.io.get_ref().fmt(f)
            }
        }

        impl std::os::fd::AsRawFd for $Socket {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(self.io.get_ref())
            }
        }

        impl std::os::fd::AsFd for $Socket {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(self.io.get_ref())
            }
        }
    };
}

/// Inherent methods that forward to the socket of the same name, each written as its
/// signature and doc: to `self.io.get_ref()`, or after `via socket2:` to its
/// `socket2::SockRef`, for the options mio does not expose.
macro_rules! forward_to_socket {
    (via socket2: $($(#[$doc:meta])* pub fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&self $(, $arg: $ty)*) -> $ret {
                socket2::SockRef::from(self.io.get_ref()).$name($($arg),*)
            }
        )*
    };
    ($($(#[$doc:meta])* pub fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&self $(, $arg: $ty)*) -> $ret {
                self.io.get_ref().$name($($arg),*)
            }
        )*
    };
}
