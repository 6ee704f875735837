//! Parallel spawns (issue 35) on netloop and tokio, from the same source
//! (`benches/parallel_shapes.rs`), each on a 2-worker runtime:
//!
//! - fan-out: a task spawns 4 CPU jobs of 100 ms and awaits them; and 1,000 jobs of 50 µs;
//! - dispatcher: a task receives 8 jobs of 100 ms on a channel and spawns each; and
//!   1,000 jobs of 50 µs;
//! - lateness: 200 light tasks sleep 2 ms in a loop beside one task doing 10 bursts of
//!   50 ms of work, all spawned from one task (p99 of how late the sleeps wake); the
//!   same with each burst inside `block_in_place`;
//! - blocked: both workers block in place, then 1,000 tasks are spawned from outside
//!   (tokio's `rt_threaded::blocking`): time until all ran;
//! - `block_in_place` calls: a task calls it 5,000 times with an empty closure, and 500
//!   times with a closure of 200 µs: what stepping off the loop and back costs.
//!
//! ```sh
//! cargo run --release -p netloop-benches --example parallel_report        # 5 rounds
//! cargo run --release -p netloop-benches --example parallel_report -- 3   # 3 rounds
//! ```
//!
//! The runtimes alternate round by round; each row prints the median and the spread
//! (lowest to highest) of each, and netloop's median over tokio's.

use std::time::Duration;

mod on_netloop {
    #![allow(dead_code)]
    use netloop as rt;
    include!("../parallel_shapes.rs");
}

mod on_tokio {
    #![allow(dead_code)]
    use tokio as rt;
    include!("../parallel_shapes.rs");
}

type Run<R> = fn(&R) -> Duration;

struct Shape {
    name: &'static str,
    netloop: Run<netloop::runtime::Runtime>,
    tokio: Run<tokio::runtime::Runtime>,
}

fn ms(d: Duration) -> String {
    if d == Duration::MAX {
        "hangs".into()
    } else {
        format!("{:.1}", d.as_secs_f64() * 1e3)
    }
}

fn summary(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

const MS100: Duration = Duration::from_millis(100);
const SMALL: Duration = Duration::from_micros(50);
const NAP: Duration = Duration::from_millis(2);
const BURST: Duration = Duration::from_millis(50);

/// One shape: the same call on each runtime's copy of `parallel_shapes.rs`.
macro_rules! shape {
    ($name:expr, $f:ident($($arg:expr),*)) => {
        Shape {
            name: $name,
            netloop: |rt| on_netloop::$f(rt, $($arg),*),
            tokio: |rt| on_tokio::$f(rt, $($arg),*),
        }
    };
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let shapes = [
        shape!("fan-out: 4 jobs of 100 ms (ms)", fan_out(4, MS100)),
        shape!("dispatcher: 8 jobs of 100 ms (ms)", dispatcher(8, MS100)),
        shape!("fan-out: 1,000 jobs of 50 µs (ms)", fan_out(1000, SMALL)),
        shape!("dispatcher: 1,000 jobs of 50 µs (ms)", dispatcher(1000, SMALL)),
        shape!(
            "lateness p99 beside a hog (ms)",
            lateness_beside_hog(200, NAP, 10, BURST, false)
        ),
        shape!(
            "lateness p99 beside a hog in block_in_place (ms)",
            lateness_beside_hog(200, NAP, 10, BURST, true)
        ),
        shape!(
            "1,000 spawns while both workers block in place (ms)",
            spawns_while_blocked(1000)
        ),
        shape!(
            "5,000 block_in_place calls of an empty closure (ms)",
            block_in_place_calls(5000, Duration::ZERO)
        ),
        shape!(
            "500 block_in_place calls of 200 µs (ms)",
            block_in_place_calls(500, Duration::from_micros(200))
        ),
    ];
    println!("| shape | netloop median (range) | tokio median (range) | netloop / tokio |");
    println!("|---|---|---|---|");
    for shape in &shapes {
        let (mut nl, mut tk) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            // A fresh runtime per run: no run inherits another's warm loops.
            let rt = on_netloop::two_workers();
            nl.push((shape.netloop)(&rt));
            drop(rt);
            let rt = on_tokio::two_workers();
            tk.push((shape.tokio)(&rt));
            drop(rt);
        }
        let (n, n_lo, n_hi) = summary(nl);
        let (t, t_lo, t_hi) = summary(tk);
        let ratio = if n == Duration::MAX {
            "-".to_string()
        } else {
            format!("{:.2}", n.as_secs_f64() / t.as_secs_f64())
        };
        println!(
            "| {} | {} ({}–{}) | {} ({}–{}) | {} |",
            shape.name,
            ms(n),
            ms(n_lo),
            ms(n_hi),
            ms(t),
            ms(t_lo),
            ms(t_hi),
            ratio
        );
    }
}
