//! Which loop a new socket is registered with.

use std::io;

use netloop_reactor::io::PollEvented;

pub(crate) use netloop_scheduler::placement::registration_loop;

/// Registers `source` now, with the loop driving this thread, else the runtime's next.
pub(crate) fn register<S: mio::event::Source>(source: S, interest: mio::Interest) -> io::Result<PollEvented<S>> {
    registration_loop()?.register(source, interest)
}
