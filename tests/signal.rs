//! `netloop::signal`: handlers, listeners on several loops and runtimes, errors.
//!
//! Every test here listens for `SIGUSR1`/`SIGUSR2`, whose handlers stay installed for
//! the life of this test process, so a signal sent to the process never kills it. The
//! `SIGINT` test runs in a child process, where a stray Ctrl-C harms nothing.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use netloop::runtime::Runtime;
use netloop::signal::unix::{SignalKind, signal};
use netloop::{task, time};
use netloop_tests::{LIMIT, current, multi, test_body};

fn raise(signum: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    let rc = unsafe { libc::kill(libc::getpid(), signum) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
}

/// Runs `body` on `rt` with a time limit, so that a lost signal fails instead of hanging.
fn run<F: std::future::Future>(rt: &Runtime, body: F) -> F::Output {
    rt.block_on(async { time::timeout(LIMIT, body).await.expect("the signal never arrived") })
}

#[test]
fn listeners_on_every_loop_all_see_a_signal() {
    test_body(|| {
        let rt = multi();
        run(&rt, async {
            let kind = SignalKind::user_defined1();
            // One listener created on each loop (placement spreads the spawns), plus one here.
            let mut waiting = Vec::new();
            for _ in 0..4 {
                let mut sig = signal(kind).expect("listen for SIGUSR1");
                waiting.push(netloop::spawn(async move { sig.recv().await }));
            }
            let mut here = signal(kind).expect("listen for SIGUSR1");
            task::yield_now().await;
            raise(libc::SIGUSR1);
            assert_eq!(here.recv().await, Some(()));
            for handle in waiting {
                assert_eq!(handle.await.unwrap(), Some(()));
            }
        });
    });
}

#[test]
fn a_listener_sees_each_later_signal() {
    test_body(|| {
        let rt = current();
        run(&rt, async {
            let mut sig = signal(SignalKind::user_defined2()).expect("listen for SIGUSR2");
            for _ in 0..3 {
                raise(libc::SIGUSR2);
                assert_eq!(sig.recv().await, Some(()));
            }
        });
    });
}

#[test]
fn dropping_listeners_and_runtimes_starves_no_other_listener() {
    test_body(|| {
        let kind = SignalKind::user_defined1();
        let first_rt = current();
        let mut first = first_rt.block_on(async { signal(kind).unwrap() });
        let second_rt = current();
        let mut second = second_rt.block_on(async { signal(kind).unwrap() });
        let dropped = second_rt.block_on(async { signal(kind).unwrap() });
        drop(dropped);

        raise(libc::SIGUSR1);
        assert_eq!(run(&first_rt, first.recv()), Some(()));
        // The runtime whose driver read the pipe goes away; the other one's driver reads
        // the next signal.
        drop(first_rt);
        drop(first);
        raise(libc::SIGUSR1);
        assert_eq!(run(&second_rt, second.recv()), Some(()));
    });
}

#[test]
fn reserved_and_unknown_signals_are_refused_with_tokio_errors() {
    test_body(|| {
        let rt = current();
        rt.block_on(async {
            for signum in [libc::SIGKILL, libc::SIGSTOP, libc::SIGSEGV, 0, -1] {
                let err = signal(SignalKind::from_raw(signum)).unwrap_err();
                assert_eq!(err.to_string(), format!("Refusing to register signal {signum}"));
            }
            let err = signal(SignalKind::from_raw(10_000)).unwrap_err();
            assert_eq!(err.to_string(), "signal too large");
        });
        assert_eq!(SignalKind::from(libc::SIGHUP), SignalKind::hangup());
        assert_eq!(libc::c_int::from(SignalKind::terminate()), libc::SIGTERM);
    });
}

#[test]
fn listening_needs_a_live_runtime() {
    test_body(|| {
        let outside = std::panic::catch_unwind(|| signal(SignalKind::user_defined1()));
        assert!(outside.is_err(), "signal() outside a runtime must panic");

        let rt = current();
        let handle = rt.handle().clone();
        rt.shutdown_timeout(Duration::from_secs(1));
        let _enter = handle.enter();
        let err = signal(SignalKind::user_defined1()).unwrap_err();
        assert_eq!(err.to_string(), "signal driver gone");
    });
}

/// The child half of `ctrl_c_reaches_two_listeners_of_a_child_process`: a no-op unless
/// that test started this process.
#[test]
fn ctrl_c_child() {
    if std::env::var_os("NETLOOP_CTRL_C_CHILD").is_none() {
        return;
    }
    let rt = multi();
    rt.block_on(async {
        // Two listeners on (most likely) two loops, both in place before "ready".
        let mut first = signal(SignalKind::interrupt()).unwrap();
        let mut second = signal(SignalKind::interrupt()).unwrap();
        let a = netloop::spawn(async move { first.recv().await });
        let b = netloop::spawn(async move { second.recv().await });
        println!("ready");
        let both = time::timeout(Duration::from_secs(10), async { (a.await.unwrap(), b.await.unwrap()) });
        assert_eq!(both.await.expect("SIGINT never arrived"), (Some(()), Some(())));
        println!("both listeners saw SIGINT");
    });
}

#[test]
fn ctrl_c_reaches_two_listeners_of_a_child_process() {
    test_body(|| {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["ctrl_c_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("NETLOOP_CTRL_C_CHILD", "1")
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the child");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(
            lines.by_ref().map_while(Result::ok).any(|line| line.ends_with("ready")),
            "the child never got ready"
        );
        let killed = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        // Read to the end: closing the pipe early would fail the child's last writes.
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let saw = rest.iter().any(|line| line.contains("both listeners saw SIGINT"));
        let status = child.wait().unwrap();
        assert!(saw && status.success(), "child: saw={saw}, {status}");
    });
}
