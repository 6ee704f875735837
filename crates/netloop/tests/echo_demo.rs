//! The README's demo: the echo example serves, and stops gracefully on Ctrl-C.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

/// The example binary cargo built beside this test (cargo test builds examples); built
/// here when this test runs alone.
fn echo_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let binary = deps.parent().unwrap().join("examples").join("echo");
    if !binary.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "netloop", "--example", "echo"])
            .status()
            .expect("run cargo");
        assert!(status.success(), "cargo build --example echo failed");
    }
    binary
}

/// Kills the child if the test fails, so no server outlives it.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn ctrl_c_stops_accepting_and_drains_open_connections() {
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        let mut server = KillOnDrop(
            Command::new(echo_binary())
                .arg("127.0.0.1:0")
                .stdout(Stdio::piped())
                .spawn()
                .expect("start the echo example"),
        );
        let mut out = BufReader::new(server.0.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = line
            .split_whitespace()
            .find(|w| w.contains(':'))
            .expect("the address line")
            .to_string();

        let mut conn = TcpStream::connect(&addr).unwrap();
        let mut echoed = [0u8; 5];
        conn.write_all(b"hello").unwrap();
        conn.read_exact(&mut echoed).unwrap();
        assert_eq!(&echoed, b"hello");

        let pid = server.0.id().to_string();
        assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
        // Read up to the draining line: from then on, the acceptor has stopped.
        let mut rest = String::new();
        while !rest.contains("draining") {
            assert_ne!(out.read_line(&mut rest).unwrap(), 0, "server exited early: {rest}");
        }
        assert!(rest.contains("draining 1 open connection"), "{rest}");
        // The open connection still works while draining; a new one is refused.
        conn.write_all(b"again").unwrap();
        conn.read_exact(&mut echoed).unwrap();
        assert_eq!(&echoed, b"again");
        assert!(TcpStream::connect(&addr).is_err(), "accepted a connection after Ctrl-C");
        // Closing the last connection ends the drain and the process, successfully.
        drop(conn);
        out.read_to_string(&mut rest).unwrap();
        assert!(rest.contains("all connections closed"), "{rest}");
        assert!(server.0.wait().unwrap().success());
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(LIMIT)
        .expect("the echo demo test finished in time");
}
