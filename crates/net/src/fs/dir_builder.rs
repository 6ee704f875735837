//! [`DirBuilder`]: `std::fs::DirBuilder` on the blocking pool.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use super::on_path;

/// Creates directories with options: recursive creation, permissions (tokio's
/// `DirBuilder`).
///
/// ```
/// use std::os::unix::fs::PermissionsExt;
/// use netloop_net::fs::{self, DirBuilder};
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let root = std::env::temp_dir().join(format!("netloop-doc-dirs-{}", std::process::id()));
/// let nested = root.join("a/b/c");
/// // Private to this user, parents and all.
/// DirBuilder::new().recursive(true).mode(0o700).create(&nested).await?;
/// assert_eq!(fs::metadata(&nested).await?.permissions().mode() & 0o777, 0o700);
/// fs::remove_dir_all(&root).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct DirBuilder {
    recursive: bool,
    mode: Option<u32>,
}

impl DirBuilder {
    /// A builder that creates one directory with the default permissions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also create missing parents (and succeed if the directory exists).
    pub fn recursive(&mut self, recursive: bool) -> &mut Self {
        self.recursive = recursive;
        self
    }

    /// The permission bits of the new directories (before the umask).
    pub fn mode(&mut self, mode: u32) -> &mut Self {
        self.mode = Some(mode);
        self
    }

    /// Creates the directory `path` as configured.
    pub async fn create(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(self.recursive);
        if let Some(mode) = self.mode {
            builder.mode(mode);
        }
        on_path(path, move |path| builder.create(path)).await
    }
}
