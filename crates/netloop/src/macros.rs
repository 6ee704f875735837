//! `select!`, `join!`, `try_join!` and `pin!`, with tokio's syntax and semantics, and
//! bringing into the caller's scope what tokio's bring (`docs/compatibility.md`):
//! `select!` brings `Pin`, `BRANCHES` and `__tokio_select_util` into its branches; the
//! others bring nothing but `pin!`'s pinned variables.

/// Waits on several futures at once and runs the handler of the first to complete
/// (tokio's `select!`).
///
/// ```
/// # #[netloop::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// let (tx, rx) = std::sync::mpsc::channel::<()>();
/// let winner = netloop::select! {
///     _ = netloop::time::sleep(Duration::from_millis(5)) => "timer",
///     _ = std::future::pending::<()>() => "never",
/// };
/// assert_eq!(winner, "timer");
/// # drop((tx, rx));
/// # }
/// ```
///
/// Each branch is `<pattern> = <future>, if <precondition> => <handler>`; the
/// precondition is optional. All preconditions are evaluated first: a branch whose
/// precondition is false is disabled. The remaining futures are polled — in a random
/// order, or in the written order after `biased;` — and when one completes its output is
/// matched against the pattern: on a match every future is dropped and the handler runs;
/// otherwise that branch is disabled and the others keep going. When every branch is
/// disabled the `else => <expression>` branch runs, or, without one, `select!` panics.
#[macro_export]
macro_rules! select {
    ($($input:tt)*) => {
        $crate::__private::select_internal!($crate; $($input)*)
    };
}

/// Runs futures concurrently and returns all their outputs as a tuple (tokio's `join!`).
///
/// ```
/// # #[netloop::main(flavor = "current_thread")]
/// # async fn main() {
/// let (a, b) = netloop::join!(async { 1 }, async { "two" });
/// assert_eq!((a, b), (1, "two"));
/// # }
/// ```
#[macro_export]
macro_rules! join {
    ($($input:tt)*) => {
        $crate::__private::join_internal!($crate; $($input)*)
    };
}

/// Runs futures returning `Result` concurrently; returns `Ok` of all outputs, or the
/// first `Err` as soon as it happens, dropping the rest (tokio's `try_join!`).
///
/// ```
/// # #[netloop::main(flavor = "current_thread")]
/// # async fn main() {
/// let r: Result<(i32, i32), &str> = netloop::try_join!(async { Ok(1) }, async { Err("no") });
/// assert_eq!(r, Err("no"));
/// # }
/// ```
#[macro_export]
macro_rules! try_join {
    ($($input:tt)*) => {
        $crate::__private::try_join_internal!($crate; $($input)*)
    };
}

/// Pins values on the stack, shadowing each variable with a `Pin<&mut T>` (tokio's
/// `pin!`): `pin!(a, b);` or `pin! { let a = expr; }`.
///
/// ```
/// # #[netloop::main(flavor = "current_thread")]
/// # async fn main() {
/// let fut = async { 7 };
/// netloop::pin!(fut);
/// assert_eq!((&mut fut).await, 7);
/// # }
/// ```
#[macro_export]
macro_rules! pin {
    ($($x:ident),* $(,)?) => { $(
        #[allow(unused_mut)]
        let mut $x = ::core::pin::pin!($x);
    )* };
    ($(let $x:ident = $init:expr;)*) => { $(
        let $x = $init;
        $crate::pin!($x);
    )* };
}

/// What tokio's macro expansions name, under tokio's path `tokio::macros::support`
/// (public and hidden, as tokio's): std's items, and netloop's own for the rest. Code
/// names it (`use tokio::macros::support::{Pin, Poll};`), and `select!` brings its
/// `Pin` into the caller's scope.
pub mod support {
    pub use std::future::{Future, IntoFuture, poll_fn};
    pub use std::pin::Pin;
    pub use std::result::Result;
    pub use std::task::{Context, Poll, ready};

    pub use crate::__private::{poll_budget_available, thread_rng_n};

    use crate::__private::MaybeDone;

    /// The future wrapped to keep its output until taken (tokio's `join!` holds each
    /// of its futures so).
    pub fn maybe_done<F: IntoFuture>(future: F) -> MaybeDone<F::IntoFuture> {
        MaybeDone::new(future.into_future())
    }

    /// Picks, for a `join!` of `COUNT` futures, which to poll first on each poll: a
    /// rotating start ([`SelectNormal`]) or always the first ([`SelectBiased`]).
    pub trait RotatorSelect {
        /// What tells the poll how many futures to skip at its start.
        type Rotator<const COUNT: u32>: Default;
    }

    /// A `join!` that starts each poll one future further (tokio's default).
    #[derive(Debug)]
    pub struct SelectNormal;

    /// A `biased;` `join!`: each poll starts at the first future.
    #[derive(Debug)]
    pub struct SelectBiased;

    impl RotatorSelect for SelectNormal {
        type Rotator<const COUNT: u32> = Rotator<COUNT>;
    }

    impl RotatorSelect for SelectBiased {
        type Rotator<const COUNT: u32> = BiasedRotator;
    }

    /// The start of each poll of `COUNT` futures: 0, 1, ..., `COUNT - 1`, 0, ...
    #[derive(Debug, Default)]
    pub struct Rotator<const COUNT: u32> {
        next: u32,
    }

    impl<const COUNT: u32> Rotator<COUNT> {
        /// How many futures this poll skips at its start; the next poll skips one more
        /// (none after the last).
        #[inline]
        pub fn num_skip(&mut self) -> u32 {
            let skip = self.next;
            self.next = if skip + 1 >= COUNT { 0 } else { skip + 1 };
            skip
        }
    }

    /// The start of each poll of a `biased;` `join!`: always the first future.
    #[derive(Debug, Default)]
    pub struct BiasedRotator {}

    impl BiasedRotator {
        /// None: every poll starts at the first future.
        #[inline]
        pub fn num_skip(&mut self) -> u32 {
            0
        }
    }
}
