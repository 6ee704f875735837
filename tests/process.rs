//! `netloop::process`: children spawned, streamed and awaited on the loop.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use netloop::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use netloop::net::{TcpListener, TcpStream};
use netloop::process::Command;
use netloop::time;
use netloop_tests::{current, multi, test_body};

#[test]
fn a_childs_output_streams_and_its_exit_is_awaited_while_the_loop_serves() {
    test_body(|| {
        // One loop: the child's pipe, its exit and a TCP ping-pong all share it.
        current().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            netloop::spawn(async move {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut byte = [0; 1];
                while conn.read_exact(&mut byte).await.is_ok() {
                    conn.write_all(&byte).await.unwrap();
                }
            });
            let pongs = Arc::new(AtomicUsize::new(0));
            let counted = pongs.clone();
            let pinger = netloop::spawn(async move {
                let mut conn = TcpStream::connect(addr).await.unwrap();
                let mut byte = [0; 1];
                loop {
                    conn.write_all(b"p").await.unwrap();
                    conn.read_exact(&mut byte).await.unwrap();
                    counted.fetch_add(1, Ordering::SeqCst);
                    time::sleep(Duration::from_millis(5)).await;
                }
            });

            let mut child = Command::new("sh")
                .args(["-c", "for i in 1 2 3; do echo line $i; sleep 0.1; done; exit 3"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            let mut seen = Vec::new();
            let mut pongs_between = Vec::new();
            while let Some(line) = lines.next_line().await.unwrap() {
                seen.push(line);
                pongs_between.push(pongs.load(Ordering::SeqCst));
            }
            let status = child.wait().await.unwrap();
            assert_eq!(seen, ["line 1", "line 2", "line 3"]);
            assert_eq!(status.code(), Some(3));
            assert!(
                pongs_between.last() > pongs_between.first(),
                "the loop kept serving while the child ran: {pongs_between:?}"
            );
            pinger.abort();
        });
    });
}

#[test]
fn stdin_and_stdout_pipes_carry_a_hundred_kilobytes_both_ways() {
    test_body(|| {
        multi().block_on(async {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let mut stdout = child.stdout.take().unwrap();
            let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
            let sent = data.clone();
            // More than a pipe holds: the writer must wait for the reader.
            let writer = netloop::spawn(async move {
                stdin.write_all(&sent).await.unwrap();
                // Dropping stdin closes it: cat ends.
            });
            let mut back = Vec::new();
            stdout.read_to_end(&mut back).await.unwrap();
            writer.await.unwrap();
            assert!(back == data, "cat returned other bytes");
            assert!(child.wait().await.unwrap().success());
        });
    });
}

#[test]
fn output_status_and_an_exited_childs_accessors() {
    test_body(|| {
        current().block_on(async {
            let out = Command::new("sh")
                .args(["-c", "echo out; echo err >&2; exit 1"])
                .output()
                .await
                .unwrap();
            assert_eq!(out.stdout, b"out\n");
            assert_eq!(out.stderr, b"err\n");
            assert_eq!(out.status.code(), Some(1));
            assert!(Command::new("true").status().await.unwrap().success());

            let mut child = Command::new("true").spawn().unwrap();
            assert!(child.id().is_some());
            let status = child.wait().await.unwrap();
            assert_eq!(child.wait().await.unwrap(), status, "the same status again");
            assert_eq!(child.try_wait().unwrap(), Some(status));
            assert_eq!(child.id(), None);
            child.start_kill().unwrap();
        });
    });
}

#[test]
fn kill_stops_a_running_child_and_bad_programs_are_not_found() {
    test_body(|| {
        current().block_on(async {
            let mut child = Command::new("sleep").arg("30").spawn().unwrap();
            assert_eq!(child.try_wait().unwrap(), None);
            child.kill().await.unwrap();
            let status = child.try_wait().unwrap().expect("exited");
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&status),
                Some(libc::SIGKILL)
            );

            let err = Command::new("/no/such/program").spawn().unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        });
    });
}

/// True while process `pid` exists (a zombie counts: it has not been reaped).
fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn kill_on_drop_kills_and_dropped_children_are_reaped() {
    test_body(|| {
        current().block_on(async {
            let child = Command::new("sleep").arg("30").kill_on_drop(true).spawn().unwrap();
            let pid = child.id().unwrap();
            drop(child);
            // Reaping happens at later spawns and waits.
            let deadline = Instant::now() + Duration::from_secs(4);
            while exists(pid) {
                assert!(Instant::now() < deadline, "child {pid} still exists after drop");
                Command::new("true").status().await.unwrap();
            }
        });
    });
}

#[test]
fn a_child_spawned_under_one_runtime_is_awaited_under_another() {
    test_body(|| {
        let mut child = current().block_on(async { Command::new("true").stdout(Stdio::null()).spawn().unwrap() });
        // The first runtime is gone; the second waits on its own loop.
        let status = current().block_on(async { child.wait().await.unwrap() });
        assert!(status.success());
    });
}
