//! [`OpenOptions`]: `std::fs::OpenOptions`, opening on the blocking pool; and the
//! constructors of [`File`] that open a path, which go through it. Above `file`: an
//! open file never names the options it was opened with.

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::file::File;
use super::on_path;

/// How to open a file: for reading, writing, appending, creating... (tokio's
/// `OpenOptions`, wrapping the standard library's).
///
/// A log that each run appends to, created by the first:
///
/// ```
/// use netloop_net::fs::{self, OpenOptions};
/// use netloop_net::io::AsyncWriteExt;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let path = std::env::temp_dir().join(format!("netloop-doc-log-{}.txt", std::process::id()));
/// # let _ = fs::remove_file(&path).await;
/// for run in 1..=2 {
///     let mut log = OpenOptions::new().append(true).create(true).open(&path).await?;
///     log.write_all(format!("run {run}\n").as_bytes()).await?;
///     log.flush().await?;
/// }
/// assert_eq!(fs::read_to_string(&path).await?, "run 1\nrun 2\n");
/// fs::remove_file(&path).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions(std::fs::OpenOptions);

impl OpenOptions {
    /// Options with everything off: set at least `read`, `write` or `append`.
    pub fn new() -> OpenOptions {
        OpenOptions(std::fs::OpenOptions::new())
    }

    /// Open for reading.
    pub fn read(&mut self, read: bool) -> &mut OpenOptions {
        self.0.read(read);
        self
    }

    /// Open for writing (from the start, overwriting, unless `append`).
    pub fn write(&mut self, write: bool) -> &mut OpenOptions {
        self.0.write(write);
        self
    }

    /// Open for writing at the end, whatever the position.
    pub fn append(&mut self, append: bool) -> &mut OpenOptions {
        self.0.append(append);
        self
    }

    /// Truncate an existing file to length 0 (needs `write`).
    pub fn truncate(&mut self, truncate: bool) -> &mut OpenOptions {
        self.0.truncate(truncate);
        self
    }

    /// Create the file if it does not exist (needs `write` or `append`).
    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.0.create(create);
        self
    }

    /// Create the file, failing if it exists (atomically; needs `write` or `append`).
    pub fn create_new(&mut self, create_new: bool) -> &mut OpenOptions {
        self.0.create_new(create_new);
        self
    }

    /// The permission bits of a created file (before the umask).
    pub fn mode(&mut self, mode: u32) -> &mut OpenOptions {
        self.0.mode(mode);
        self
    }

    /// Extra `open(2)` flags (`libc::O_*`), or-ed with those the options imply.
    pub fn custom_flags(&mut self, flags: i32) -> &mut OpenOptions {
        self.0.custom_flags(flags);
        self
    }

    /// Opens `path` with these options.
    ///
    /// # Errors
    ///
    /// The OS's: the file is missing (without `create`), exists (with `create_new`),
    /// permission is denied, the options are contradictory (`InvalidInput`)...
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let options = self.0.clone();
        let std = on_path(path, move |path| options.open(path)).await?;
        Ok(File::from_std(std))
    }

    /// The standard library's options, to configure what this type does not expose.
    pub fn as_inner_mut(&mut self) -> &mut std::fs::OpenOptions {
        &mut self.0
    }
}

impl From<std::fs::OpenOptions> for OpenOptions {
    fn from(options: std::fs::OpenOptions) -> OpenOptions {
        OpenOptions(options)
    }
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions::new()
    }
}

impl File {
    /// Opens `path` for reading.
    ///
    /// # Errors
    ///
    /// The OS's: a missing file, a permission error...
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Opens `path` for writing, creating it or truncating it.
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Creates `path` for reading and writing, failing if it exists.
    pub async fn create_new<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .await
    }

    /// Options to open a file with ([`OpenOptions::new`]).
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }
}
