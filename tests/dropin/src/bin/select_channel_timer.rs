//! `select!` in a loop over a channel, a heartbeat `interval` and an idle timeout that
//! each message pushes back (a pinned `Sleep` reset in place).

use std::time::Duration;

use netloop_dropin::rt;
use netloop_dropin::rt::sync::mpsc;
use rt::time::{Instant, interval, sleep};

const IDLE: Duration = Duration::from_millis(150);

#[rt::main]
async fn main() {
    let (tx, mut rx) = mpsc::channel::<u32>(16);
    // The producer sends five messages 10 ms apart, then goes quiet with the channel
    // still open.
    rt::spawn(async move {
        for i in 0..5 {
            tx.send(i).await.unwrap();
            sleep(Duration::from_millis(10)).await;
        }
        sleep(Duration::from_secs(30)).await;
        drop(tx);
    });

    let start = Instant::now();
    let mut heartbeat = interval(Duration::from_millis(25));
    let idle = sleep(IDLE);
    rt::pin!(idle);
    let mut got = Vec::new();
    let mut beats = 0;
    let mut last_message = start;
    let reason = loop {
        rt::select! {
            Some(v) = rx.recv() => {
                got.push(v);
                last_message = Instant::now();
                idle.as_mut().reset(last_message + IDLE);
            }
            _ = heartbeat.tick() => beats += 1,
            _ = &mut idle => break "idle",
            else => break "closed",
        }
    };
    let quiet = last_message.elapsed();
    assert_eq!(reason, "idle");
    assert_eq!(got, [0, 1, 2, 3, 4]);
    assert!(
        quiet >= IDLE,
        "the idle timeout counts from the last message: {quiet:?}"
    );
    assert!(beats >= 3, "{beats} heartbeats");

    // And the first branch to complete wins a one-shot select, with a value.
    let (tx, mut rx) = mpsc::channel::<&str>(1);
    rt::spawn(async move { tx.send("message").await });
    let winner = rt::select! {
        m = rx.recv() => m.unwrap_or("closed"),
        _ = sleep(Duration::from_secs(5)) => "timer",
    };
    assert_eq!(winner, "message");

    println!(
        "select_channel_timer: ok on {}: {got:?}, {beats} heartbeats, stopped when {reason} after {:?}",
        netloop_dropin::RUNTIME,
        start.elapsed()
    );
}
