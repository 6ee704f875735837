//! [`read_dir`], [`ReadDir`] and [`DirEntry`]: a directory listing fetched from the
//! blocking pool in batches.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::{FileType, Metadata};
use std::future::Future;
use std::io;
use std::os::unix::fs::DirEntryExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use netloop_scheduler::task::JoinHandle;

use super::{asyncify, background_task_failed, on_path};

/// Entries fetched per trip to the blocking pool.
const BATCH: usize = 32;

/// Lists the directory `path`: the entries come from a [`ReadDir`].
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let dir = std::env::temp_dir().join(format!("netloop-doc-fs-read-dir-fn-{}", std::process::id()));
/// fs::create_dir_all(dir.join("sub")).await?;
/// let mut entries = fs::read_dir(&dir).await?;
/// let first = entries.next_entry().await?.expect("one entry");
/// assert_eq!(first.file_name(), "sub");
/// assert!(entries.next_entry().await?.is_none());
/// fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<ReadDir> {
    let (entries, std, more) = on_path(path, |path| {
        let mut std = std::fs::read_dir(path)?;
        let mut entries = VecDeque::with_capacity(BATCH);
        let more = fetch(&mut std, &mut entries);
        Ok((entries, std, more))
    })
    .await?;
    Ok(ReadDir(State::Idle(Some(Batch { entries, std, more }))))
}

/// Moves up to [`BATCH`] entries from `std` to `entries`; false once `std` is done.
fn fetch(std: &mut std::fs::ReadDir, entries: &mut VecDeque<io::Result<DirEntry>>) -> bool {
    for _ in 0..BATCH {
        let Some(next) = std.next() else { return false };
        entries.push_back(next.map(|std| DirEntry {
            file_type: std.file_type().ok(),
            std: Arc::new(std),
        }));
    }
    true
}

/// What one trip to the pool brought, and the listing to take more from.
struct Batch {
    entries: VecDeque<io::Result<DirEntry>>,
    std: std::fs::ReadDir,
    /// The listing may have more entries.
    more: bool,
}

enum State {
    /// `None` only while a poll moves the batch out.
    Idle(Option<Batch>),
    Fetching(JoinHandle<Batch>),
}

/// The entries of a directory, in the OS's order (tokio's `ReadDir`).
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let dir = std::env::temp_dir().join(format!("netloop-doc-read-dir-{}", std::process::id()));
/// fs::create_dir_all(&dir).await?;
/// fs::write(dir.join("a.txt"), "a").await?;
/// fs::write(dir.join("b.txt"), "b").await?;
///
/// let mut names = Vec::new();
/// let mut entries = fs::read_dir(&dir).await?;
/// while let Some(entry) = entries.next_entry().await? {
///     names.push(entry.file_name());
/// }
/// names.sort(); // the OS's order is no particular order
/// assert_eq!(names, ["a.txt", "b.txt"]);
/// fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub struct ReadDir(State);

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::Idle(_) => "Idle",
            State::Fetching(_) => "Fetching",
        })
    }
}

impl ReadDir {
    /// The next entry, or `None` at the end. Cancel safe.
    pub async fn next_entry(&mut self) -> io::Result<Option<DirEntry>> {
        std::future::poll_fn(|cx| self.poll_next_entry(cx)).await
    }

    /// Polls for the next entry; `cx`'s waker is woken when a batch arrives.
    pub fn poll_next_entry(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<DirEntry>>> {
        loop {
            match &mut self.0 {
                State::Idle(slot) => {
                    let Some(batch) = slot.as_mut() else {
                        // A batch was lost to a failed fetch: the listing is over.
                        return Poll::Ready(Ok(None));
                    };
                    if let Some(entry) = batch.entries.pop_front() {
                        return Poll::Ready(entry.map(Some));
                    }
                    if !batch.more {
                        return Poll::Ready(Ok(None));
                    }
                    let mut batch = slot.take().expect("checked above");
                    self.0 = State::Fetching(netloop_scheduler::task::spawn_blocking(move || {
                        batch.more = fetch(&mut batch.std, &mut batch.entries);
                        batch
                    }));
                }
                State::Fetching(handle) => {
                    let fetched = ready!(Pin::new(handle).poll(cx));
                    match fetched {
                        Ok(batch) => self.0 = State::Idle(Some(batch)),
                        Err(_) => {
                            self.0 = State::Idle(None);
                            return Poll::Ready(Err(background_task_failed()));
                        }
                    }
                }
            }
        }
    }
}

/// One entry of a [`ReadDir`] (tokio's `DirEntry`).
///
/// Its file type usually comes with the listing, so telling files from directories
/// costs no extra trip to the blocking pool:
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let dir = std::env::temp_dir().join(format!("netloop-doc-dir-entry-{}", std::process::id()));
/// fs::create_dir_all(dir.join("sub")).await?;
/// fs::write(dir.join("file.txt"), "12345").await?;
///
/// let mut entries = fs::read_dir(&dir).await?;
/// while let Some(entry) = entries.next_entry().await? {
///     if entry.file_type().await?.is_dir() {
///         assert_eq!(entry.file_name(), "sub");
///     } else {
///         assert_eq!(entry.metadata().await?.len(), 5);
///     }
/// }
/// fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct DirEntry {
    std: Arc<std::fs::DirEntry>,
    /// Read while listing, when the OS gave it for free (`d_type`).
    file_type: Option<FileType>,
}

impl DirEntry {
    /// The entry's full path: the listed directory joined with [`file_name`](Self::file_name).
    pub fn path(&self) -> PathBuf {
        self.std.path()
    }

    /// The entry's name, without its directory.
    pub fn file_name(&self) -> OsString {
        self.std.file_name()
    }

    /// The entry's inode number.
    pub fn ino(&self) -> u64 {
        self.std.ino()
    }

    /// The entry's metadata, not following a symbolic link.
    pub async fn metadata(&self) -> io::Result<Metadata> {
        let std = self.std.clone();
        asyncify(move || std.metadata()).await
    }

    /// The entry's type, not following a symbolic link; usually known without a trip
    /// to the pool.
    pub async fn file_type(&self) -> io::Result<FileType> {
        if let Some(file_type) = self.file_type {
            return Ok(file_type);
        }
        let std = self.std.clone();
        asyncify(move || std.file_type()).await
    }
}
