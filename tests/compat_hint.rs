//! Without `tokio-compat`, a library that needs tokio's runtime still panics with
//! tokio's words, but the first such panic comes with a note that names the feature.
//!
//! The note goes to stderr once per process, so each case runs in a child process (this
//! test binary again, selecting one case by an environment variable) whose stderr is
//! read here.

use std::process::Command;
use std::time::Duration;

const CASE: &str = "NETLOOP_COMPAT_HINT_CASE";
const NOTE: &str = "`tokio-compat` feature";

/// Runs `case` in a child process; returns its stderr.
fn child_stderr(case: &str, test_name: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test_name, "--nocapture", "--test-threads=1"])
        .env(CASE, case)
        .output()
        .expect("the test binary runs again");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the child case failed:\n{stderr}");
    stderr
}

#[test]
fn spawned_tasks_that_need_tokios_runtime_get_the_note_once() {
    if std::env::var(CASE).as_deref() == Ok("tasks") {
        let rt = netloop::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            for _ in 0..2 {
                let task = netloop::spawn(async { tokio::time::sleep(Duration::from_millis(1)).await });
                let err = task.await.expect_err("tokio's sleep panics without tokio's runtime");
                assert!(err.is_panic());
            }
            // A panic of another kind gets no note.
            let other = netloop::spawn(async { panic!("an unrelated panic") });
            assert!(other.await.unwrap_err().is_panic());
        });
        return;
    }
    let stderr = child_stderr("tasks", "spawned_tasks_that_need_tokios_runtime_get_the_note_once");
    assert!(
        stderr.contains("must be called from the context of a Tokio 1.x runtime"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches(NOTE).count(),
        1,
        "one note for two such panics:\n{stderr}"
    );
}

#[test]
fn block_on_whose_future_needs_tokios_runtime_gets_the_note() {
    if std::env::var(CASE).as_deref() == Ok("block_on") {
        let rt = netloop::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(async { tokio::time::sleep(Duration::from_millis(1)).await })
        }));
        assert!(panicked.is_err(), "the panic still reaches the caller");
        return;
    }
    let stderr = child_stderr("block_on", "block_on_whose_future_needs_tokios_runtime_gets_the_note");
    assert_eq!(stderr.matches(NOTE).count(), 1, "{stderr}");
}

#[test]
fn an_unrelated_panic_gets_no_note() {
    if std::env::var(CASE).as_deref() == Ok("unrelated") {
        let rt = netloop::runtime::Runtime::new().unwrap();
        let task = rt.spawn(async { panic!("boom") });
        assert!(rt.block_on(task).unwrap_err().is_panic());
        return;
    }
    let stderr = child_stderr("unrelated", "an_unrelated_panic_gets_no_note");
    assert!(stderr.contains("boom"), "{stderr}");
    assert!(!stderr.contains(NOTE), "{stderr}");
}
