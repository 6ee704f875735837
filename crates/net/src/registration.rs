//! Which loop a new socket is registered with.

use std::io;

use netloop_reactor::EventLoopHandle;
use netloop_reactor::io::PollEvented;

/// The loop driving this thread, else the runtime's next loop.
pub(crate) fn current_loop() -> io::Result<EventLoopHandle> {
    if let Some(current) = EventLoopHandle::current() {
        return Ok(current);
    }
    match netloop_scheduler::runtime::Handle::try_current() {
        Ok(h) => Ok(h.event_loops().next().clone()),
        Err(e) => Err(io::Error::other(e.to_string())),
    }
}

pub(crate) fn register<S: mio::event::Source>(source: S, interest: mio::Interest) -> io::Result<PollEvented<S>> {
    current_loop()?.register(source, interest)
}
