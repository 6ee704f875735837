//! Without `tokio-compat`: a panic that says tokio's runtime is missing gets a note that
//! names the feature.
//!
//! A library that calls tokio's runtime from inside (`tokio::time::sleep` under
//! tower-http's `TimeoutLayer`, `tokio::net` under reqwest) panics on netloop's threads
//! with tokio's words, deep inside that library. netloop cannot see the call coming, but
//! it sees the panic: every task's panic passes the loop's task-panic hook, and
//! `block_on` sees its future's. The first such panic in the process prints the note
//! (on stderr, where the panic itself went, and through `tracing`).

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// What tokio's panics say when no tokio runtime is current.
const TOKIO_RUNTIME_MISSING: [&str; 2] = [
    "must be called from the context of a Tokio 1.x runtime",
    "there is no reactor running",
];

/// The note.
pub(crate) const NOTE: &str = "netloop: this panic comes from a library that needs tokio's runtime \
    (`tokio::time`, `tokio::net`, `tokio::spawn`, or a crate built on them, such as tower-http's \
    `TimeoutLayer`, tokio-util's `DelayQueue` or reqwest). netloop runs such crates with its \
    `tokio-compat` feature: netloop = { version = \"*\", features = [\"tokio-compat\"] } \
    (see docs/ecosystem.md).";

/// True if `payload` is one of tokio's "no runtime" panics.
pub(crate) fn is_tokio_runtime_missing(payload: &(dyn Any + Send)) -> bool {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
    message.is_some_and(|m| TOKIO_RUNTIME_MISSING.iter().any(|needle| m.contains(needle)))
}

/// Prints the note the first time a panic says tokio's runtime is missing.
pub(crate) fn observe(payload: &(dyn Any + Send)) {
    static NOTED: AtomicBool = AtomicBool::new(false);
    if is_tokio_runtime_missing(payload) && !NOTED.swap(true, Relaxed) {
        eprintln!("{NOTE}");
        tracing::error!(target: "netloop::runtime", "{NOTE}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_tokios_messages_and_nothing_else() {
        let tokio = "there is no reactor running, must be called from the context of a Tokio 1.x runtime";
        assert!(is_tokio_runtime_missing(&tokio));
        assert!(is_tokio_runtime_missing(&tokio.to_string()));
        assert!(!is_tokio_runtime_missing(&"boom"));
        assert!(!is_tokio_runtime_missing(&42_u32));
        assert!(NOTE.contains("`tokio-compat` feature"));
    }
}
