//! Faults (design §7): a panic in a task, a closure or a hook is logged and the loop
//! goes on.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `f`, logging and swallowing a panic (design §7: the loop goes on).
/// Returns false if it panicked.
pub(crate) fn run_caught(what: &'static str, f: impl FnOnce()) -> bool {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(()) => true,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("<non-string panic payload>");
            tracing::warn!(target: "netloop::reactor", kind = what, panic = msg, "a task panicked; the event loop goes on");
            false
        }
    }
}
