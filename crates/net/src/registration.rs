//! Which loop a new socket is registered with.

use std::io;

use netloop_reactor::io::PollEvented;

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
