//! Which of tokio's drivers a runtime was built with.
//!
//! netloop's loops always poll for I/O and keep timers, so nothing depends on these
//! flags to work. They exist for tokio's behaviour: a runtime built without
//! `enable_io` or `enable_time` panics where a socket, signal or timer is created, so
//! a program that forgot to enable one fails on netloop where it fails on tokio.

use crate::context;

/// tokio's panic for a socket or signal on a runtime built without `enable_io`.
const IO_DISABLED: &str =
    "A Tokio 1.x context was found, but IO is disabled. Call `enable_io` on the runtime builder to enable IO.";

/// tokio's panic for a timer on a runtime built without `enable_time`.
const TIME_DISABLED: &str = "A Tokio 1.x context was found, but timers are disabled. Call `enable_time` on the runtime builder to enable timers.";

/// Panics, as tokio does, if the current runtime was built without `enable_io`.
///
/// netloop's loops always poll for I/O, so nothing would break; the panic keeps a
/// program that forgot `enable_io` failing here as it fails on tokio. Outside any
/// runtime, or on a bare event loop, it does nothing.
#[track_caller]
pub fn require_io() {
    if context::with_current(|rt| rt.map(|rt| rt.io_enabled)) == Some(false) {
        panic!("{IO_DISABLED}");
    }
}

/// Panics, as tokio does, if the current runtime was built without `enable_time`
/// (see [`require_io`]).
#[track_caller]
pub fn require_time() {
    if context::with_current(|rt| rt.map(|rt| rt.time_enabled)) == Some(false) {
        panic!("{TIME_DISABLED}");
    }
}
