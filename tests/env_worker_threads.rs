//! `NETLOOP_WORKER_THREADS`. Environment variables are process-wide, so this file is a
//! test binary of its own with a single test: nothing else reads the variable while it
//! changes.

use std::io::ErrorKind;

use netloop::runtime::{Builder, Runtime};

const VAR: &str = "NETLOOP_WORKER_THREADS";

fn set(value: &str) {
    // SAFETY: the only test of this binary; no other thread reads the environment.
    unsafe { std::env::set_var(VAR, value) };
}

#[test]
fn netloop_worker_threads_sets_the_default_and_invalid_values_are_errors() {
    netloop_tests::test_body(|| {
        for bad in ["0", "", "two", "-1", "1.5", "99999999999999999999999"] {
            set(bad);
            let err = Builder::new_multi_thread()
                .enable_all()
                .build()
                .map(drop)
                .expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{VAR}={bad:?}: {err}");
            assert!(err.to_string().contains(VAR), "the error names the variable: {err}");
            // Runtime::new reads it too.
            assert_eq!(Runtime::new().map(drop).unwrap_err().kind(), ErrorKind::InvalidInput);
            // An explicit worker_threads wins over the variable.
            let rt = Builder::new_multi_thread().worker_threads(2).build().unwrap();
            assert_eq!(rt.handle().event_loops().len(), 2);
            // current_thread has one loop whatever the variable says.
            let rt = Builder::new_current_thread().build().unwrap();
            assert_eq!(rt.block_on(async { 1 }), 1);
        }

        for (value, loops) in [("3", 3), (" 1 ", 1)] {
            set(value);
            let rt = Runtime::new().unwrap();
            assert_eq!(rt.handle().event_loops().len(), loops, "{VAR}={value:?}");
            assert_eq!(rt.block_on(rt.spawn(async { 5 })).unwrap(), 5);
        }

        // SAFETY: as above.
        unsafe { std::env::remove_var(VAR) };
        let rt = Runtime::new().unwrap();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(rt.handle().event_loops().len(), cores, "default: one loop per core");
    });
}
