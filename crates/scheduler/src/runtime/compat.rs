//! `tokio-compat`: a tokio runtime beside netloop's loops.
//!
//! Crates such as tower-http (its timeout layer), tokio-util's `DelayQueue` and reqwest
//! call tokio's runtime from inside (`tokio::time::sleep`, `tokio::net`, `tokio::spawn`)
//! and panic without one. With this feature each netloop runtime builds a small tokio
//! runtime (one worker) and every thread of the netloop runtime (its loops, its blocking
//! pool, a `block_on` caller, a holder of `enter`'s guard) enters tokio's context as
//! well as netloop's. What such a crate creates lives on tokio's worker: its timers and
//! sockets are driven there, and their wakes cross to the netloop loop of the task that
//! waits on them. netloop's own sockets, timers and tasks are unaffected.

use std::io;

/// The tokio runtime of one netloop runtime.
pub(crate) struct Compat {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl Compat {
    pub(crate) fn new(group: usize) -> io::Result<Compat> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("netloop-{group}-tokio"))
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Compat {
            runtime: Some(runtime),
            handle,
        })
    }

    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

impl Drop for Compat {
    fn drop(&mut self) {
        // Without waiting: the last handle may go on a netloop thread inside a task,
        // where tokio refuses to block.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
