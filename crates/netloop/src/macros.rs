//! `select!`, `join!`, `try_join!` and `pin!`, with tokio's syntax and semantics.

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
