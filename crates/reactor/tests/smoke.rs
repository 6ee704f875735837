use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use netloop_reactor::{EventLoop, LoopState};

#[test]
fn remote_submissions_run_and_shutdown_terminates() {
    let mut el = EventLoop::new().unwrap();
    let h = el.handle();
    let t = std::thread::spawn(move || el.run());
    let n = Arc::new(AtomicUsize::new(0));
    for _ in 0..10_000 {
        let n = n.clone();
        h.execute(move || {
            n.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    }
    let term = h
        .shutdown_gracefully_with(Duration::ZERO, Duration::from_secs(5))
        .unwrap();
    h.await_termination(Duration::from_secs(10)).unwrap();
    t.join().unwrap().unwrap();
    assert_eq!(n.load(Ordering::Relaxed), 10_000);
    assert_eq!(h.state(), LoopState::Terminated);
    assert!(h.execute(|| {}).unwrap_err().is_shutdown());
    drop(term);
    let m = h.metrics();
    eprintln!("{m:?}");
}

#[test]
fn spawn_from_other_thread_and_timers() {
    let mut el = EventLoop::new().unwrap();
    let h = el.handle();
    let h2 = h.clone();
    let out = el
        .block_on(async move {
            let t = std::thread::spawn(move || h2.spawn(async { 5 }).unwrap());
            let task = t.join().unwrap();
            let (tx, rx) = futures::channel::oneshot::channel();
            h.schedule(Duration::from_millis(20), move || tx.send(7).unwrap())
                .unwrap();
            task.await + rx.await.unwrap()
        })
        .unwrap();
    assert_eq!(out, 12);
}
