//! `JoinError`: why a task gave no output.

use std::any::Any;
use std::fmt;
use std::sync::Mutex;

use super::id::Id;
use crate::sync::{lock, unpoison};

enum Repr {
    Cancelled,
    /// In a mutex only so that `JoinError` is `Sync` (as tokio's is): the payload is
    /// only ever reached through `&mut self` or by value.
    Panic(Mutex<Box<dyn Any + Send + 'static>>),
}

/// A task failed to complete: it was cancelled (aborted, or its runtime shut down) or
/// it panicked.
///
/// A panic in a task does not bring down the program: it ends the task, and whoever
/// awaits the task gets the panic as an error:
///
/// ```
/// use std::time::Duration;
/// use netloop_scheduler::{runtime::Builder, task, time};
///
/// let rt = Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     let err = task::spawn(async { panic!("boom") }).await.unwrap_err();
///     assert!(err.is_panic());
///     assert_eq!(*err.into_panic().downcast::<&str>().unwrap(), "boom");
///
///     let sleeper = task::spawn(time::sleep(Duration::from_secs(60)));
///     sleeper.abort();
///     assert!(sleeper.await.unwrap_err().is_cancelled());
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct JoinError {
    repr: Repr,
    id: Id,
}

impl JoinError {
    pub(crate) fn cancelled(id: Id) -> JoinError {
        JoinError {
            repr: Repr::Cancelled,
            id,
        }
    }

    pub(crate) fn panic(id: Id, payload: Box<dyn Any + Send + 'static>) -> JoinError {
        JoinError {
            repr: Repr::Panic(Mutex::new(payload)),
            id,
        }
    }

    /// True if the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// True if the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// The panic payload. Panics if the task did not panic; see
    /// [`try_into_panic`](Self::try_into_panic).
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic().expect("`JoinError` reason is not a panic.")
    }

    /// The panic payload, or the error back if the task was cancelled.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panic(p) => Ok(unpoison(p.into_inner())),
            Repr::Cancelled => Err(self),
        }
    }

    /// The id of the task that failed.
    pub fn id(&self) -> Id {
        self.id
    }
}

/// The message of a `&str` or `String` panic payload. Takes the mutex itself, not
/// `&dyn Any`: a `&Mutex<..>` would coerce to `&dyn Any` and never downcast.
fn panic_message(p: &Mutex<Box<dyn Any + Send>>) -> Option<String> {
    let p = lock(p);
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "task {} was cancelled", self.id),
            Repr::Panic(p) => match panic_message(p) {
                Some(msg) => write!(f, "task {} panicked with message {msg:?}", self.id),
                None => write!(f, "task {} panicked", self.id),
            },
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "JoinError::Cancelled({:?})", self.id),
            Repr::Panic(p) => match panic_message(p) {
                Some(msg) => write!(f, "JoinError::Panic({:?}, {msg:?}, ...)", self.id),
                None => write!(f, "JoinError::Panic({:?}, ...)", self.id),
            },
        }
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for std::io::Error {
    fn from(e: JoinError) -> Self {
        std::io::Error::other(e.to_string())
    }
}
