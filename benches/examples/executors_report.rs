//! The two executors besides the loops, on netloop and tokio side by side (2 workers
//! each, runtimes alternated, median of 9 rounds): 10,000 `spawn_blocking` calls
//! awaited, and 100,000 `LocalSet` tasks that yield once, spawned inside the set and
//! awaited.
//!
//! ```text
//! cargo run --release -p netloop-benches --example executors_report
//! ```
use std::time::Instant;

/// The median of `v`.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let rt = netloop::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let trt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut nb = vec![];
    let mut tb = vec![];
    let mut nl = vec![];
    let mut tl = vec![];
    for _ in 0..9 {
        let t = Instant::now();
        rt.block_on(async {
            let hs: Vec<_> = (0..10_000u64)
                .map(|i| netloop::task::spawn_blocking(move || i))
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        nb.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        trt.block_on(async {
            let hs: Vec<_> = (0..10_000u64).map(|i| tokio::task::spawn_blocking(move || i)).collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        tb.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let local = netloop::task::LocalSet::new();
        local.block_on(&rt, async {
            let hs: Vec<_> = (0..100_000u64)
                .map(|i| {
                    netloop::task::spawn_local(async move {
                        netloop::task::yield_now().await;
                        i
                    })
                })
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        drop(local);
        nl.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let local = tokio::task::LocalSet::new();
        local.block_on(&trt, async {
            let hs: Vec<_> = (0..100_000u64)
                .map(|i| {
                    tokio::task::spawn_local(async move {
                        tokio::task::yield_now().await;
                        i
                    })
                })
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        drop(local);
        tl.push(t.elapsed().as_secs_f64() * 1e6);
    }
    println!(
        "spawn_blocking 10k: netloop {:.0} us, tokio {:.0} us",
        median(nb),
        median(tb)
    );
    println!(
        "LocalSet 100k spawn_local+yield: netloop {:.0} us, tokio {:.0} us",
        median(nl),
        median(tl)
    );
}
