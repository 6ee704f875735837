//! Asynchronous file-system access, as in `tokio::fs`.
//!
//! Operating systems offer no readiness-based file I/O that an event loop could poll,
//! so, as tokio does, every operation here runs the standard library's blocking call on
//! the runtime's blocking pool and awaits its result: the loops never block on a disk.
//! A [`File`] keeps one operation in flight and buffers between the task and the pool
//! (up to [`File::max_buf_size`] bytes), so a `write` returns once its bytes are copied
//! and the write itself runs in the background; `flush` waits for it.
//!
//! Each call costs a hand-off to a pool thread and back. For many small operations,
//! batch them into one [`spawn_blocking`](netloop_scheduler::task::spawn_blocking)
//! closure using `std::fs` directly.
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! # let rt = netloop_scheduler::runtime::Runtime::new()?;
//! # rt.block_on(async {
//! use netloop_net::fs;
//!
//! fs::write("greeting.txt", b"hello").await?;
//! assert_eq!(fs::read_to_string("greeting.txt").await?, "hello");
//! fs::remove_file("greeting.txt").await?;
//! # std::io::Result::Ok(())
//! # })
//! # }
//! ```

mod dir_builder;
mod file;
mod open_options;
mod ops;
mod read_dir;

pub use dir_builder::DirBuilder;
pub use file::File;
pub use open_options::OpenOptions;
pub use ops::{
    canonicalize, copy, create_dir, create_dir_all, hard_link, metadata, read, read_link, read_to_string, remove_dir,
    remove_dir_all, remove_file, rename, set_permissions, symlink, symlink_metadata, try_exists, write,
};
pub use read_dir::{DirEntry, ReadDir, read_dir};
pub use std::fs::FileTimes;

use std::io;
use std::path::{Path, PathBuf};

use netloop_scheduler::task::JoinError;

/// Runs `f` on the blocking pool and returns its result.
///
/// # Errors
///
/// `f`'s error; or, when the pool could not run it (the runtime has shut down) or it
/// panicked, an error of kind `Other` wrapping "background task failed", as tokio's.
async fn asyncify<F, T>(f: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    match netloop_scheduler::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(_) => Err(background_task_failed()),
    }
}

/// Runs `op` on the blocking pool with an owned copy of `path`.
async fn on_path<T: Send + 'static>(
    path: impl AsRef<Path>,
    op: impl FnOnce(PathBuf) -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let path = path.as_ref().to_owned();
    asyncify(move || op(path)).await
}

/// [`on_path`] for an operation on two paths.
async fn on_paths<T: Send + 'static>(
    from: impl AsRef<Path>,
    to: impl AsRef<Path>,
    op: impl FnOnce(PathBuf, PathBuf) -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let (from, to) = (from.as_ref().to_owned(), to.as_ref().to_owned());
    asyncify(move || op(from, to)).await
}

fn background_task_failed() -> io::Error {
    io::Error::other("background task failed")
}

/// tokio's conversion of a blocking operation's `JoinError` into an I/O error.
fn join_error(e: JoinError) -> io::Error {
    io::Error::other(if e.is_cancelled() {
        "task was cancelled"
    } else {
        "task panicked"
    })
}
