//! The path operations: each one `std::fs` call on the blocking pool.

use std::fs::{Metadata, Permissions};
use std::io;
use std::path::{Path, PathBuf};

use super::{on_path, on_paths};

/// Reads the whole file at `path` into a `Vec`.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-read-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// let path = dir.join("data.bin");
/// fs::write(&path, [1u8, 2, 3]).await?;
/// assert_eq!(fs::read(&path).await?, [1, 2, 3]);
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    on_path(path, std::fs::read).await
}

/// Reads the whole file at `path` into a `String`; an error if it is not UTF-8.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-read-to-string-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// let path = dir.join("app.conf");
/// fs::write(&path, "port = 8080\n").await?;
/// let config = fs::read_to_string(&path).await?;
/// assert!(config.starts_with("port"));
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    on_path(path, std::fs::read_to_string).await
}

/// Creates or truncates the file at `path` and writes `contents` to it.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-write-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// let path = dir.join("hello.txt");
/// fs::write(&path, "hello").await?;
/// fs::write(&path, "bye").await?; // replaces the contents
/// assert_eq!(fs::read_to_string(&path).await?, "bye");
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let contents = contents.as_ref().to_owned();
    on_path(path, move |path| std::fs::write(path, contents)).await
}

/// Copies the contents and permissions of file `from` to `to`; returns the bytes copied.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-copy-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::write(dir.join("original.txt"), "twelve bytes").await?;
/// let n = fs::copy(dir.join("original.txt"), dir.join("backup.txt")).await?;
/// assert_eq!(n, 12);
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<u64> {
    on_paths(from, to, std::fs::copy).await
}

/// Creates the directory `path`; its parent must exist.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-create-dir-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::create_dir(dir.join("logs")).await?;
/// let again = fs::create_dir(dir.join("logs")).await.unwrap_err();
/// assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::create_dir).await
}

/// Creates the directory `path` and any missing parents.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-create-dir-all-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::create_dir_all(dir.join("a/b/c")).await?;
/// fs::create_dir_all(dir.join("a/b/c")).await?; // already there: fine
/// assert!(fs::metadata(dir.join("a/b/c")).await?.is_dir());
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::create_dir_all).await
}

/// Removes the empty directory `path`.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-remove-dir-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::create_dir(dir.join("empty")).await?;
/// fs::remove_dir(dir.join("empty")).await?;
/// fs::write(dir.join("file"), "").await?;
/// assert!(fs::remove_dir(&dir).await.is_err(), "not empty");
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::remove_dir).await
}

/// Removes the directory `path` with everything in it.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-remove-dir-all-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::create_dir_all(dir.join("cache/objects")).await?;
/// fs::write(dir.join("cache/objects/1"), "x").await?;
/// fs::remove_dir_all(dir.join("cache")).await?;
/// assert!(!fs::try_exists(dir.join("cache")).await?);
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn remove_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::remove_dir_all).await
}

/// Removes the file `path`.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-remove-file-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// let path = dir.join("stale.lock");
/// fs::write(&path, "").await?;
/// fs::remove_file(&path).await?;
/// let gone = fs::remove_file(&path).await.unwrap_err();
/// assert_eq!(gone.kind(), std::io::ErrorKind::NotFound);
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::remove_file).await
}

/// Renames `from` to `to`, replacing `to` if it exists (on the same file system).
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-rename-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// // Replacing a file atomically: readers see the old contents or the new, never half.
/// let path = dir.join("state.json");
/// fs::write(&path, "{\"v\": 1}").await?;
/// fs::write(dir.join("state.json.tmp"), "{\"v\": 2}").await?;
/// fs::rename(dir.join("state.json.tmp"), &path).await?;
/// assert_eq!(fs::read_to_string(&path).await?, "{\"v\": 2}");
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    on_paths(from, to, std::fs::rename).await
}

/// The absolute form of `path`, with every link resolved.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-canonicalize-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::create_dir(dir.join("sub")).await?;
/// let roundabout = dir.join("sub/../sub/.");
/// assert_eq!(fs::canonicalize(&roundabout).await?, fs::canonicalize(dir.join("sub")).await?);
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    on_path(path, std::fs::canonicalize).await
}

/// Creates `link` as a hard link to `original`.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-hard-link-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::write(dir.join("original"), "shared").await?;
/// fs::hard_link(dir.join("original"), dir.join("link")).await?;
/// fs::remove_file(dir.join("original")).await?; // the data lives on through the link
/// assert_eq!(fs::read_to_string(dir.join("link")).await?, "shared");
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn hard_link(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    on_paths(original, link, std::fs::hard_link).await
}

/// Creates `link` as a symbolic link to `original`.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-symlink-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::write(dir.join("v2.conf"), "new").await?;
/// fs::symlink("v2.conf", dir.join("current.conf")).await?; // relative to the link's directory
/// assert_eq!(fs::read_to_string(dir.join("current.conf")).await?, "new");
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn symlink(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    on_paths(original, link, std::os::unix::fs::symlink).await
}

/// The target of the symbolic link `path`.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-read-link-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::symlink("target.txt", dir.join("link")).await?;
/// assert_eq!(fs::read_link(dir.join("link")).await?, std::path::Path::new("target.txt"));
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn read_link(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    on_path(path, std::fs::read_link).await
}

/// The metadata of `path`, following links.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-metadata-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::write(dir.join("five"), "12345").await?;
/// let meta = fs::metadata(dir.join("five")).await?;
/// assert!(meta.is_file());
/// assert_eq!(meta.len(), 5);
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    on_path(path, std::fs::metadata).await
}

/// The metadata of `path` itself, not following a link.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-symlink-metadata-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// fs::write(dir.join("file"), "").await?;
/// fs::symlink("file", dir.join("link")).await?;
/// assert!(fs::symlink_metadata(dir.join("link")).await?.file_type().is_symlink());
/// assert!(fs::metadata(dir.join("link")).await?.is_file()); // followed
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn symlink_metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    on_path(path, std::fs::symlink_metadata).await
}

/// Sets the permissions of `path`.
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-set-permissions-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// use std::os::unix::fs::PermissionsExt;
///
/// let path = dir.join("secret");
/// fs::write(&path, "").await?;
/// fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).await?;
/// assert_eq!(fs::metadata(&path).await?.permissions().mode() & 0o777, 0o600);
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn set_permissions(path: impl AsRef<Path>, perm: Permissions) -> io::Result<()> {
    on_path(path, move |path| std::fs::set_permissions(path, perm)).await
}

/// Whether `path` exists: `Ok(false)` only when it certainly does not; an error when
/// that cannot be told (a permission error on a parent, for instance).
///
/// ```
/// use netloop_net::fs;
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("netloop-doc-fs-try-exists-{}", std::process::id()));
/// # fs::create_dir_all(&dir).await?;
/// let path = dir.join("maybe");
/// assert!(!fs::try_exists(&path).await?);
/// fs::write(&path, "").await?;
/// assert!(fs::try_exists(&path).await?);
/// # fs::remove_dir_all(&dir).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
    on_path(path, |path| path.try_exists()).await
}
