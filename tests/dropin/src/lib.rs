//! # netloop-dropin: one source, two runtimes
//!
//! Each program in `src/bin` is written as tokio code with the crate name replaced by
//! `rt`:
//!
//! ```
//! use netloop_dropin::rt;
//!
//! #[rt::main]
//! async fn main() {
//!     let answer = rt::spawn(async { 6 * 7 }).await.unwrap();
//!     assert_eq!(answer, 42);
//! }
//! ```
//!
//! `rt` is netloop with the default feature `rt-netloop`, and tokio with
//! `--no-default-features --features rt-tokio`. `run.sh` builds and runs every program
//! under both.

#[cfg(all(feature = "rt-netloop", feature = "rt-tokio"))]
compile_error!(
    "features `rt-netloop` and `rt-tokio` are mutually exclusive: use `--no-default-features --features rt-tokio` for tokio"
);

#[cfg(not(any(feature = "rt-netloop", feature = "rt-tokio")))]
compile_error!("enable one runtime: feature `rt-netloop` (the default) or `rt-tokio`");

/// The runtime under test: netloop.
#[cfg(feature = "rt-netloop")]
pub extern crate netloop as rt;

/// The runtime under test: tokio.
#[cfg(all(feature = "rt-tokio", not(feature = "rt-netloop")))]
pub extern crate tokio as rt;

/// The name of the runtime the programs were built for, for their output.
pub const RUNTIME: &str = if cfg!(feature = "rt-netloop") {
    "netloop"
} else {
    "tokio"
};
