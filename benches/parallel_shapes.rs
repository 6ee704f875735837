// Parallel-spawn shapes (issue 35), written once against `rt`, which the includer
// binds to `netloop` or `tokio`. Every shape runs on a 2-worker runtime, from a task
// spawned onto it (so the spawns inside are spawns from a worker, the case issue 35 is
// about).

use std::sync::Arc;
use std::time::{Duration, Instant};

/// A multi-thread runtime with 2 workers, time enabled.
pub fn two_workers() -> rt::runtime::Runtime {
    rt::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("build a 2-worker runtime")
}

/// CPU work for `d`, without yielding.
pub fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// A task spawns `jobs` CPU jobs of `each` and awaits them all: wall time.
pub fn fan_out(rt: &rt::runtime::Runtime, jobs: usize, each: Duration) -> Duration {
    rt.block_on(async move {
        rt::spawn(async move {
            let start = Instant::now();
            let handles: Vec<_> = (0..jobs).map(|_| rt::spawn(async move { spin(each) })).collect();
            for h in handles {
                h.await.unwrap();
            }
            start.elapsed()
        })
        .await
        .unwrap()
    })
}

/// A dispatcher task receives `jobs` jobs of `each` on a channel (sent by another
/// task) and spawns each; wall time until every job is done.
pub fn dispatcher(rt: &rt::runtime::Runtime, jobs: usize, each: Duration) -> Duration {
    rt.block_on(async move {
        let start = Instant::now();
        let (tx, mut rx) = rt::sync::mpsc::unbounded_channel::<Duration>();
        let (done_tx, mut done_rx) = rt::sync::mpsc::unbounded_channel::<()>();
        let dispatcher = rt::spawn(async move {
            while let Some(job) = rx.recv().await {
                let done = done_tx.clone();
                rt::spawn(async move {
                    spin(job);
                    let _ = done.send(());
                });
            }
        });
        rt::spawn(async move {
            for _ in 0..jobs {
                tx.send(each).unwrap();
            }
        });
        for _ in 0..jobs {
            done_rx.recv().await.unwrap();
        }
        let took = start.elapsed();
        dispatcher.await.unwrap();
        took
    })
}

/// `light` tasks sleep `nap` in a loop beside one task doing `bursts` bursts of
/// `burst` of CPU work (inside `block_in_place` if `in_place`), all spawned from one
/// task. Returns the 99th percentile of the light tasks' wake-up lateness (how long
/// after its deadline each sleep returned).
pub fn lateness_beside_hog(
    rt: &rt::runtime::Runtime,
    light: usize,
    nap: Duration,
    bursts: usize,
    burst: Duration,
    in_place: bool,
) -> Duration {
    rt.block_on(async move {
        rt::spawn(async move {
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let lights: Vec<_> = (0..light)
                .map(|_| {
                    let stop = stop.clone();
                    rt::spawn(async move {
                        let mut late = Vec::new();
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            let due = Instant::now() + nap;
                            rt::time::sleep(nap).await;
                            late.push(Instant::now().saturating_duration_since(due));
                        }
                        late
                    })
                })
                .collect();
            let hog = rt::spawn(async move {
                for _ in 0..bursts {
                    if in_place {
                        rt::task::block_in_place(|| spin(burst));
                    } else {
                        spin(burst);
                    }
                    rt::time::sleep(Duration::from_millis(1)).await;
                }
            });
            hog.await.unwrap();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let mut all = Vec::new();
            for l in lights {
                all.extend(l.await.unwrap());
            }
            all.sort();
            all[((all.len() - 1) as f64 * 0.99).round() as usize]
        })
        .await
        .unwrap()
    })
}

/// tokio's `rt_threaded::blocking` on 2 workers: both workers block in place, then
/// `spawns` tasks are spawned from outside; time until they all ran (`Duration::MAX`
/// if they had not after 10 s).
pub fn spawns_while_blocked(rt: &rt::runtime::Runtime, spawns: usize) -> Duration {
    let block = Arc::new(std::sync::Barrier::new(3));
    for _ in 0..2 {
        let block = block.clone();
        rt.spawn(async move {
            rt::task::block_in_place(move || {
                block.wait();
                block.wait();
            })
        });
    }
    block.wait();
    let start = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for _ in 0..spawns {
        let tx = tx.clone();
        let count = count.clone();
        rt.spawn(async move {
            if count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 == spawns {
                tx.send(()).unwrap();
            }
        });
    }
    let finished = rx.recv_timeout(Duration::from_secs(10)).is_ok();
    let took = start.elapsed();
    block.wait();
    if finished { took } else { Duration::MAX }
}

/// A task calls `block_in_place` `calls` times in a row, each closure spinning for
/// `each`: wall time (the cost of stepping off the loop and back, per call, beyond the
/// closures' own time).
pub fn block_in_place_calls(rt: &rt::runtime::Runtime, calls: usize, each: Duration) -> Duration {
    rt.block_on(async move {
        rt::spawn(async move {
            let start = Instant::now();
            for _ in 0..calls {
                rt::task::block_in_place(|| spin(each));
            }
            start.elapsed()
        })
        .await
        .unwrap()
    })
}
