//! What the three-configuration reports (`io_report`, `sync_report`) share: the rounds
//! with a rotating order, and the median and spread of each configuration's times.

use std::time::{Duration, Instant};

/// Runs each shape once per configuration in every round, the configurations in an
/// order that rotates from round to round (so that a slow patch of a shared machine
/// hits all three alike). Round 0 is an untimed warm-up; `rounds` timed rounds follow.
/// Returns `times[shape][config]` in milliseconds.
pub fn rotated_rounds<S: Copy>(
    rounds: usize,
    shapes: &[S],
    configs: [&dyn Fn(S) -> Duration; 3],
) -> Vec<[Vec<f64>; 3]> {
    let started = Instant::now();
    let mut times: Vec<[Vec<f64>; 3]> = shapes.iter().map(|_| Default::default()).collect();
    for round in 0..=rounds {
        eprintln!("round {round} of {rounds} ({:.0} s)", started.elapsed().as_secs_f64());
        for (&shape, times) in shapes.iter().zip(&mut times) {
            for i in 0..3 {
                let c = (i + round) % 3;
                let took = configs[c](shape);
                if round > 0 {
                    times[c].push(took.as_secs_f64() * 1e3);
                }
            }
        }
    }
    times
}

/// The median of `v` and its spread, (max - min) / median.
pub fn median_spread(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    (median, (v[v.len() - 1] - v[0]) / median)
}
