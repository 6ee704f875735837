//! Memory per item, netloop against tokio, from the same source: a parked task, a
//! pending `sleep`, an idle connection.
//!
//! ```text
//! cargo run --release -p netloop-benches --example memory_report
//! cargo run --release -p netloop-benches --example memory_report -- --child SHAPE netloop|tokio N
//! ```
//!
//! The workloads are in `benches/memory_shapes.rs`, written once against a module
//! alias `rt` and included twice below (`use netloop as rt;`, `use tokio as rt;`).
//! Both runtimes are `new_multi_thread().worker_threads(2).enable_all()` and use the
//! same (system) allocator.
//!
//! Each measurement runs in a fresh child process of this binary (`--child`), so that
//! no measurement inherits another's heap. The child builds its runtime, warms it up,
//! lets it settle, reads `VmRSS` (`/proc/self/status`) and the allocator's bytes in
//! use (glibc's `mallinfo2`), creates N items, waits (bounded) until every one is in
//! the state measured, settles again and reads both once more. Bytes per item is the
//! growth divided by N. The parent runs the children one after another, netloop then
//! tokio for each item, three rounds, and prints one Markdown table of the medians (the
//! spread goes to stderr). Figures are printed, never asserted.
//!
//! - parked task: 1,000,000 tasks, each awaiting a `tokio::sync::oneshot::Receiver`,
//!   all polled once when measured (the task, its channel and its join handle); then
//!   every sender sends and every task must finish. Spawned from `block_on`, and
//!   again from one task on a worker.
//! - idle task: 1,000,000 tasks awaiting `std::future::pending()` (a task with a
//!   trivial future, and its join handle).
//! - pending sleep: 1,000,000 `Box::pin(sleep(1 h))`, each polled once in a task.
//! - idle connection: 100,000 loopback connections to tokio's plain accept loop, whose
//!   task per connection awaits one read into a 16 KiB buffer (then an 8-byte one)
//!   under a 60 s `timeout`. The clients are plain `std::net::TcpStream`s in the same
//!   process (kernel socket memory is not in RSS), spread over listeners on
//!   127.0.0.1-4 (about 28,000 ephemeral ports per destination). `RLIMIT_NOFILE` is
//!   raised, soft and hard, to 300,000; raising the hard limit needs `CAP_SYS_RESOURCE`,
//!   and without it N is what the hard limit allows at two descriptors per connection
//!   (the table says so).

use std::net::Ipv4Addr;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// How long a child waits for its items to reach the measured state.
const WAIT_LIMIT: Duration = Duration::from_secs(20);
/// How long a child may run in all before the parent kills it.
const CHILD_LIMIT: Duration = Duration::from_secs(60);
/// Quiet time before each reading.
const SETTLE: Duration = Duration::from_millis(200);
/// The idle connections' listeners: loopback only.
const LISTEN_IPS: [Ipv4Addr; 4] = [
    Ipv4Addr::new(127, 0, 0, 1),
    Ipv4Addr::new(127, 0, 0, 2),
    Ipv4Addr::new(127, 0, 0, 3),
    Ipv4Addr::new(127, 0, 0, 4),
];
/// Processes per item and runtime; the table shows their median.
const ROUNDS: usize = 3;
/// The descriptor limit a connection child sets.
const NOFILE: u64 = 300_000;
/// Idle connections measured, if the descriptor limit allows.
const CONNECTIONS: usize = 100_000;

mod on_netloop {
    use netloop as rt;
    include!("../memory_shapes.rs");
}

mod on_tokio {
    use tokio as rt;
    include!("../memory_shapes.rs");
}

/// One reading: resident set size and the allocator's bytes in use.
#[derive(Clone, Copy, Debug)]
struct Probe {
    rss: u64,
    heap: u64,
}

impl Probe {
    fn now() -> Probe {
        Probe {
            rss: vm_rss(),
            heap: heap_in_use(),
        }
    }
}

/// Two readings around the creation of `n` items.
#[derive(Clone, Copy, Debug)]
struct Sample {
    before: Probe,
    after: Probe,
    n: usize,
}

impl Sample {
    fn rss_per_item(&self) -> f64 {
        (self.after.rss as f64 - self.before.rss as f64) / self.n as f64
    }

    fn heap_per_item(&self) -> f64 {
        (self.after.heap as f64 - self.before.heap as f64) / self.n as f64
    }
}

/// `VmRSS` of this process, in bytes.
fn vm_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .expect("VmRSS in /proc/self/status")
        * 1024
}

/// Bytes the allocator has handed out and not got back (glibc: in-use chunks, their
/// headers included, plus mmapped blocks). 0 where there is no `mallinfo2`.
fn heap_in_use() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 has no preconditions; it only reads the arenas' statistics.
        let info = unsafe { libc::mallinfo2() };
        (info.uordblks + info.hblkhd) as u64
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    0
}

/// Waits on this thread until `done()`, at most [`WAIT_LIMIT`].
fn wait_blocking(done: impl Fn() -> bool, what: &str) -> Result<(), String> {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > WAIT_LIMIT {
            return Err(format!("gave up after {WAIT_LIMIT:?} waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Raises `RLIMIT_NOFILE`, soft and hard, to [`NOFILE`] (at most `fs.nr_open`). Without
/// the privilege to raise the hard limit (`CAP_SYS_RESOURCE`, which a container may
/// withhold even from root), raises the soft limit to the hard one. Returns the limit
/// in force and, if it is below [`NOFILE`], why.
fn raise_nofile() -> (u64, Option<String>) {
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(1 << 20);
    let want = NOFILE.min(nr_open);
    let mut rl = libc::rlimit {
        rlim_cur: want,
        rlim_max: want,
    };
    // SAFETY: setrlimit only reads the rlimit passed by reference.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) } == 0 {
        let why = (want < NOFILE).then(|| format!("fs.nr_open is {nr_open}"));
        return (want, why);
    }
    let err = std::io::Error::last_os_error();
    // SAFETY: getrlimit writes the limits into the rlimit passed by reference.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return (0, Some(format!("getrlimit: {}", std::io::Error::last_os_error())));
    }
    rl.rlim_cur = rl.rlim_max;
    // SAFETY: as above; a soft limit up to the hard one needs no privilege.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) };
    let why = format!(
        "raising the hard RLIMIT_NOFILE to {want} failed ({err}: no CAP_SYS_RESOURCE here), so the limit is {}",
        rl.rlim_max
    );
    (rl.rlim_max, Some(why))
}

/// The idle connections to open under a descriptor limit of `limit`: two descriptors
/// each (client and server in this process), at most [`CONNECTIONS`], in thousands.
fn connections_for(limit: u64) -> usize {
    let fit = (limit.saturating_sub(1024) / 2 / 1000 * 1000) as usize;
    fit.min(CONNECTIONS)
}

/// What one child measures: name on the command line, label in the table, N.
struct Shape {
    name: &'static str,
    label: &'static str,
    n: usize,
}

/// Everything measured; `connections`: N of the idle connections.
fn shapes(connections: usize) -> [Shape; 6] {
    [
        Shape {
            name: "parked",
            label: "parked task (awaits a oneshot), spawned from `block_on`",
            n: 1_000_000,
        },
        Shape {
            name: "parked-in-task",
            label: "parked task, spawned from a task on a worker",
            n: 1_000_000,
        },
        Shape {
            name: "idle-task",
            label: "task awaiting `pending()`, spawned from `block_on`",
            n: 1_000_000,
        },
        Shape {
            name: "sleep",
            label: "pending `sleep` (boxed, polled once)",
            n: 1_000_000,
        },
        Shape {
            name: "conn-16k",
            label: "idle connection, 16 KiB read buffer",
            n: connections,
        },
        Shape {
            name: "conn-8",
            label: "idle connection, 8-byte read buffer",
            n: connections,
        },
    ]
}

/// The child: one shape on one runtime; prints `sample N RSS0 RSS1 HEAP0 HEAP1`.
fn child(shape: &str, runtime: &str, n: usize) -> Result<Sample, String> {
    let buf_len = match shape {
        "conn-16k" => Some(16 * 1024),
        "conn-8" => Some(8),
        _ => None,
    };
    if buf_len.is_some() {
        let (limit, why) = raise_nofile();
        if connections_for(limit) < n {
            return Err(format!(
                "{n} connections need {} descriptors: {}",
                2 * n + 1024,
                why.unwrap_or_default()
            ));
        }
    }
    match (runtime, shape, buf_len) {
        ("netloop", "parked", _) => on_netloop::parked_tasks(n, false),
        ("tokio", "parked", _) => on_tokio::parked_tasks(n, false),
        ("netloop", "parked-in-task", _) => on_netloop::parked_tasks(n, true),
        ("tokio", "parked-in-task", _) => on_tokio::parked_tasks(n, true),
        ("netloop", "idle-task", _) => on_netloop::idle_tasks(n),
        ("tokio", "idle-task", _) => on_tokio::idle_tasks(n),
        ("netloop", "sleep", _) => on_netloop::pending_sleeps(n),
        ("tokio", "sleep", _) => on_tokio::pending_sleeps(n),
        ("netloop", _, Some(len)) => on_netloop::idle_connections(n, len),
        ("tokio", _, Some(len)) => on_tokio::idle_connections(n, len),
        _ => Err(format!("unknown shape {shape} or runtime {runtime}")),
    }
}

/// Runs `--child shape runtime n` in a new process, killed after [`CHILD_LIMIT`].
fn run_child(shape: &Shape, runtime: &str) -> Result<Sample, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut proc = Command::new(exe)
        .args(["--child", shape.name, runtime, &shape.n.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting the child: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match proc.try_wait().map_err(|e| format!("waiting for the child: {e}"))? {
            Some(status) => break status,
            None if start.elapsed() > CHILD_LIMIT => {
                let _ = proc.kill();
                let _ = proc.wait();
                return Err(format!("killed after {CHILD_LIMIT:?}"));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = proc.stdout.take() {
        use std::io::Read;
        let _ = stdout.read_to_string(&mut out);
    }
    if !status.success() {
        return Err(format!("the child failed ({status})"));
    }
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("sample "))
        .ok_or_else(|| format!("no sample in the child's output: {out:?}"))?;
    let f: Vec<u64> = line.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    let &[n, rss0, rss1, heap0, heap1] = f.as_slice() else {
        return Err(format!("a malformed sample: {line:?}"));
    };
    eprintln!("  {runtime:8} {:16} {:.1} s", shape.name, start.elapsed().as_secs_f64());
    Ok(Sample {
        before: Probe { rss: rss0, heap: heap0 },
        after: Probe { rss: rss1, heap: heap1 },
        n: n as usize,
    })
}

/// `b` rounded, with thousands separators (one decimal below 100).
fn bytes(b: f64) -> String {
    if b.abs() < 100.0 {
        return format!("{b:.1}");
    }
    let digits = (b.round() as i64).unsigned_abs().to_string();
    let groups: Vec<&str> = digits
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).expect("ASCII digits"))
        .collect();
    let sign = if b < 0.0 { "-" } else { "" };
    format!("{sign}{}", groups.join(","))
}

/// An item's figures on one runtime over its rounds: medians, and the spread of RSS.
struct Figures {
    rss: f64,
    heap: f64,
    rss_min: f64,
    rss_max: f64,
}

fn figures(samples: &[Sample]) -> Option<Figures> {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let rss: Vec<f64> = samples.iter().map(Sample::rss_per_item).collect();
    let heap: Vec<f64> = samples.iter().map(Sample::heap_per_item).collect();
    Some(Figures {
        rss_min: rss.iter().copied().reduce(f64::min)?,
        rss_max: rss.iter().copied().reduce(f64::max)?,
        rss: median(rss),
        heap: median(heap),
    })
}

fn report() -> ExitCode {
    let started = Instant::now();
    eprintln!("memory_report: {ROUNDS} rounds, each measurement in its own process");
    let (limit, why) = raise_nofile();
    let connections = connections_for(limit);
    let note = why
        .filter(|_| connections < CONNECTIONS)
        .map(|why| format!("Idle connections: {connections} instead of {CONNECTIONS}, two descriptors each: {why}."));
    let shapes = shapes(connections);
    // samples[shape][runtime]: netloop, then tokio.
    let mut samples: Vec<[Vec<Sample>; 2]> = shapes.iter().map(|_| [Vec::new(), Vec::new()]).collect();
    let mut failed = false;
    for round in 1..=ROUNDS {
        eprintln!("round {round}");
        for (shape, got) in shapes.iter().zip(&mut samples) {
            for (runtime, got) in ["netloop", "tokio"].into_iter().zip(got.iter_mut()) {
                match run_child(shape, runtime) {
                    Ok(sample) => got.push(sample),
                    Err(e) => {
                        eprintln!("{} on {runtime}: {e}", shape.name);
                        failed = true;
                    }
                }
            }
        }
    }

    println!(
        "Bytes per item: growth of VmRSS over N items / N (and, last column, of the allocator's \
         bytes in use), median of {ROUNDS} processes; 2 workers, system allocator.\n"
    );
    println!("| item | N | netloop bytes | tokio bytes | netloop/tokio | allocated, netloop / tokio |");
    println!("|---|---|---|---|---|---|");
    for (shape, [netloop, tokio]) in shapes.iter().zip(&samples) {
        let (netloop, tokio) = (figures(netloop), figures(tokio));
        let cell = |f: &Option<Figures>| f.as_ref().map_or("failed".to_string(), |f| bytes(f.rss));
        let heap = |f: &Option<Figures>| f.as_ref().map_or("—".to_string(), |f| bytes(f.heap));
        let ratio = match (&netloop, &tokio) {
            (Some(a), Some(b)) if b.rss > 0.0 => format!("{:.2}", a.rss / b.rss),
            _ => "—".to_string(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} / {} |",
            shape.label,
            bytes(shape.n as f64),
            cell(&netloop),
            cell(&tokio),
            ratio,
            heap(&netloop),
            heap(&tokio)
        );
        let spread = |f: &Option<Figures>| {
            f.as_ref()
                .map_or("-".to_string(), |f| format!("{:.1}-{:.1}", f.rss_min, f.rss_max))
        };
        eprintln!(
            "  {:16} RSS per item over the rounds: netloop {}, tokio {}",
            shape.name,
            spread(&netloop),
            spread(&tokio)
        );
    }
    let (nj, ns) = on_netloop::sizes();
    let (tj, ts) = on_tokio::sizes();
    for (label, a, b) in [
        ("`size_of::<JoinHandle<()>>()`", nj, tj),
        ("`size_of::<Sleep>()`", ns, ts),
    ] {
        println!("| {label} | — | {a} | {b} | {:.2} | — |", a as f64 / b as f64);
    }
    if let Some(note) = note {
        println!("\n{note}");
    }
    eprintln!("memory_report: {:.0} s", started.elapsed().as_secs_f64());
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => report(),
        [flag, shape, runtime, n] if flag == "--child" => {
            let Ok(n) = n.parse::<usize>() else {
                eprintln!("N must be a number, not {n}");
                return ExitCode::FAILURE;
            };
            match child(shape, runtime, n) {
                Ok(s) => {
                    println!(
                        "sample {} {} {} {} {}",
                        s.n, s.before.rss, s.after.rss, s.before.heap, s.after.heap
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{shape} on {runtime}: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!("usage: memory_report [--child SHAPE netloop|tokio N]");
            ExitCode::FAILURE
        }
    }
}
