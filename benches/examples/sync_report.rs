//! netloop's own synchronization primitives against tokio's (issue 32), from the same
//! source (`benches/sync_shapes.rs`), in three configurations in one process:
//!
//! - (a) netloop's runtime with netloop's primitives (`netloop::sync`),
//! - (b) netloop's runtime with `tokio::sync`: (a)/(b) is the primitives alone,
//! - (c) tokio's runtime with `tokio::sync`: (a)/(c) is what a program moving from
//!   tokio gets. The goal is (a)/(c) <= 1.0 on every shape, well under it where sender
//!   and receiver share a loop.
//!
//! ```text
//! cargo run --release -p netloop-benches --example sync_report [-- ROUNDS]
//! SYNC_REPORT_SCALE=0.05 cargo run --release -p netloop-benches --example sync_report -- 1
//! ```
//!
//! Each configuration is a multi-thread runtime with 2 workers. The three runtimes of
//! the time shapes live for the whole run (an idle one uses no CPU); each memory
//! measurement builds a fresh one. Time shapes: one untimed warm-up round, then ROUNDS
//! (default 5); in every round each shape runs once per configuration, in an order
//! rotating from round to round, so that a slow patch of a shared machine hits all
//! three alike. The table shows the median, the ratios, and each configuration's
//! spread ((max - min) / median). Memory shapes: one warm-up and 3 rounds, bytes per
//! item counted by this binary's global allocator (bytes requested: not the allocator's
//! own overhead of about 8-16 bytes per block, hence the blocks per item).
//! `SYNC_REPORT_SCALE` (default 1) multiplies every count. Every shape also prints one
//! line starting `sync_report` of `key=value` fields. Figures are printed, never
//! asserted.
//!
//! Time shapes (counts at scale 1):
//!
//! - mpsc, bounded (1,024) and unbounded, 1 and 4 producers sending 200,000 messages in
//!   all to one receiver, the producers on the receiver's loop (spawned from its task)
//!   or on the other loop (`spawn_on`);
//! - 100,000 oneshot round trips (the request over an unbounded mpsc, the reply on the
//!   oneshot), the responder on the same or the other loop;
//! - a `Mutex<u64>` taken 50,000 times by each of 4 tasks, and a `Semaphore` of 2
//!   permits acquired 50,000 times by each of 8 tasks, every 16th guard or permit held
//!   across a `yield_now`; the tasks on the same loop or spread (loop `k % 2`);
//! - 50,000 messages broadcast to 16 receivers over a channel of 256, the receivers on
//!   the same loop or spread;
//! - 100,000 `Notify` ping-pong round trips, the responder on the same or the other
//!   loop.
//!
//! tokio has no placement: there "other" and "spread" are a plain `spawn` too, which
//! its scheduler usually keeps on the spawning worker until the other one steals it.
//!
//! Memory shapes: 100,000 idle channels held (bounded mpsc, unbounded mpsc, oneshot);
//! 50,000 tasks waiting on a `Mutex`, a `Semaphore`, a `Notify`, in `recv` on a bounded
//! channel of their own (the channel included), and on nothing (`pending()`: the task
//! alone, to subtract).

use netloop_benches::report::{median_spread, rotated_rounds};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicIsize};
use std::time::Duration;

/// netloop's placement: the loops are addressable.
mod netloop_place {
    use std::future::Future;

    use netloop::task::JoinHandle;

    /// On the `k`th of the loops other than the caller's, round-robin.
    pub fn spawn_other<F>(k: usize, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = netloop::runtime::Handle::current();
        let loops = handle.event_loops();
        let mut i = k % (loops.len() - 1).max(1);
        if netloop::runtime::worker_index().is_some_and(|here| i >= here) {
            i += 1;
        }
        netloop::task::spawn_on(loops.get(i).expect("another loop"), future)
    }

    /// On loop `k % loops`.
    pub fn spawn_spread<F>(k: usize, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = netloop::runtime::Handle::current();
        let loops = handle.event_loops();
        netloop::task::spawn_on(loops.get(k % loops.len()).expect("a loop"), future)
    }
}

/// tokio's placement: none, its workers steal; both are `tokio::spawn`.
mod tokio_place {
    use std::future::Future;

    use tokio::task::JoinHandle;

    pub fn spawn_other<F>(_k: usize, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        tokio::spawn(future)
    }

    pub use spawn_other as spawn_spread;
}

/// (a) netloop's runtime, netloop's primitives.
mod own {
    use super::netloop_place as place;
    use netloop as rt;
    use netloop::sync;
    include!("../sync_shapes.rs");
}

/// (b) netloop's runtime, tokio's primitives.
mod netloop_tokio {
    use super::netloop_place as place;
    use netloop as rt;
    use tokio::sync;
    include!("../sync_shapes.rs");
}

/// (c) tokio's runtime, tokio's primitives.
mod tokio_tokio {
    use super::tokio_place as place;
    use tokio as rt;
    use tokio::sync;
    include!("../sync_shapes.rs");
}

/// Where a shape's helper tasks go (see `sync_shapes.rs`).
#[derive(Clone, Copy, Debug)]
enum At {
    /// Spawned from the shape's task: on netloop, its loop.
    Same,
    /// On loops other than the shape's task's.
    Other,
    /// The `k`th on loop `k % loops`.
    Spread,
}

/// A timed shape and its counts.
#[derive(Clone, Copy, Debug)]
enum Timed {
    Mpsc {
        bounded: bool,
        producers: usize,
        at: At,
        n: u64,
    },
    Oneshot {
        at: At,
        n: u64,
    },
    Mutex {
        tasks: usize,
        at: At,
        n: u64,
    },
    Semaphore {
        tasks: usize,
        permits: usize,
        at: At,
        n: u64,
    },
    Broadcast {
        receivers: usize,
        at: At,
        n: u64,
    },
    Notify {
        at: At,
        n: u64,
    },
}

/// A memory shape: the item held N times.
#[derive(Clone, Copy, Debug)]
enum Memory {
    Bounded,
    Unbounded,
    Oneshot,
    Pending,
    Mutex,
    Semaphore,
    Notify,
    Recv,
}

/// The allocator's growth over a window: bytes requested and blocks, net of frees.
#[derive(Clone, Copy, Debug)]
struct Usage {
    bytes: isize,
    blocks: isize,
}

static COUNTING: AtomicBool = AtomicBool::new(false);
static BYTES: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting while a [`Window`] is open (one relaxed load per
/// call otherwise).
struct Counting;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn count(bytes: isize, blocks: isize) {
    if COUNTING.load(Relaxed) {
        BYTES.fetch_add(bytes, Relaxed);
        BLOCKS.fetch_add(blocks, Relaxed);
    }
}

// SAFETY: every call is passed on to `System` unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize, 1);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize, 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System.dealloc`'s.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize), -1);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `System.realloc`'s.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize, 0);
        }
        p
    }
}

/// Counts the allocator's growth from `open` until dropped; one at a time. Blocks
/// allocated before and freed inside the window count negative: the shapes open it on
/// a quiet runtime.
struct Window;

impl Window {
    fn open() -> Window {
        assert!(!COUNTING.load(Relaxed), "one window at a time");
        BYTES.store(0, Relaxed);
        BLOCKS.store(0, Relaxed);
        COUNTING.store(true, Relaxed);
        Window
    }

    fn read(&self) -> Usage {
        Usage {
            bytes: BYTES.load(Relaxed),
            blocks: BLOCKS.load(Relaxed),
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        COUNTING.store(false, Relaxed);
    }
}

/// Memory rounds after the warm-up.
const MEMORY_ROUNDS: usize = 3;

/// One configuration: its runtime for the time shapes inside `timed`; each memory
/// shape builds its own.
struct Config {
    sync: &'static str,
    timed: Box<dyn Fn(Timed) -> Duration>,
    memory: fn(Memory, usize) -> Usage,
}

macro_rules! config {
    ($module:ident) => {{
        let rt = $module::two_workers();
        Config {
            sync: $module::mutex_type(),
            timed: Box::new(move |shape| $module::timed(&rt, shape)),
            memory: $module::memory,
        }
    }};
}

/// The timed shapes at `scale`: key, label, shape.
fn timed_shapes(scale: f64) -> Vec<(String, String, Timed)> {
    let count = |n: f64| ((n * scale) as u64).max(4);
    let mut shapes = Vec::new();
    let n = count(200_000.0);
    for bounded in [true, false] {
        for producers in [1, 4] {
            for (at, place) in [(At::Same, "same"), (At::Other, "other")] {
                let kind = if bounded { "bounded" } else { "unbounded" };
                let label = format!("mpsc {kind}, {producers} producer(s) on {place} loop(s), {n} msgs");
                let shape = Timed::Mpsc {
                    bounded,
                    producers,
                    at,
                    n,
                };
                shapes.push((format!("mpsc_{kind}_{producers}p_{place}"), label, shape));
            }
        }
    }
    let n = count(100_000.0);
    for (at, place) in [(At::Same, "same"), (At::Other, "other")] {
        let label = format!("oneshot round trip, responder on {place} loop, {n}x");
        shapes.push((format!("oneshot_{place}"), label, Timed::Oneshot { at, n }));
    }
    let n = count(50_000.0);
    for (at, place) in [(At::Same, "same"), (At::Spread, "spread")] {
        let label = format!("Mutex, 4 tasks on {place} loop(s) x {n} lock/increment");
        shapes.push((format!("mutex_4x_{place}"), label, Timed::Mutex { tasks: 4, at, n }));
        let label = format!("Semaphore(2), 8 tasks on {place} loop(s) x {n} acquires");
        let shape = Timed::Semaphore {
            tasks: 8,
            permits: 2,
            at,
            n,
        };
        shapes.push((format!("semaphore_8x2_{place}"), label, shape));
        let label = format!("broadcast(256) to 16 receivers on {place} loop(s), {n} msgs");
        let shape = Timed::Broadcast { receivers: 16, at, n };
        shapes.push((format!("broadcast_16_{place}"), label, shape));
    }
    let n = count(100_000.0);
    for (at, place) in [(At::Same, "same"), (At::Other, "other")] {
        let label = format!("Notify ping-pong, responder on {place} loop, {n}x");
        shapes.push((format!("notify_{place}"), label, Timed::Notify { at, n }));
    }
    shapes
}

/// The memory shapes at `scale`: key, label, shape, N.
fn memory_shapes(scale: f64) -> Vec<(&'static str, &'static str, Memory, usize)> {
    let (channels, tasks) = (
        ((100_000.0 * scale) as usize).max(10),
        ((50_000.0 * scale) as usize).max(10),
    );
    vec![
        (
            "idle_bounded",
            "idle bounded mpsc channel (1,024)",
            Memory::Bounded,
            channels,
        ),
        (
            "idle_unbounded",
            "idle unbounded mpsc channel",
            Memory::Unbounded,
            channels,
        ),
        ("idle_oneshot", "idle oneshot channel", Memory::Oneshot, channels),
        (
            "task_pending",
            "task awaiting `pending()` (the task alone)",
            Memory::Pending,
            tasks,
        ),
        ("task_mutex", "task waiting on a `Mutex`", Memory::Mutex, tasks),
        (
            "task_semaphore",
            "task waiting on a `Semaphore`",
            Memory::Semaphore,
            tasks,
        ),
        ("task_notify", "task waiting on a `Notify`", Memory::Notify, tasks),
        (
            "task_recv",
            "task waiting in `recv`, its bounded channel included",
            Memory::Recv,
            tasks,
        ),
    ]
}

/// The median of `v`, and its spread: (max - min) / median.
fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    let scale: f64 = std::env::var("SYNC_REPORT_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let started = std::time::Instant::now();
    let configs = [config!(own), config!(netloop_tokio), config!(tokio_tokio)];
    println!("Configurations (2 workers each; scale {scale}, {rounds} rounds after a warm-up):\n");
    for (name, config) in ["(a) netloop runtime", "(b) netloop runtime", "(c) tokio runtime"]
        .iter()
        .zip(&configs)
    {
        println!("- {name}, `{}`", config.sync);
    }
    if configs[0].sync == configs[1].sync {
        println!("\n(a) and (b) run the same primitives: `netloop::sync` is still tokio's.");
    }

    let shapes = timed_shapes(scale);
    let shape_values: Vec<_> = shapes.iter().map(|(_, _, shape)| *shape).collect();
    let times = rotated_rounds(
        rounds,
        &shape_values,
        [&*configs[0].timed, &*configs[1].timed, &*configs[2].timed],
    );
    println!("\nMedian time in ms; spread = (max - min) / median over the rounds.\n");
    println!(
        "| shape | (a) netloop + own | (b) netloop + tokio's | (c) tokio + tokio's | (a)/(c) | (a)/(b) | spread a / b / c |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut lines = Vec::new();
    let mut above = Vec::new();
    for ((key, label, _), times) in shapes.iter().zip(times) {
        let [(a, sa), (b, sb), (c, sc)] = times.map(median_spread);
        println!(
            "| {label} | {a:.2} | {b:.2} | {c:.2} | {:.2} | {:.2} | {:.0}% / {:.0}% / {:.0}% |",
            a / c,
            a / b,
            sa * 100.0,
            sb * 100.0,
            sc * 100.0
        );
        if a > c {
            above.push(key.as_str());
        }
        lines.push(format!(
            "sync_report time shape={key} scale={scale} rounds={rounds} a_ms={a:.3} b_ms={b:.3} c_ms={c:.3} a_over_c={:.3} a_over_b={:.3} \
             spread_a={sa:.3} spread_b={sb:.3} spread_c={sc:.3}",
            a / c,
            a / b
        ));
    }
    if !above.is_empty() {
        println!("\nAbove 1.0x tokio's time ((a)/(c)): {}.", above.join(", "));
    }

    let items = memory_shapes(scale);
    // usage[item][config]: bytes and blocks per item.
    let mut usage: Vec<[Vec<(f64, f64)>; 3]> = items.iter().map(|_| Default::default()).collect();
    for round in 0..=MEMORY_ROUNDS {
        eprintln!(
            "memory round {round} of {MEMORY_ROUNDS} ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
        for (&(_, _, shape, n), usage) in items.iter().zip(&mut usage) {
            for (config, usage) in configs.iter().zip(usage.iter_mut()) {
                let u = (config.memory)(shape, n);
                if round > 0 {
                    usage.push((u.bytes as f64 / n as f64, u.blocks as f64 / n as f64));
                }
            }
        }
    }
    println!("\nAllocated bytes per item (requested sizes; blocks per item in brackets), median of {MEMORY_ROUNDS}.\n");
    println!("| item | N | (a) | (b) | (c) | (a)/(c) | (a)/(b) |");
    println!("|---|---|---|---|---|---|---|");
    for (&(key, label, _, n), usage) in items.iter().zip(usage) {
        let [(a, ka), (b, kb), (c, kc)] = usage.map(|u| {
            let (bytes, blocks): (Vec<f64>, Vec<f64>) = u.into_iter().unzip();
            (median_spread(bytes).0, median_spread(blocks).0)
        });
        println!(
            "| {label} | {n} | {a:.0} ({ka:.1}) | {b:.0} ({kb:.1}) | {c:.0} ({kc:.1}) | {:.2} | {:.2} |",
            a / c,
            a / b
        );
        lines.push(format!(
            "sync_report memory item={key} n={n} rounds={MEMORY_ROUNDS} a_bytes={a:.1} b_bytes={b:.1} c_bytes={c:.1} \
             a_blocks={ka:.2} b_blocks={kb:.2} c_blocks={kc:.2}"
        ));
    }
    println!();
    for line in lines {
        println!("{line}");
    }
    eprintln!("sync_report: {:.0} s", started.elapsed().as_secs_f64());
}
