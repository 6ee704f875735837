//! The churn soak: opens and closes connections against a netloop server on 127.0.0.1
//! and checks that nothing leaks.
//!
//! A plain program (`harness = false`), run only when `SOAK_CONNECTIONS` is set:
//!
//! ```text
//! SOAK_CONNECTIONS=100000  cargo test --release -p netloop-tests --test soak   # CI (.ci/soak.sh)
//! SOAK_CONNECTIONS=5000000 cargo test --release -p netloop-tests --test soak   # by hand
//! ```
//!
//! Without it (`cargo test --workspace`) it prints that it was skipped and passes.
//! Optional: `SOAK_CLIENTS` (client threads, default 4), `SOAK_BURST` (connections
//! held in each descriptor-limit burst, default 128).
//!
//! The server is `netloop::net::serve` on a two-loop runtime. Each connection's handler
//! reads a 16-byte request under a `timeout` (a timer entry filed and cancelled), may
//! `sleep` 1 ms (a timer that fires), wait for the client's half-close, computes its
//! reply in a task it spawns and joins, writes the reply and closes. The clients, on
//! plain threads with blocking sockets, mix eight behaviours in equal parts: clean
//! exchange and close, exchange then reset (SO_LINGER 0), reset at once, half-close
//! then read the reply, send half a request then close, send half a request then reset,
//! a slow exchange (the server sleeps), and connect-then-close without a byte.
//!
//! The run has ten phases; after each one the server must settle: every connection
//! accepted and its handler finished, the loops' metrics at one live task (the
//! acceptor) and one registration (the listener), and the descriptors back to their
//! count before the churn. Phases 1, 4, 7 and 10 begin with a burst at the descriptor
//! limit: `SOAK_BURST` client sockets connect and send a request after RLIMIT_NOFILE
//! has run out (every free descriptor number taken), so the acceptor's `accept` fails
//! with EMFILE; it must stall, then (limit restored) recover after its pause and serve
//! every one of them. At the end the acceptor is aborted, the loops must report zero
//! live tasks and zero registrations, the RSS must be within 5% of its value after the
//! first phase (10% of the run), no panic may have happened anywhere (a hook counts
//! them, the loops' caught ones included), and once the runtime is dropped the
//! process's descriptors must be back to their count before it was built.

use std::fs;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream as StdStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::thread;
use std::time::{Duration, Instant};

use netloop::io::{AsyncReadExt, AsyncWriteExt};
use netloop::net::{TcpListener, TcpStream, serve};
use netloop::runtime::{Builder, Runtime};
use netloop::time::{sleep, timeout};

const REQUEST: usize = 16;
/// What a blocked read or write may take before the soak calls it a hang.
const IO_LIMIT: Duration = Duration::from_secs(10);
/// How long the server may take to settle after a phase.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);
const PHASES: u64 = 10;
/// Phases (from 0) that begin with a burst at the descriptor limit: the first one, so
/// the burst's peak memory is in the RSS reference, and three more spread out.
const BURST_PHASES: [u64; 4] = [0, 3, 6, 9];
/// How long a burst holds the lowered limit before restoring it: long enough to see
/// the acceptor stall (accepting 128 connections takes a few milliseconds), shorter
/// than its pause (`netloop::net::EXHAUSTION_PAUSE`, 1 s).
const STALL_WINDOW: Duration = Duration::from_millis(300);
/// The RSS at the end may differ from the reference by this fraction.
const RSS_TOLERANCE: f64 = 0.05;

static PANICS: AtomicU64 = AtomicU64::new(0);

/// What a client does; the first request byte tells the server.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(u8)]
enum Mode {
    /// Request, reply, the server's FIN, close.
    Clean = 0,
    /// Request, reply, then close with SO_LINGER 0: a reset.
    ResetAfterReply = 1,
    /// Connect, then reset at once.
    ResetAtOnce = 2,
    /// Request, shutdown(Write); the server reads the EOF, then replies.
    HalfClose = 3,
    /// Half a request, then close: the client vanishes mid-request.
    VanishFin = 4,
    /// Half a request, then reset.
    VanishReset = 5,
    /// Like `Clean`, but the server sleeps 1 ms before it replies.
    Slow = 6,
    /// Connect, then close without a byte.
    Silent = 7,
}

impl Mode {
    fn of(index: u64) -> Mode {
        // A fixed mix (a hash of the index), the same on every run.
        match mix(index) % 8 {
            0 => Mode::Clean,
            1 => Mode::ResetAfterReply,
            2 => Mode::ResetAtOnce,
            3 => Mode::HalfClose,
            4 => Mode::VanishFin,
            5 => Mode::VanishReset,
            6 => Mode::Slow,
            _ => Mode::Silent,
        }
    }

    /// Whether the server gets the whole request and replies.
    fn is_served(self) -> bool {
        matches!(self, Mode::Clean | Mode::ResetAfterReply | Mode::HalfClose | Mode::Slow)
    }
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn request(index: u64, mode: Mode) -> [u8; REQUEST] {
    let mut req = [0u8; REQUEST];
    req[0] = mode as u8;
    req[1..9].copy_from_slice(&index.to_le_bytes());
    for (k, b) in req[9..].iter_mut().enumerate() {
        *b = (index as u8).wrapping_add(k as u8);
    }
    req
}

fn reply(req: [u8; REQUEST]) -> [u8; REQUEST] {
    let mut out = req;
    out.reverse();
    out.iter_mut().for_each(|b| *b ^= 0xA5);
    out
}

/// The server's counts.
#[derive(Default)]
struct Server {
    /// Handlers started: connections accepted.
    accepted: AtomicU64,
    /// Handlers whose future was dropped (finished or not).
    finished: AtomicU64,
    /// Replies written.
    served: AtomicU64,
    /// Requests cut short by an EOF or a reset.
    cut_short: AtomicU64,
    /// Anything else: timeouts, a missing EOF after a half-close, failed writes.
    errors: AtomicU64,
    /// Handlers whose stream read its request through the loop's io_uring ring.
    on_ring: AtomicU64,
}

/// Counts a handler as finished when its future is dropped, however it ends.
struct Finished(Arc<Server>);

impl Drop for Finished {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Relaxed);
    }
}

async fn handle(mut stream: TcpStream, server: Arc<Server>) {
    server.accepted.fetch_add(1, Relaxed);
    let _finished = Finished(server.clone());
    let mut req = [0u8; REQUEST];
    match timeout(IO_LIMIT, stream.read_exact(&mut req)).await {
        Ok(Ok(_)) => {
            if stream.is_on_ring() {
                server.on_ring.fetch_add(1, Relaxed);
            }
        }
        Ok(Err(e)) if matches!(e.kind(), ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset) => {
            server.cut_short.fetch_add(1, Relaxed);
            return;
        }
        Ok(Err(_)) | Err(_) => {
            server.errors.fetch_add(1, Relaxed);
            return;
        }
    }
    if req[0] == Mode::HalfClose as u8 {
        let mut byte = [0u8; 1];
        if !matches!(timeout(IO_LIMIT, stream.read(&mut byte)).await, Ok(Ok(0))) {
            server.errors.fetch_add(1, Relaxed);
            return;
        }
    } else if req[0] == Mode::Slow as u8 {
        sleep(Duration::from_millis(1)).await;
    }
    // A task per connection, beside the handler's own.
    let out = match netloop::spawn(async move { reply(req) }).await {
        Ok(out) => out,
        Err(_) => {
            server.errors.fetch_add(1, Relaxed);
            return;
        }
    };
    match timeout(IO_LIMIT, stream.write_all(&out)).await {
        Ok(Ok(())) => server.served.fetch_add(1, Relaxed),
        _ => server.errors.fetch_add(1, Relaxed),
    };
}

// ---------------------------------------------------------------------------------
// Clients
// ---------------------------------------------------------------------------------

fn set_linger_zero(fd: i32) -> io::Result<()> {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `fd` is an open socket and the option value is a `linger` of the size given.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn expect_reply(stream: &mut StdStream, req: [u8; REQUEST]) -> io::Result<()> {
    let mut got = [0u8; REQUEST];
    stream.read_exact(&mut got)?;
    if got != reply(req) {
        return Err(io::Error::other(format!("wrong reply {got:?}")));
    }
    Ok(())
}

fn expect_eof(stream: &mut StdStream) -> io::Result<()> {
    match stream.read(&mut [0u8; 1])? {
        0 => Ok(()),
        _ => Err(io::Error::other("a byte after the reply")),
    }
}

/// One client connection of `mode`.
fn client(addr: SocketAddr, index: u64, mode: Mode) -> io::Result<()> {
    let mut stream = StdStream::connect_timeout(&addr, IO_LIMIT)?;
    stream.set_read_timeout(Some(IO_LIMIT))?;
    stream.set_write_timeout(Some(IO_LIMIT))?;
    let req = request(index, mode);
    match mode {
        Mode::Clean | Mode::Slow => {
            stream.write_all(&req)?;
            expect_reply(&mut stream, req)?;
            expect_eof(&mut stream)?;
        }
        Mode::ResetAfterReply => {
            stream.write_all(&req)?;
            expect_reply(&mut stream, req)?;
            set_linger_zero(stream.as_raw_fd())?;
        }
        Mode::ResetAtOnce => set_linger_zero(stream.as_raw_fd())?,
        Mode::HalfClose => {
            stream.write_all(&req)?;
            stream.shutdown(Shutdown::Write)?;
            expect_reply(&mut stream, req)?;
            expect_eof(&mut stream)?;
        }
        Mode::VanishFin => stream.write_all(&req[..REQUEST / 2])?,
        Mode::VanishReset => {
            stream.write_all(&req[..REQUEST / 2])?;
            set_linger_zero(stream.as_raw_fd())?;
        }
        Mode::Silent => {}
    }
    Ok(())
}

#[derive(Default)]
struct Failures {
    count: AtomicU64,
    first: Mutex<Vec<String>>,
}

impl Failures {
    fn record(&self, what: String) {
        self.count.fetch_add(1, Relaxed);
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        if first.len() < 10 {
            first.push(what);
        }
    }
}

/// Runs connections `range` on `clients` threads; returns how many of them the
/// server serves.
fn churn(addr: SocketAddr, range: std::ops::Range<u64>, clients: u64, failures: &Failures) -> u64 {
    thread::scope(|s| {
        for t in 0..clients {
            let range = range.clone();
            s.spawn(move || {
                for index in range.filter(|i| i % clients == t) {
                    let mode = Mode::of(index);
                    if let Err(e) = client(addr, index, mode) {
                        failures.record(format!("connection {index} ({mode:?}): {e}"));
                    }
                }
            });
        }
    });
    range.filter(|&i| Mode::of(i).is_served()).count() as u64
}

// ---------------------------------------------------------------------------------
// Descriptors, limits, memory, metrics
// ---------------------------------------------------------------------------------

/// The open descriptors (not counting the one that reads the directory).
fn open_fds() -> Vec<i32> {
    let dir = fs::read_dir("/proc/self/fd").expect("read /proc/self/fd");
    let mut fds: Vec<i32> = dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect();
    // The directory's own descriptor is the one that no longer exists.
    fds.retain(|&fd| fs::metadata(format!("/proc/self/fd/{fd}")).is_ok());
    fds.sort_unstable();
    fds
}

fn fd_count() -> usize {
    open_fds().len()
}

fn nofile() -> libc::rlimit {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid `rlimit` to write to.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(rc, 0, "getrlimit: {}", io::Error::last_os_error());
    limit
}

/// The process's descriptor count once it has not moved for 100 ms (at most 2 s).
fn steady_fd_count() -> usize {
    let mut last = fd_count();
    let mut same = 0;
    for _ in 0..100 {
        thread::sleep(Duration::from_millis(20));
        let now = fd_count();
        same = if now == last { same + 1 } else { 0 };
        last = now;
        if same == 5 {
            break;
        }
    }
    last
}

/// Duplicates a descriptor of `/dev/null` until the process has none left (EMFILE).
fn exhaust_descriptors() -> Vec<OwnedFd> {
    let null = fs::File::open("/dev/null").expect("open /dev/null");
    let mut fillers = Vec::new();
    loop {
        // SAFETY: F_DUPFD_CLOEXEC on an open descriptor; the result is checked.
        let fd = unsafe { libc::fcntl(null.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "dup: {e}");
            break;
        }
        // SAFETY: a new descriptor, owned by nobody else.
        fillers.push(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    drop(null);
    // `null` itself is free again: take it too.
    // SAFETY: as above; the duplicate of a filler is checked like the others.
    let fd = unsafe { libc::fcntl(fillers[0].as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if fd >= 0 {
        // SAFETY: a new descriptor, owned by nobody else.
        fillers.push(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    fillers
}

fn rss_bytes() -> u64 {
    let statm = fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("resident pages in /proc/self/statm");
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page as u64
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Live tasks and registrations, summed over the runtime's loops.
fn loop_figures(rt: &Runtime) -> (usize, usize) {
    rt.handle().event_loops().iter().fold((0, 0), |(tasks, regs), l| {
        let m = l.metrics();
        (tasks + m.live_tasks, regs + m.registrations)
    })
}

/// Waits until every connection opened so far was accepted and finished, the loops
/// report `tasks` live tasks and `regs` registrations, and `fds` descriptors are open.
fn settle(rt: &Runtime, server: &Server, opened: u64, tasks: usize, regs: usize, fds: usize) -> Result<(), String> {
    let start = Instant::now();
    loop {
        let (accepted, finished) = (server.accepted.load(Relaxed), server.finished.load(Relaxed));
        let (live, registered) = loop_figures(rt);
        let open = fd_count();
        if accepted == opened && finished == opened && live == tasks && registered == regs && open == fds {
            return Ok(());
        }
        if start.elapsed() > SETTLE_LIMIT {
            return Err(format!(
                "the server did not settle within {SETTLE_LIMIT:?}: {opened} connections opened, \
                 {accepted} accepted, {finished} finished; {live} live tasks (want {tasks}), \
                 {registered} registrations (want {regs}), {open} descriptors (want {fds})"
            ));
        }
        thread::sleep(Duration::from_millis(2));
    }
}

// ---------------------------------------------------------------------------------
// The burst at the descriptor limit
// ---------------------------------------------------------------------------------

fn socket_v4() -> OwnedFd {
    // SAFETY: plain socket(2); the result is checked before it is owned.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0, "socket: {}", io::Error::last_os_error());
    // SAFETY: `fd` was just opened and is owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn connect_v4(fd: &OwnedFd, addr: SocketAddr) -> io::Result<()> {
    let SocketAddr::V4(v4) = addr else {
        panic!("the server listens on IPv4")
    };
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(v4.ip().octets()),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: `fd` is an open socket and `sin` a valid IPv4 address of the size given.
    let rc = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&raw const sin).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

struct Burst {
    /// From restoring the limit to the last reply.
    recovery: Duration,
}

/// `size` clients connect and send a request while the process cannot open another
/// descriptor; the acceptor must stall on EMFILE, then serve them all once the limit
/// is back. Connection indices start at `first`.
fn burst(addr: SocketAddr, server: &Server, first: u64, size: u64) -> Result<Burst, String> {
    // The clients' sockets exist before the descriptors run out: connecting needs no
    // new descriptor, accepting does.
    let sockets: Vec<OwnedFd> = (0..size).map(|_| socket_v4()).collect();
    let accepted_before = server.accepted.load(Relaxed);
    // Every free descriptor number up to the limit is taken, as a process that has
    // really run out finds it. (Lowering RLIMIT_NOFILE instead would not stop an
    // io_uring multishot accept: the kernel reads the limit when the accept is
    // submitted, not at each connection.)
    let fillers = exhaust_descriptors();
    let mut streams = Vec::new();
    let mut failure = None;
    for (k, fd) in sockets.into_iter().enumerate() {
        let index = first + k as u64;
        let attempt = connect_v4(&fd, addr).and_then(|()| {
            let mut stream = StdStream::from(fd);
            stream.set_read_timeout(Some(IO_LIMIT))?;
            stream.set_write_timeout(Some(IO_LIMIT))?;
            stream.write_all(&request(index, Mode::Clean))?;
            Ok(stream)
        });
        match attempt {
            Ok(stream) => streams.push((index, stream)),
            Err(e) => {
                failure = Some(format!("burst connection {index}: {e}"));
                break;
            }
        }
    }
    thread::sleep(STALL_WINDOW);
    let accepted_at_limit = server.accepted.load(Relaxed) - accepted_before;
    drop(fillers);
    let restored = Instant::now();
    if let Some(failure) = failure {
        return Err(failure);
    }
    if accepted_at_limit != 0 {
        return Err(format!(
            "the acceptor accepted {accepted_at_limit} of {size} connections at the descriptor limit"
        ));
    }
    for (index, mut stream) in streams {
        expect_reply(&mut stream, request(index, Mode::Clean))
            .and_then(|()| expect_eof(&mut stream))
            .map_err(|e| format!("burst connection {index} after the limit was restored: {e}"))?;
    }
    Ok(Burst {
        recovery: restored.elapsed(),
    })
}

// ---------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value}: not a number")),
    )
}

fn main() -> ExitCode {
    let Some(connections) = env_u64("SOAK_CONNECTIONS") else {
        println!("soak: skipped (set SOAK_CONNECTIONS, e.g. 100000; see .ci/soak.sh)");
        return ExitCode::SUCCESS;
    };
    let clients = env_u64("SOAK_CLIENTS").unwrap_or(4).max(1);
    let burst_size = env_u64("SOAK_BURST").unwrap_or(128).max(1);
    match run(connections.max(PHASES), clients, burst_size) {
        Ok(()) => {
            println!("soak: ok");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("soak: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(connections: u64, clients: u64, burst_size: u64) -> Result<(), String> {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Relaxed);
        default_hook(info);
    }));

    let fds_at_start = fd_count();
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("build the runtime: {e}"))?;
    let server = Arc::new(Server::default());
    let (addr, acceptor, fds_before_listener) = rt
        .block_on(async {
            let fds_before_listener = fd_count();
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            let server = server.clone();
            let acceptor = serve(listener, move |stream, _peer| handle(stream, server.clone()));
            io::Result::Ok((addr, acceptor, fds_before_listener))
        })
        .map_err(|e| format!("bind the server: {e}"))?;
    // The acceptor's task and the listener's registration, once it has started.
    // (The descriptor count once it holds still: on io_uring the acceptor's first poll
    // adds its accept's own duplicate of the listener.)
    settle(&rt, &server, 0, 1, 1, steady_fd_count())?;
    let fds_serving = fd_count();
    println!(
        "soak: {connections} connections + {} in bursts of {burst_size} at the descriptor limit \
         (RLIMIT_NOFILE {}), {clients} client threads, 2 loops, server {addr}; \
         {fds_at_start} descriptors before the runtime, {fds_serving} serving",
        BURST_PHASES.len() as u64 * burst_size,
        nofile().rlim_cur,
    );

    let failures = Failures::default();
    let mut opened = 0u64;
    let mut expect_served = 0u64;
    let mut rss_reference = 0;
    let mut churn_time = Duration::ZERO;
    let start = Instant::now();
    for phase in 0..PHASES {
        let phase_start = Instant::now();
        let mut burst_note = String::new();
        if BURST_PHASES.contains(&phase) {
            let b = burst(addr, &server, connections + opened, burst_size)?;
            opened += burst_size;
            expect_served += burst_size;
            burst_note = format!(
                "; burst: none of {burst_size} accepted at the limit, all served {:.2} s after it was lifted",
                b.recovery.as_secs_f64()
            );
        }
        let churn_start = Instant::now();
        let range = phase * connections / PHASES..(phase + 1) * connections / PHASES;
        opened += range.end - range.start;
        expect_served += churn(addr, range.clone(), clients, &failures);
        churn_time += churn_start.elapsed();
        settle(&rt, &server, opened, 1, 1, fds_serving)?;
        let rss = rss_bytes();
        if phase == 0 {
            rss_reference = rss;
        }
        println!(
            "phase {:>2}/{PHASES}: {:>9} connections, {:6.2} s, {:7.0} conn/s, {} descriptors, RSS {:.1} MiB{burst_note}",
            phase + 1,
            range.end,
            phase_start.elapsed().as_secs_f64(),
            (range.end - range.start) as f64 / churn_start.elapsed().as_secs_f64(),
            fd_count(),
            mib(rss),
        );
        let failed = failures.count.load(Relaxed);
        if failed > 0 {
            let first = failures.first.lock().unwrap_or_else(|e| e.into_inner());
            return Err(format!("{failed} client connections failed; the first: {first:#?}"));
        }
    }
    let elapsed = start.elapsed();
    let rss_end = rss_bytes();
    let (live_serving, regs_serving) = loop_figures(&rt);

    acceptor.abort();
    let aborted = rt.block_on(acceptor);
    if !aborted.as_ref().is_err_and(|e| e.is_cancelled()) {
        return Err(format!("the aborted acceptor ended with {aborted:?}"));
    }
    // The listener's descriptors are gone (on io_uring, its accept's own duplicate too).
    settle(&rt, &server, opened, 0, 0, fds_before_listener)?;
    let (live_end, regs_end) = loop_figures(&rt);
    rt.shutdown_timeout(SETTLE_LIMIT);
    let fds_end = {
        let deadline = Instant::now() + SETTLE_LIMIT;
        while fd_count() != fds_at_start && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(2));
        }
        fd_count()
    };

    let served = server.served.load(Relaxed);
    let cut_short = server.cut_short.load(Relaxed);
    let errors = server.errors.load(Relaxed);
    let panics = PANICS.load(Relaxed);
    let drift = (rss_end as f64 - rss_reference as f64) / rss_reference as f64;
    println!(
        "soak: {opened} connections in {:.1} s ({:.0} conn/s over the churn, {:.1} s of it); \
         server: {served} replies, {cut_short} requests cut short, {errors} errors; {panics} panics",
        elapsed.as_secs_f64(),
        connections as f64 / churn_time.as_secs_f64(),
        churn_time.as_secs_f64(),
    );
    println!(
        "soak: descriptors {fds_at_start} before the runtime, {fds_serving} serving, {fds_end} after it; \
         live tasks / registrations {live_serving} / {regs_serving} serving (the acceptor, the listener), \
         {live_end} / {regs_end} after the acceptor's abort"
    );
    println!(
        "soak: RSS {:.2} MiB after 10%, {:.2} MiB at the end ({:+.2}%, limit ±{:.0}%)",
        mib(rss_reference),
        mib(rss_end),
        drift * 100.0,
        RSS_TOLERANCE * 100.0
    );

    // Under NETLOOP_IO_DRIVER=io_uring the churn must have run on the ring: every
    // stream that read its request read it through a multishot receive.
    let on_ring = server.on_ring.load(Relaxed);
    let want_ring = std::env::var(netloop::event_loop::IO_DRIVER_ENV).is_ok_and(|v| v == "io_uring");
    println!("soak: {on_ring} of the streams that read a request read it through io_uring");

    let mut problems = Vec::new();
    if want_ring && on_ring < served {
        problems.push(format!(
            "NETLOOP_IO_DRIVER=io_uring, but only {on_ring} streams were on the ring for {served} replies"
        ));
    }
    if served != expect_served {
        problems.push(format!("{served} replies written, {expect_served} expected"));
    }
    if cut_short != opened - expect_served {
        problems.push(format!(
            "{cut_short} requests cut short, {} expected",
            opened - expect_served
        ));
    }
    if errors != 0 {
        problems.push(format!("{errors} server-side errors"));
    }
    if panics != 0 {
        problems.push(format!("{panics} panics"));
    }
    if fds_end != fds_at_start {
        problems.push(format!(
            "{fds_end} descriptors open at the end, {fds_at_start} at the start"
        ));
    }
    if live_end != 0 || regs_end != 0 {
        problems.push(format!("{live_end} live tasks and {regs_end} registrations left"));
    }
    if drift.abs() > RSS_TOLERANCE {
        problems.push(format!("RSS moved {:+.2}% since 10% of the run", drift * 100.0));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}
