//! Timers at scale on netloop and tokio, from the same source (`benches/timer_shapes.rs`):
//! 1M pending timers scheduled then cancelled, one by one and in bulk; 100k idle
//! timeouts reset 10 times each, visiting the connections in creation order and in a
//! scattered one; and 1M timers firing over 10 s (lateness, none early).
//!
//! ```sh
//! cargo run --release -p netloop-benches --example timers_report            # 7 rounds
//! cargo run --release -p netloop-benches --example timers_report -- 3 fire  # 3, and the firing shape
//! cargo run --release -p netloop-benches --example timers_report -- --only netloop 0   # for a profiler
//! ```
//!
//! The first four shapes run in a task of a current-thread runtime, polling with the
//! task's waker; the next two in the body of `block_on` of a 2-worker runtime (where
//! `#[main]`'s own code runs), polling with its waker; the last three on that 2-worker
//! runtime too: 1M sleeps whose deadlines are spread over 1,000 distinct seconds, all
//! polled in one poll and then dropped, in a spawned task and in `block_on`'s body, and
//! the idle timeouts reset in a spawned task. The runtimes are interleaved
//! round by round; each shape prints the median time. The firing shape
//! (only with `fire`, about 25 s) runs 1M tasks on a 2-worker runtime of each kind.

use std::time::Duration;

mod on_netloop {
    #![allow(dead_code)]
    use netloop as rt;
    include!("../timer_shapes.rs");
}

mod on_tokio {
    #![allow(dead_code)]
    use tokio as rt;
    include!("../timer_shapes.rs");
}

const PENDING: usize = 1_000_000;
const CONNS: usize = 100_000;
const RESETS: usize = 10;
const FIRING: usize = 1_000_000;
const FIRING_SPAN: Duration = Duration::from_secs(10);

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn micros(nanos: u64) -> String {
    format!("{:.0} µs", nanos as f64 / 1e3)
}

/// One shape: its name, then netloop's run, tokio's, and the floor of each (the same
/// loop with no timer, sized for that runtime's `Sleep`).
struct Shape {
    name: &'static str,
    netloop: Box<dyn Fn() -> Duration>,
    tokio: Box<dyn Fn() -> Duration>,
    netloop_floor: Box<dyn Fn() -> Duration>,
    tokio_floor: Box<dyn Fn() -> Duration>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let nl = std::rc::Rc::new(on_netloop::current_thread());
    let tk = std::rc::Rc::new(on_tokio::current_thread());
    // Built at their shapes' first run: an idle 2-worker runtime in the process slows
    // the other shapes of one of the runtimes.
    let nl2 = std::rc::Rc::new(std::cell::OnceCell::new());
    let tk2 = std::rc::Rc::new(std::cell::OnceCell::new());
    let shapes = [
        Shape {
            name: "1M one-hour sleeps, each created, polled once and dropped",
            netloop: Box::new({
                let rt = nl.clone();
                move || on_netloop::sleep_poll_drop_each(&rt, PENDING)
            }),
            tokio: Box::new({
                let rt = tk.clone();
                move || on_tokio::sleep_poll_drop_each(&rt, PENDING)
            }),
            netloop_floor: Box::new(|| on_netloop::floor::each(PENDING)),
            tokio_floor: Box::new(|| on_tokio::floor::each(PENDING)),
        },
        Shape {
            name: "1M pending one-hour sleeps: all created and polled, then all dropped",
            netloop: Box::new({
                let rt = nl.clone();
                move || on_netloop::sleep_poll_all_then_drop(&rt, PENDING)
            }),
            tokio: Box::new({
                let rt = tk.clone();
                move || on_tokio::sleep_poll_all_then_drop(&rt, PENDING)
            }),
            netloop_floor: Box::new(|| on_netloop::floor::all_then_drop(PENDING)),
            tokio_floor: Box::new(|| on_tokio::floor::all_then_drop(PENDING)),
        },
        Shape {
            name: "100k 60 s idle timeouts, each reset 10 times (and polled), then dropped",
            netloop: Box::new({
                let rt = nl.clone();
                move || on_netloop::idle_timeouts_reset(&rt, CONNS, RESETS, on_netloop::Order::Created)
            }),
            tokio: Box::new({
                let rt = tk.clone();
                move || on_tokio::idle_timeouts_reset(&rt, CONNS, RESETS, on_tokio::Order::Created)
            }),
            netloop_floor: Box::new(|| {
                on_netloop::floor::idle_timeouts_reset(CONNS, RESETS, on_netloop::Order::Created)
            }),
            tokio_floor: Box::new(|| on_tokio::floor::idle_timeouts_reset(CONNS, RESETS, on_tokio::Order::Created)),
        },
        Shape {
            name: "the same, connections visited in a scattered order",
            netloop: Box::new({
                let rt = nl.clone();
                move || on_netloop::idle_timeouts_reset(&rt, CONNS, RESETS, on_netloop::Order::Scattered)
            }),
            tokio: Box::new({
                let rt = tk.clone();
                move || on_tokio::idle_timeouts_reset(&rt, CONNS, RESETS, on_tokio::Order::Scattered)
            }),
            netloop_floor: Box::new(|| {
                on_netloop::floor::idle_timeouts_reset(CONNS, RESETS, on_netloop::Order::Scattered)
            }),
            tokio_floor: Box::new(|| on_tokio::floor::idle_timeouts_reset(CONNS, RESETS, on_tokio::Order::Scattered)),
        },
        Shape {
            name: "1M one-hour sleeps, each created, polled once and dropped, in block_on's body (2 workers)",
            netloop: Box::new({
                let rt = nl2.clone();
                move || {
                    let rt = rt.get_or_init(on_netloop::two_workers);
                    on_netloop::sleep_poll_drop_each_at(rt, on_netloop::Place::BlockOn, PENDING)
                }
            }),
            tokio: Box::new({
                let rt = tk2.clone();
                move || {
                    let rt = rt.get_or_init(on_tokio::two_workers);
                    on_tokio::sleep_poll_drop_each_at(rt, on_tokio::Place::BlockOn, PENDING)
                }
            }),
            netloop_floor: Box::new(|| on_netloop::floor::each(PENDING)),
            tokio_floor: Box::new(|| on_tokio::floor::each(PENDING)),
        },
        Shape {
            name: "100k idle timeouts reset 10 times, in block_on's body (2 workers)",
            netloop: Box::new({
                let rt = nl2.clone();
                move || {
                    let rt = rt.get_or_init(on_netloop::two_workers);
                    on_netloop::idle_timeouts_reset_at(
                        rt,
                        on_netloop::Place::BlockOn,
                        CONNS,
                        RESETS,
                        on_netloop::Order::Created,
                    )
                }
            }),
            tokio: Box::new({
                let rt = tk2.clone();
                move || {
                    let rt = rt.get_or_init(on_tokio::two_workers);
                    on_tokio::idle_timeouts_reset_at(
                        rt,
                        on_tokio::Place::BlockOn,
                        CONNS,
                        RESETS,
                        on_tokio::Order::Created,
                    )
                }
            }),
            netloop_floor: Box::new(|| {
                on_netloop::floor::idle_timeouts_reset(CONNS, RESETS, on_netloop::Order::Created)
            }),
            tokio_floor: Box::new(|| on_tokio::floor::idle_timeouts_reset(CONNS, RESETS, on_tokio::Order::Created)),
        },
        Shape {
            name: "1M sleeps, deadlines over 1,000 distinct seconds, all polled in one poll then dropped, in a spawned task (2 workers)",
            netloop: Box::new({
                let rt = nl2.clone();
                move || {
                    let rt = rt.get_or_init(on_netloop::two_workers);
                    on_netloop::spread_sleeps_poll_all_then_drop_at(rt, on_netloop::Place::Task, PENDING)
                }
            }),
            tokio: Box::new({
                let rt = tk2.clone();
                move || {
                    let rt = rt.get_or_init(on_tokio::two_workers);
                    on_tokio::spread_sleeps_poll_all_then_drop_at(rt, on_tokio::Place::Task, PENDING)
                }
            }),
            netloop_floor: Box::new(|| on_netloop::floor::all_then_drop(PENDING)),
            tokio_floor: Box::new(|| on_tokio::floor::all_then_drop(PENDING)),
        },
        Shape {
            name: "the same, in block_on's body (2 workers)",
            netloop: Box::new({
                let rt = nl2.clone();
                move || {
                    let rt = rt.get_or_init(on_netloop::two_workers);
                    on_netloop::spread_sleeps_poll_all_then_drop_at(rt, on_netloop::Place::BlockOn, PENDING)
                }
            }),
            tokio: Box::new({
                let rt = tk2.clone();
                move || {
                    let rt = rt.get_or_init(on_tokio::two_workers);
                    on_tokio::spread_sleeps_poll_all_then_drop_at(rt, on_tokio::Place::BlockOn, PENDING)
                }
            }),
            netloop_floor: Box::new(|| on_netloop::floor::all_then_drop(PENDING)),
            tokio_floor: Box::new(|| on_tokio::floor::all_then_drop(PENDING)),
        },
        Shape {
            name: "100k idle timeouts reset 10 times to a later deadline, in a spawned task (2 workers)",
            netloop: Box::new({
                let rt = nl2.clone();
                move || {
                    let rt = rt.get_or_init(on_netloop::two_workers);
                    on_netloop::idle_timeouts_reset_at(
                        rt,
                        on_netloop::Place::Task,
                        CONNS,
                        RESETS,
                        on_netloop::Order::Created,
                    )
                }
            }),
            tokio: Box::new({
                let rt = tk2.clone();
                move || {
                    let rt = rt.get_or_init(on_tokio::two_workers);
                    on_tokio::idle_timeouts_reset_at(rt, on_tokio::Place::Task, CONNS, RESETS, on_tokio::Order::Created)
                }
            }),
            netloop_floor: Box::new(|| {
                on_netloop::floor::idle_timeouts_reset(CONNS, RESETS, on_netloop::Order::Created)
            }),
            tokio_floor: Box::new(|| on_tokio::floor::idle_timeouts_reset(CONNS, RESETS, on_tokio::Order::Created)),
        },
    ];

    // `--only RUNTIME SHAPE [N]`: one runtime's shape N times back to back, for a profiler.
    if args.first().map(String::as_str) == Some("--only") {
        let runtime = args.get(1).map(String::as_str).unwrap_or("netloop");
        let index: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0);
        let times: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(20);
        let shape = shapes.get(index).expect("a shape index: 0 to 8");
        let run = if runtime == "tokio" {
            &shape.tokio
        } else {
            &shape.netloop
        };
        let took: Vec<Duration> = (0..times).map(|_| run()).collect();
        println!("{runtime}, {}: median {}", shape.name, ms(median(took)));
        return;
    }
    let rounds: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(7);
    let fire = args.iter().any(|a| a == "fire");

    // One warm-up round, then `rounds` timed ones, the runtimes alternating.
    let mut times: Vec<[Vec<Duration>; 4]> = (0..shapes.len()).map(|_| Default::default()).collect();
    for round in 0..=rounds {
        for (i, shape) in shapes.iter().enumerate() {
            let runs = [&shape.netloop, &shape.tokio, &shape.netloop_floor, &shape.tokio_floor];
            let order: [usize; 4] = if round % 2 == 0 { [0, 1, 2, 3] } else { [1, 0, 3, 2] };
            for k in order {
                let took = runs[k]();
                if round > 0 {
                    times[i][k].push(took);
                }
            }
        }
    }
    println!(
        "Median of {rounds} rounds after one warm-up, runtimes interleaved; the first four \
         in a task of a current-thread runtime, the rest on 2 workers where each says, polling \
         with the waker of whatever runs them; ratio = netloop time / tokio time. The floor \
         is the same loop with no timer (the clock read fixing each deadline, a box of \
         the runtime's Sleep size, a write per reset); \"above floor\" is the timer's own \
         cost.\n"
    );
    println!(
        "| shape | netloop | tokio | netloop/tokio | floor, netloop / tokio | above floor, netloop / tokio | ratio above floor |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (shape, t) in shapes.iter().zip(times) {
        let [a, b, fa, fb] = t.map(median);
        let (above_a, above_b) = (a.saturating_sub(fa), b.saturating_sub(fb));
        println!(
            "| {} | {} | {} | {:.2} | {} / {} | {} / {} | {:.2} |",
            shape.name,
            ms(a),
            ms(b),
            a.as_secs_f64() / b.as_secs_f64(),
            ms(fa),
            ms(fb),
            ms(above_a),
            ms(above_b),
            above_a.as_secs_f64() / above_b.as_secs_f64()
        );
    }

    if fire {
        println!(
            "\n1M timers with deadlines spread evenly over {} s, one task each, 2 workers; \
             lateness = wake time - deadline, as the task sees it.\n",
            FIRING_SPAN.as_secs()
        );
        println!("| runtime | p50 late | p99 late | max late | early | took |");
        println!("|---|---|---|---|---|---|");
        type Run = Box<dyn Fn() -> on_netloop::Lateness>;
        let runs: [(&str, Run); 2] = [
            (
                "netloop",
                Box::new(|| on_netloop::firing(&on_netloop::two_workers(), FIRING, FIRING_SPAN)),
            ),
            (
                "tokio",
                Box::new(|| {
                    let l = on_tokio::firing(&on_tokio::two_workers(), FIRING, FIRING_SPAN);
                    on_netloop::Lateness {
                        late_nanos: l.late_nanos,
                        early: l.early,
                        took: l.took,
                    }
                }),
            ),
        ];
        for (name, run) in runs {
            let mut l = run();
            l.late_nanos.sort_unstable();
            println!(
                "| {name} | {} | {} | {} | {} | {:.1} s |",
                micros(percentile(&l.late_nanos, 0.5)),
                micros(percentile(&l.late_nanos, 0.99)),
                micros(*l.late_nanos.last().unwrap_or(&0)),
                l.early,
                l.took.as_secs_f64()
            );
        }
    }
}
