//! Fan-out with a `JoinSet`: spawn a task per job, collect results as they finish,
//! abort what is left.

use std::error::Error;
use std::time::Duration;

use netloop_dropin::rt;
use rt::task::JoinSet;

const JOBS: u64 = 16;

async fn job(i: u64) -> (u64, u64) {
    // The later jobs finish first.
    rt::time::sleep(Duration::from_millis(2 * (JOBS - i))).await;
    (i, i * i)
}

#[rt::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut set = JoinSet::new();
    for i in 0..JOBS {
        set.spawn(job(i));
    }
    assert_eq!(set.len(), JOBS as usize);

    let mut results = Vec::new();
    while let Some(res) = set.join_next().await {
        results.push(res?);
    }
    assert!(set.is_empty());
    let order: Vec<u64> = results.iter().map(|&(i, _)| i).collect();
    results.sort();
    assert_eq!(results, (0..JOBS).map(|i| (i, i * i)).collect::<Vec<_>>());
    let sum: u64 = results.iter().map(|&(_, sq)| sq).sum();

    // Tasks that never finish, aborted together.
    let mut set = JoinSet::new();
    for _ in 0..4 {
        set.spawn(std::future::pending::<()>());
    }
    set.spawn(async {});
    set.abort_all();
    let (mut cancelled, mut finished) = (0, 0);
    while let Some(res) = set.join_next().await {
        match res {
            Ok(()) => finished += 1,
            Err(e) if e.is_cancelled() => cancelled += 1,
            Err(e) => return Err(e.into()),
        }
    }
    assert_eq!(cancelled + finished, 5);
    assert!(cancelled >= 4);

    println!(
        "joinset_fanout: ok on {}: {JOBS} jobs, sum of squares {sum}, completion order {order:?}",
        netloop_dropin::RUNTIME
    );
    Ok(())
}
