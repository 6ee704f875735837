//! The load client: plain mio on one thread, no futures.
//!
//! It opens [`Config::connections`] connections, each with at most one request in
//! flight, and checks every reply byte for byte. Two shapes:
//!
//! - **closed loop** (`rate: None`): every connection sends its next request as soon as
//!   the reply to the last one is in, for `duration`;
//! - **fixed rate** (`rate: Some(r)`): the client sends each request when the schedule
//!   of `r` per second makes it due, on an idle connection (first idle, first used). A
//!   request that finds no idle connection waits for one; its latency is then counted
//!   from the time it was due, not from when it was sent, so a server that falls behind
//!   shows it in the tail. Every server gets the same offered load.
//!
//! By default the client spins ([`Config::spin`]): it polls with a zero timeout and
//! never sleeps, since it has a core of its own. That keeps its own wake-ups out of the
//! picture: a sleeping client on a VM falls now and then into a lock-step with the
//! server (each side woken once per request, both slow), which changes the server's
//! batching and so its CPU per request from run to run. It also paces the fixed-rate
//! shape exactly (at 50k/s, one request every 20 µs). Without `spin` the client blocks
//! in `epoll_wait`, and the fixed-rate shape is paced by a timerfd ticking every
//! [`Config::tick`] (bursts of `r * tick` requests).
//!
//! After `duration` the client sends nothing more, waits up to a second for the
//! replies in flight, and closes every connection.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

/// What to send and how.
#[derive(Clone, Debug)]
pub struct Config {
    /// The server (a loopback address).
    pub addr: SocketAddr,
    /// Connections, each with one request in flight at most.
    pub connections: usize,
    /// How long requests are sent.
    pub duration: Duration,
    /// One request.
    pub request: Vec<u8>,
    /// The reply every request must get, byte for byte.
    pub reply: Vec<u8>,
    /// Round trips per second over all connections; `None`: closed loop.
    pub rate: Option<f64>,
    /// Pacing granularity of the fixed-rate shape when not spinning.
    pub tick: Duration,
    /// Never sleep: poll with a zero timeout (the client has a core of its own). The
    /// fixed-rate shape then sends each request when it is due, with no timer.
    pub spin: bool,
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// Replies received before the end of `duration`.
    pub completed: u64,
    /// Replies received in all (the few in flight at the end included).
    pub total: u64,
    /// From the first request to the end of `duration`.
    pub elapsed: Duration,
    /// Round-trip latencies in µs, sorted (fixed rate: from the time it was due).
    pub latencies_us: Vec<u32>,
    /// Most requests that were due but found no idle connection at once.
    pub max_backlog: u64,
    /// Requests sent more than 1 ms after they were due.
    pub late: u64,
}

impl Report {
    /// Round trips per second.
    pub fn rate(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64()
    }

    /// The `q` quantile of the latency, in µs.
    pub fn latency_us(&self, q: f64) -> u32 {
        if self.latencies_us.is_empty() {
            return 0;
        }
        let i = ((self.latencies_us.len() - 1) as f64 * q).round() as usize;
        self.latencies_us[i]
    }
}

const TIMER: Token = Token(usize::MAX);

struct Conn {
    stream: TcpStream,
    /// Bytes of the current request written.
    sent: usize,
    /// Bytes of the current reply received.
    received: usize,
    busy: bool,
    /// When the current request was sent (closed loop) or due (fixed rate).
    started: Instant,
}

struct Client<'a> {
    config: &'a Config,
    conns: Vec<Conn>,
    idle: VecDeque<usize>,
    scratch: Vec<u8>,
    latencies: Vec<u32>,
    completed: u64,
    total: u64,
    sending: bool,
    deadline: Instant,
}

/// Runs one load shape against `config.addr`.
pub fn run(config: &Config) -> io::Result<Report> {
    let mut poll = Poll::new()?;
    let mut conns = Vec::with_capacity(config.connections);
    for i in 0..config.connections {
        let stream = std::net::TcpStream::connect(config.addr)?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        let mut stream = TcpStream::from_std(stream);
        poll.registry()
            .register(&mut stream, Token(i), Interest::READABLE | Interest::WRITABLE)?;
        conns.push(Conn {
            stream,
            sent: 0,
            received: 0,
            busy: false,
            started: Instant::now(),
        });
    }
    let timer = match config.rate {
        Some(_) if !config.spin => {
            let fd = timerfd(config.tick)?;
            poll.registry()
                .register(&mut SourceFd(&fd.as_raw_fd()), TIMER, Interest::READABLE)?;
            Some(fd)
        }
        _ => None,
    };

    let start = Instant::now();
    let deadline = start + config.duration;
    let capacity = config
        .rate
        .map_or(1 << 20, |r| (r * config.duration.as_secs_f64()) as usize + 1024);
    let mut client = Client {
        config,
        conns,
        idle: (0..config.connections).collect(),
        scratch: vec![0u8; 64 * 1024],
        latencies: Vec::with_capacity(capacity),
        completed: 0,
        total: 0,
        sending: true,
        deadline,
    };
    let mut events = Events::with_capacity(1024);
    let mut issued: u64 = 0;
    let mut max_backlog = 0;
    let mut late = 0;

    if config.rate.is_none() {
        while let Some(i) = client.idle.pop_front() {
            client.send(i, Instant::now())?;
        }
    }
    let mut drain_until = None;
    loop {
        let now = Instant::now();
        if client.sending && now >= deadline {
            client.sending = false;
            drain_until = Some(now + Duration::from_secs(1));
        }
        if let Some(until) = drain_until
            && (now >= until || client.conns.iter().all(|c| !c.busy))
        {
            break;
        }
        let timeout = if config.spin {
            Duration::ZERO
        } else if client.sending {
            deadline - now
        } else {
            Duration::from_millis(10)
        };
        match poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for event in events.iter() {
            if event.token() == TIMER {
                if let Some(fd) = &timer {
                    drain_timer(fd);
                }
                continue;
            }
            let i = event.token().0;
            if event.is_writable() && client.conns[i].busy && client.conns[i].sent < config.request.len() {
                client.write_request(i)?;
            }
            if event.is_readable() || event.is_read_closed() || event.is_error() {
                client.read_reply(i)?;
            }
        }
        if let Some(rate) = config.rate
            && client.sending
        {
            let now = Instant::now();
            let due = ((now - start).as_secs_f64() * rate) as u64;
            while issued < due {
                let Some(i) = client.idle.pop_front() else { break };
                let due_at = start + Duration::from_secs_f64(issued as f64 / rate);
                if now.duration_since(due_at) > Duration::from_millis(1) {
                    late += 1;
                }
                client.send(i, due_at)?;
                issued += 1;
            }
            max_backlog = max_backlog.max(due - issued);
        }
    }
    let mut latencies_us = client.latencies;
    latencies_us.sort_unstable();
    Ok(Report {
        completed: client.completed,
        total: client.total,
        elapsed: config.duration,
        latencies_us,
        max_backlog,
        late,
    })
}

impl Client<'_> {
    /// Starts a request on idle connection `i`.
    fn send(&mut self, i: usize, started: Instant) -> io::Result<()> {
        let conn = &mut self.conns[i];
        conn.busy = true;
        conn.sent = 0;
        conn.received = 0;
        conn.started = started;
        self.write_request(i)
    }

    fn write_request(&mut self, i: usize) -> io::Result<()> {
        let config = self.config;
        let request = &config.request;
        let conn = &mut self.conns[i];
        while conn.sent < request.len() {
            match conn.stream.write(&request[conn.sent..]) {
                Ok(n) => conn.sent += n,
                // The writable edge resumes it.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn read_reply(&mut self, i: usize) -> io::Result<()> {
        let config = self.config;
        let reply = &config.reply;
        loop {
            let conn = &mut self.conns[i];
            let n = match conn.stream.read(&mut self.scratch) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed a connection",
                    ));
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let end = conn.received + n;
            if !conn.busy || end > reply.len() || self.scratch[..n] != reply[conn.received..end] {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "unexpected reply bytes"));
            }
            conn.received = end;
            if end == reply.len() {
                let now = Instant::now();
                conn.busy = false;
                let us = now.duration_since(conn.started).as_micros();
                self.latencies.push(us.min(u32::MAX as u128) as u32);
                self.total += 1;
                if now <= self.deadline {
                    self.completed += 1;
                }
                if self.sending && config.rate.is_none() {
                    self.send(i, now)?;
                } else {
                    self.idle.push_back(i);
                }
            }
            if n < self.scratch.len() {
                // Drained: the next bytes bring a new edge.
                return Ok(());
            }
        }
    }
}

/// A non-blocking periodic timerfd firing every `interval`.
fn timerfd(interval: Duration) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the result is checked.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let ts = libc::timespec {
        tv_sec: interval.as_secs() as libc::time_t,
        tv_nsec: interval.subsec_nanos() as _,
    };
    let spec = libc::itimerspec {
        it_interval: ts,
        it_value: ts,
    };
    // SAFETY: `fd` is a timerfd, `spec` a valid itimerspec, the old value not wanted.
    if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Reads the expiration count, re-arming the (edge-triggered) readiness.
fn drain_timer(fd: &OwnedFd) {
    let mut expirations = [0u8; 8];
    // SAFETY: reads 8 bytes into an 8-byte buffer from a descriptor we own.
    let _ = unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), expirations.len()) };
}
