//! UDP echo: datagrams per second and server CPU per datagram, netloop against tokio,
//! in one run (issue 21's benchmark).
//!
//! ```text
//! cargo run --release -p netloop-benches --example udp_echo [-- ROUNDS SECONDS WINDOW SIZE]
//! ```
//!
//! Each runtime serves a UDP echo (`recv_from` then `send_to`, the same loop on both)
//! on a one-worker multi-thread runtime whose thread is pinned to core 1. A client
//! thread pinned to core 0, plain blocking `std::net::UdpSocket`, keeps WINDOW
//! datagrams of SIZE bytes in flight (default 32 and 64) and counts the echoes for
//! SECONDS (default 2) per window. The runtimes take turns, ROUNDS times (default 6),
//! so that a slow patch of the shared machine hits both. Server CPU is the worker
//! thread's utime + stime (`/proc/self/task/TID/stat`) over the window. Datagrams the
//! kernel drops are re-sent after 50 ms of silence and counted as lost, so a loss
//! never stalls a window. The figures are printed, never asserted.

use std::net::{SocketAddr, UdpSocket as StdUdpSocket};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The CPU ticks (utime + stime) of this process's thread `tid`.
fn thread_ticks(tid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    // Fields after the command name, which ends at the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5): 12 and 13 after the name.
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    field(11) + field(12)
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks).unwrap_or(100)
}

fn pin_to(core: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// A running echo server: its address and its worker thread's id.
struct Server {
    addr: SocketAddr,
    tid: i32,
}

fn netloop_server() -> (Server, netloop::runtime::Runtime) {
    let (tx, rx) = mpsc::channel();
    let rt = netloop::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .on_thread_start(|| pin_to(1))
        .build()
        .expect("netloop runtime");
    rt.spawn(async move {
        let socket = netloop::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        tx.send((socket.local_addr().unwrap(), gettid())).unwrap();
        let mut buf = vec![0u8; 65536];
        // Until the runtime shuts down (then recv_from fails).
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let _ = socket.send_to(&buf[..n], from).await;
        }
    });
    let (addr, tid) = rx.recv().unwrap();
    (Server { addr, tid }, rt)
}

fn tokio_server() -> (Server, tokio::runtime::Runtime) {
    let (tx, rx) = mpsc::channel();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .on_thread_start(|| pin_to(1))
        .build()
        .expect("tokio runtime");
    rt.spawn(async move {
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        tx.send((socket.local_addr().unwrap(), gettid())).unwrap();
        let mut buf = vec![0u8; 65536];
        // Until the runtime shuts down (then recv_from fails).
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let _ = socket.send_to(&buf[..n], from).await;
        }
    });
    let (addr, tid) = rx.recv().unwrap();
    (Server { addr, tid }, rt)
}

/// One timed window: (datagrams echoed, lost, server CPU ticks, seconds).
fn window(server: &Server, seconds: f64, in_flight: usize, size: usize) -> (u64, u64, u64, f64) {
    let client = StdUdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(server.addr).unwrap();
    client.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let payload = vec![7u8; size];
    let mut buf = vec![0u8; size.max(1)];
    let ticks_before = thread_ticks(server.tid);
    let start = Instant::now();
    let (mut echoed, mut lost) = (0u64, 0u64);
    for _ in 0..in_flight {
        client.send(&payload).unwrap();
    }
    while start.elapsed().as_secs_f64() < seconds {
        match client.recv(&mut buf) {
            Ok(_) => echoed += 1,
            Err(_) => lost += 1,
        }
        // One out, one in: the window stays full (a lost one is replaced).
        client.send(&payload).unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let ticks = thread_ticks(server.tid) - ticks_before;
    // Drain what is still in flight so the next window starts clean.
    while client.recv(&mut buf).is_ok() {}
    (echoed, lost, ticks, elapsed)
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<f64>().expect("a number"));
    let rounds = args.next().unwrap_or(6.0) as usize;
    let seconds = args.next().unwrap_or(2.0);
    let in_flight = args.next().unwrap_or(32.0) as usize;
    let size = args.next().unwrap_or(64.0) as usize;
    pin_to(0);
    let (netloop, _netloop_rt) = netloop_server();
    let (tokio, _tokio_rt) = tokio_server();
    let servers = [("netloop", &netloop), ("tokio multi_thread", &tokio)];
    let mut totals = [(0u64, 0u64, 0u64, 0f64); 2];
    for round in 0..rounds {
        for k in 0..2 {
            let i = (k + round) % 2;
            let (e, l, t, s) = window(servers[i].1, seconds, in_flight, size);
            let total = &mut totals[i];
            *total = (total.0 + e, total.1 + l, total.2 + t, total.3 + s);
        }
    }
    let hz = ticks_per_second() as f64;
    println!(
        "UDP echo, {size}-byte datagrams, {in_flight} in flight, {rounds} rounds of {seconds} s per runtime, \
         server on core 1 (one worker), client on core 0.\n"
    );
    println!("| runtime | datagrams/s | server CPU per datagram | server CPU use | lost |");
    println!("|---|---|---|---|---|");
    let mut rates = [0.0; 2];
    let mut cpus = [0.0; 2];
    for (i, (name, _)) in servers.iter().enumerate() {
        let (e, l, t, s) = totals[i];
        rates[i] = e as f64 / s;
        cpus[i] = t as f64 / hz / e.max(1) as f64 * 1e6;
        println!(
            "| {name} | {:.0} | {:.2} µs | {:.0}% | {l} |",
            rates[i],
            cpus[i],
            100.0 * t as f64 / hz / s
        );
    }
    println!(
        "\nnetloop / tokio: datagrams/s {:.2}x, CPU per datagram {:.2}x",
        rates[0] / rates[1],
        cpus[0] / cpus[1]
    );
}
