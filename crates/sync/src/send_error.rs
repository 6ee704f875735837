//! The `SendError<T>` that mpsc and watch each define (two distinct public types, as
//! in tokio) with the same impls: the value comes back in field `0`, `Debug` shows
//! `SendError { .. }` without requiring `T: Debug`, `Display` says "channel closed".

/// Defines `pub struct SendError<T>(pub T)` with its impls; the attributes given
/// (its docs) go on the struct.
macro_rules! closed_send_error {
    ($(#[$doc:meta])*) => {
        $(#[$doc])*
        #[derive(PartialEq, Eq, Clone, Copy)]
        pub struct SendError<T>(pub T);

        impl<T> std::fmt::Debug for SendError<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct("SendError").finish_non_exhaustive()
            }
        }

        impl<T> std::fmt::Display for SendError<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("channel closed")
            }
        }

        impl<T> std::error::Error for SendError<T> {}
    };
}

pub(crate) use closed_send_error;
