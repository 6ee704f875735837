//! An `interval` ticker: the first tick is immediate, the next ones one period apart;
//! `MissedTickBehavior` and `interval_at` as in tokio.

use std::time::Duration;

use netloop_dropin::rt;
use rt::time::{Instant, MissedTickBehavior, interval, interval_at};

const PERIOD: Duration = Duration::from_millis(20);

#[rt::main(flavor = "current_thread")]
async fn main() {
    let start = Instant::now();
    let mut ticker = interval(PERIOD);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    assert_eq!(ticker.period(), PERIOD);

    let first = ticker.tick().await;
    assert!(first - start < PERIOD, "the first tick completes at once");
    let mut last = first;
    for i in 1..=5 {
        let at = ticker.tick().await;
        assert!(at - last >= PERIOD, "tick {i} came {:?} after the previous", at - last);
        println!("tick {i} at {:?}", at - start);
        last = at;
    }
    let took = start.elapsed();
    assert!(took >= PERIOD * 5, "five periods took {took:?}");

    // A ticker that starts later.
    let begin = Instant::now() + Duration::from_millis(30);
    let mut later = interval_at(begin, PERIOD);
    let at = later.tick().await;
    assert!(at >= begin && Instant::now() >= begin);

    println!(
        "interval_ticker: ok on {}: 5 ticks in {took:?}",
        netloop_dropin::RUNTIME
    );
}
