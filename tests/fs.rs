//! `netloop::fs`: files through the blocking pool, with tokio's buffering semantics.

use std::io::SeekFrom;
use std::path::PathBuf;
use std::time::Duration;

use netloop::fs::{self, DirBuilder, File, OpenOptions};
use netloop::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use netloop_tests::{current, multi, test_body};

/// A fresh directory for one test, removed with everything in it at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("netloop-fs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A deterministic byte pattern, and chunk sizes from a small LCG.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

fn chunk_sizes(seed: &mut u64, max: usize) -> usize {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    1 + (*seed >> 33) as usize % max
}

#[test]
fn one_mebibyte_in_random_chunks_comes_back_byte_for_byte() {
    test_body(|| {
        let dir = TempDir::new("chunks");
        let path = dir.join("data");
        let data = pattern(1 << 20);
        multi().block_on(async {
            let mut file = File::create(&path).await.unwrap();
            file.set_max_buf_size(8 * 1024);
            let mut seed = 7;
            let mut at = 0;
            while at < data.len() {
                let n = chunk_sizes(&mut seed, 20_000).min(data.len() - at);
                file.write_all(&data[at..at + n]).await.unwrap();
                at += n;
            }
            file.flush().await.unwrap();
            drop(file);

            let mut file = File::open(&path).await.unwrap();
            let mut back = Vec::new();
            let mut buf = vec![0; 20_000];
            loop {
                let want = chunk_sizes(&mut seed, buf.len());
                let n = file.read(&mut buf[..want]).await.unwrap();
                if n == 0 {
                    break;
                }
                back.extend_from_slice(&buf[..n]);
            }
            assert!(back == data, "the bytes read differ from those written");
            assert_eq!(fs::read(&path).await.unwrap(), data);
        });
    });
}

#[test]
fn a_write_after_a_buffered_read_lands_where_the_reader_stands() {
    test_body(|| {
        let dir = TempDir::new("read-then-write");
        let path = dir.join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        current().block_on(async {
            let mut file = OpenOptions::new().read(true).write(true).open(&path).await.unwrap();
            let mut two = [0; 2];
            // The pool reads ahead (up to the buffer's size); the task has seen two bytes.
            file.read_exact(&mut two).await.unwrap();
            assert_eq!(&two, b"01");
            file.write_all(b"ab").await.unwrap();
            file.flush().await.unwrap();
            assert_eq!(file.stream_position().await.unwrap(), 4);
            // A relative seek counts from the reader's position too.
            file.read_exact(&mut two).await.unwrap();
            assert_eq!(&two, b"45");
            assert_eq!(file.seek(SeekFrom::Current(-1)).await.unwrap(), 5);
            file.read_exact(&mut two).await.unwrap();
            assert_eq!(&two, b"56");
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"01ab456789");
    });
}

#[test]
fn a_failed_background_write_is_reported_by_flush() {
    test_body(|| {
        let dir = TempDir::new("write-error");
        let path = dir.join("read-only");
        std::fs::write(&path, b"x").unwrap();
        current().block_on(async {
            // Opened for reading only: the write(2) itself fails, on the pool.
            let mut file = File::open(&path).await.unwrap();
            assert_eq!(file.write(b"hello").await.unwrap(), 5, "write returns once buffered");
            let err = file.flush().await.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EBADF), "{err}");
            // Reported once; the file goes on.
            file.flush().await.unwrap();
        });
    });
}

#[test]
fn bad_paths_give_the_os_error_kinds() {
    test_body(|| {
        let dir = TempDir::new("errors");
        current().block_on(async {
            let missing = dir.join("missing");
            for err in [
                File::open(&missing).await.unwrap_err(),
                fs::read(&missing).await.unwrap_err(),
                fs::metadata(&missing).await.unwrap_err(),
                fs::remove_file(&missing).await.unwrap_err(),
                fs::read_dir(&missing).await.unwrap_err(),
            ] {
                assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
            }
            fs::write(dir.join("there"), b"").await.unwrap();
            let err = File::create_new(dir.join("there")).await.unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
            assert!(!fs::try_exists(&missing).await.unwrap());
            assert!(fs::try_exists(dir.join("there")).await.unwrap());
            let err = fs::create_dir(dir.join("a/b")).await.unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        });
    });
}

#[test]
fn read_dir_lists_every_entry_across_batches() {
    test_body(|| {
        let dir = TempDir::new("listing");
        current().block_on(async {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir.join("sub/deeper"))
                .await
                .unwrap();
            for i in 0..100 {
                fs::write(dir.join(&format!("file-{i:03}")), i.to_string())
                    .await
                    .unwrap();
            }
            let mut entries = fs::read_dir(&dir.0).await.unwrap();
            let mut names = Vec::new();
            while let Some(entry) = entries.next_entry().await.unwrap() {
                assert_eq!(entry.path(), dir.0.join(entry.file_name()));
                let is_dir = entry.file_type().await.unwrap().is_dir();
                assert_eq!(is_dir, entry.file_name() == "sub");
                assert_eq!(entry.metadata().await.unwrap().is_dir(), is_dir);
                names.push(entry.file_name().into_string().unwrap());
            }
            assert_eq!(entries.next_entry().await.unwrap().map(|e| e.path()), None);
            names.sort();
            assert_eq!(names.len(), 101);
            assert_eq!(names[0], "file-000");
            assert_eq!(names[100], "sub");
        });
    });
}

#[test]
fn set_len_into_std_and_clones_see_completed_writes() {
    test_body(|| {
        let dir = TempDir::new("misc");
        let path = dir.join("f");
        current().block_on(async {
            let mut file = File::create(&path).await.unwrap();
            file.write_all(b"hello world").await.unwrap();
            // set_len waits for the write in flight first.
            file.set_len(5).await.unwrap();
            assert_eq!(file.metadata().await.unwrap().len(), 5);
            let clone = file.try_clone().await.unwrap();
            assert_eq!(clone.max_buf_size(), file.max_buf_size());
            file.write_all(b"!").await.unwrap();
            // into_std waits for the write in flight.
            let std = file.into_std().await;
            assert_eq!(std.metadata().unwrap().len(), 12);
        });
        // set_len leaves the position alone: "!" went at offset 11.
        assert_eq!(std::fs::read(&path).unwrap(), b"hello\0\0\0\0\0\0!");
    });
}

#[test]
fn zero_max_buf_size_panics_with_tokios_message() {
    test_body(|| {
        let dir = TempDir::new("max-buf");
        let path = dir.join("f");
        let mut file = current().block_on(File::create(path)).unwrap();
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| file.set_max_buf_size(0)))
            .expect_err("zero must panic");
        assert_eq!(
            panic.downcast_ref::<&str>(),
            Some(&"`max_buf_size` must be greater than 0")
        );
    });
}

#[test]
fn operations_after_shutdown_fail_with_background_task_failed() {
    test_body(|| {
        let rt = current();
        let handle = rt.handle().clone();
        rt.shutdown_timeout(Duration::from_secs(1));
        let _enter = handle.enter();
        let err = handle.block_on(fs::read_to_string("Cargo.toml")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Other);
        assert_eq!(err.to_string(), "background task failed");
    });
}
