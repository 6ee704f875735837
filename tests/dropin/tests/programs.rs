//! Runs each program in `src/bin` as a process, under a time limit, and checks that it
//! exits successfully and reports `<name>: ok`.

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A program should finish in under ~3 s; past this it counts as hung and is killed.
const LIMIT: Duration = Duration::from_secs(15);

fn run(name: &str, exe: &str) {
    let start = Instant::now();
    let child = Command::new(exe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {exe}: {e}"));
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let output = child.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&output.stdout).into_owned();
        let err = String::from_utf8_lossy(&output.stderr).into_owned();
        let _ = tx.send((output.status, out, err));
    });
    let (status, out, err) = match rx.recv_timeout(LIMIT) {
        Ok(done) => done,
        Err(_) => {
            // SAFETY: `pid` is our child, not yet reaped (its waiter is still blocked).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("{name} did not finish within {LIMIT:?}: it hangs");
        }
    };
    let took = start.elapsed();
    print!("{out}");
    eprint!("{err}");
    println!("{name}: finished in {took:?} with {status}");
    assert!(
        status.success(),
        "{name} failed with {status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!("{name}: ok on ")),
        "{name} did not report success; stdout:\n{out}"
    );
}

macro_rules! programs {
    ($($name:ident),* $(,)?) => { $(
        #[test]
        fn $name() {
            run(stringify!($name), env!(concat!("CARGO_BIN_EXE_", stringify!($name))));
        }
    )* };
}

programs!(
    echo_server,
    proxy,
    read_timeout,
    interval_ticker,
    joinset_fanout,
    local_set,
    select_channel_timer,
    spawn_blocking,
    runtime_handle,
);
