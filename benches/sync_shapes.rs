// The workloads of `examples/sync_report.rs`, written once against a runtime named
// `rt` and synchronization primitives named `sync`, and included into one module per
// configuration (`use netloop as rt; use netloop::sync;`, `use netloop as rt; use
// tokio::sync;`, `use tokio as rt; use tokio::sync;`), so all three run this source.
// Only tokio's API is used.
//
// The one thing that cannot be written once is where a task goes: the including module
// also names a `place` module with `spawn_other(k, future)` (netloop: the `k`th loop
// other than the caller's, by `spawn_on`; tokio: `spawn`, its workers are not
// addressable) and `spawn_spread(k, future)` (netloop: loop `k % loops`; tokio:
// `spawn`). `At::Same` is a plain `rt::spawn` from the shape's task, which on netloop
// keeps the task on that task's loop.
//
// Every shape runs in a task spawned from `block_on` of a runtime built by the caller
// and returns the time it took, measured inside that task (runtime start-up is not
// counted), or, for the memory shapes, the allocator's growth (`Window`) over its items.

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::time::{Duration, Instant};

use super::{At, Memory, Timed, Usage, Window};

/// The bounded channels' capacity.
const BOUNDED: usize = 1024;
/// The broadcast channel's capacity.
const BROADCAST_CAPACITY: usize = 256;
/// In the contention shapes, every `HOLD_EVERY`th lock or permit is held across a
/// `yield_now`, so that the other tasks queue behind it even on one loop.
const HOLD_EVERY: u64 = 16;
/// How long a memory shape waits for its tasks to park before giving up.
const PARK_LIMIT: Duration = Duration::from_secs(20);
/// Tasks a memory shape spawns before waiting for them to park.
const PARK_BATCH: usize = 128;

/// A multi-thread runtime with 2 workers.
pub fn two_workers() -> rt::runtime::Runtime {
    rt::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a multi-thread runtime")
}

/// The full name of this configuration's `sync::Mutex`: which primitives ran.
pub fn mutex_type() -> &'static str {
    std::any::type_name::<sync::Mutex<()>>()
}

/// Runs `shape` in a task of `rt` and returns its output.
fn in_task<T: Send + 'static>(rt: &rt::runtime::Runtime, shape: impl Future<Output = T> + Send + 'static) -> T {
    rt.block_on(async move { rt::spawn(shape).await.expect("a sync shape panicked") })
}

/// Spawns the `k`th helper task of a shape where `at` says.
fn spawn_at<F>(at: At, k: usize, future: F) -> rt::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match at {
        At::Same => rt::spawn(future),
        At::Other => place::spawn_other(k, future),
        At::Spread => place::spawn_spread(k, future),
    }
}

/// Awaits every handle; the number of tasks that finished without panic or abort.
async fn join_all<T>(handles: Vec<rt::task::JoinHandle<T>>) -> usize {
    let mut ok = 0;
    for handle in handles {
        ok += usize::from(handle.await.is_ok());
    }
    ok
}

/// Runs one timed shape on `rt`.
pub fn timed(rt: &rt::runtime::Runtime, shape: Timed) -> Duration {
    match shape {
        Timed::Mpsc {
            bounded,
            producers,
            at,
            n,
        } => in_task(rt, mpsc(bounded, producers, at, n)),
        Timed::Oneshot { at, n } => in_task(rt, oneshot_round_trip(at, n)),
        Timed::Mutex { tasks, at, n } => in_task(rt, mutex_contention(tasks, at, n)),
        Timed::Semaphore { tasks, permits, at, n } => in_task(rt, semaphore_contention(tasks, permits, at, n)),
        Timed::Broadcast { receivers, at, n } => in_task(rt, broadcast(receivers, at, n)),
        Timed::Notify { at, n } => in_task(rt, notify_ping_pong(at, n)),
    }
}

/// `producers` tasks send `n` messages in all (`n / producers` each) over one channel,
/// bounded to [`BOUNDED`] or unbounded, to the shape's task, which receives them all.
async fn mpsc(bounded: bool, producers: usize, at: At, n: u64) -> Duration {
    let start = Instant::now();
    let each = n / producers as u64;
    let mut received = 0u64;
    if bounded {
        let (tx, mut rx) = sync::mpsc::channel::<u64>(BOUNDED);
        let handles: Vec<_> = (0..producers)
            .map(|k| {
                let tx = tx.clone();
                spawn_at(at, k, async move {
                    for i in 0..each {
                        tx.send(i).await.expect("the receiver lives");
                    }
                })
            })
            .collect();
        drop(tx);
        while let Some(v) = rx.recv().await {
            received += 1;
            black_box(v);
        }
        assert_eq!(join_all(handles).await, producers);
    } else {
        let (tx, mut rx) = sync::mpsc::unbounded_channel::<u64>();
        let handles: Vec<_> = (0..producers)
            .map(|k| {
                let tx = tx.clone();
                spawn_at(at, k, async move {
                    for i in 0..each {
                        tx.send(i).expect("the receiver lives");
                    }
                })
            })
            .collect();
        drop(tx);
        while let Some(v) = rx.recv().await {
            received += 1;
            black_box(v);
        }
        assert_eq!(join_all(handles).await, producers);
    }
    assert_eq!(received, each * producers as u64, "messages lost");
    start.elapsed()
}

/// `n` times: create a oneshot, send its sender to a responder task over an unbounded
/// mpsc, await the reply.
async fn oneshot_round_trip(at: At, n: u64) -> Duration {
    let start = Instant::now();
    let (tx, mut rx) = sync::mpsc::unbounded_channel::<(u64, sync::oneshot::Sender<u64>)>();
    let responder = spawn_at(at, 0, async move {
        while let Some((i, reply)) = rx.recv().await {
            let _ = reply.send(i + 1);
        }
    });
    for i in 0..n {
        let (reply, answer) = sync::oneshot::channel();
        tx.send((i, reply)).expect("the responder lives");
        assert_eq!(answer.await, Ok(i + 1));
    }
    drop(tx);
    responder.await.expect("the responder panicked");
    start.elapsed()
}

/// `tasks` tasks placed by `at` take one `Mutex<u64>` `n` times each and increment it;
/// every [`HOLD_EVERY`]th time the guard is held across a `yield_now`.
async fn mutex_contention(tasks: usize, at: At, n: u64) -> Duration {
    let start = Instant::now();
    let counter = Arc::new(sync::Mutex::new(0u64));
    let handles: Vec<_> = (0..tasks)
        .map(|k| {
            let counter = counter.clone();
            spawn_at(at, k, async move {
                for i in 0..n {
                    let mut guard = counter.lock().await;
                    *guard += 1;
                    if i % HOLD_EVERY == 0 {
                        rt::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    assert_eq!(join_all(handles).await, tasks);
    assert_eq!(*counter.lock().await, n * tasks as u64);
    start.elapsed()
}

/// `tasks` tasks placed by `at` acquire one of `permits` permits `n` times each; every
/// [`HOLD_EVERY`]th permit is held across a `yield_now`.
async fn semaphore_contention(tasks: usize, permits: usize, at: At, n: u64) -> Duration {
    let start = Instant::now();
    let semaphore = Arc::new(sync::Semaphore::new(permits));
    let handles: Vec<_> = (0..tasks)
        .map(|k| {
            let semaphore = semaphore.clone();
            spawn_at(at, k, async move {
                for i in 0..n {
                    let permit = semaphore.acquire().await.expect("the semaphore is open");
                    if i % HOLD_EVERY == 0 {
                        rt::task::yield_now().await;
                    }
                    drop(permit);
                }
            })
        })
        .collect();
    assert_eq!(join_all(handles).await, tasks);
    assert_eq!(semaphore.available_permits(), permits);
    start.elapsed()
}

/// The shape's task broadcasts `n` messages to `receivers` tasks placed by `at`, over a
/// channel of [`BROADCAST_CAPACITY`]. Every 16 sends it yields while half the
/// capacity is unseen by some receiver, so that none lags (a lag is reported).
async fn broadcast(receivers: usize, at: At, n: u64) -> Duration {
    use sync::broadcast::error::RecvError;
    let start = Instant::now();
    let (tx, _) = sync::broadcast::channel::<u64>(BROADCAST_CAPACITY);
    let handles: Vec<_> = (0..receivers)
        .map(|k| {
            let mut rx = tx.subscribe();
            spawn_at(at, k, async move {
                let (mut got, mut lost) = (0u64, 0u64);
                loop {
                    match rx.recv().await {
                        Ok(v) => {
                            got += 1;
                            black_box(v);
                        }
                        Err(RecvError::Lagged(skipped)) => lost += skipped,
                        Err(RecvError::Closed) => return (got, lost),
                    }
                }
            })
        })
        .collect();
    for i in 0..n {
        if i % 16 == 0 {
            while tx.len() > BROADCAST_CAPACITY / 2 {
                rt::task::yield_now().await;
            }
        }
        tx.send(i).expect("the receivers live");
    }
    drop(tx);
    let (mut got, mut lost) = (0, 0);
    for handle in handles {
        let (g, l) = handle.await.expect("a receiver panicked");
        (got, lost) = (got + g, lost + l);
    }
    if lost > 0 {
        eprintln!("  broadcast: {lost} of {} messages lagged", n * receivers as u64);
    }
    assert_eq!(got + lost, n * receivers as u64, "messages lost");
    start.elapsed()
}

/// `n` round trips between the shape's task and a responder: two `Notify`s, one each way.
async fn notify_ping_pong(at: At, n: u64) -> Duration {
    let start = Instant::now();
    let (ping, pong) = (Arc::new(sync::Notify::new()), Arc::new(sync::Notify::new()));
    let responder = {
        let (ping, pong) = (ping.clone(), pong.clone());
        spawn_at(at, 0, async move {
            for _ in 0..n {
                ping.notified().await;
                pong.notify_one();
            }
        })
    };
    for _ in 0..n {
        ping.notify_one();
        pong.notified().await;
    }
    responder.await.expect("the responder panicked");
    start.elapsed()
}

/// Runs one memory shape of `n` items on a runtime of its own: the allocator's growth
/// over them. A fresh runtime, so that no task blocks cached by an earlier shape's loops
/// (netloop keeps up to 1 MiB of freed task blocks per size class and loop) serve these.
pub fn memory(shape: Memory, n: usize) -> Usage {
    let rt = two_workers();
    let usage = in_task(&rt, async move {
        match shape {
            Memory::Bounded => hold(n, || sync::mpsc::channel::<u64>(BOUNDED)),
            Memory::Unbounded => hold(n, sync::mpsc::unbounded_channel::<u64>),
            Memory::Oneshot => hold(n, sync::oneshot::channel::<u64>),
            Memory::Pending => pending_tasks(n).await,
            Memory::Mutex => mutex_waiters(n).await,
            Memory::Semaphore => semaphore_waiters(n).await,
            Memory::Notify => notify_waiters(n).await,
            Memory::Recv => recv_waiters(n).await,
        }
    });
    // Waits for the loops to stop, so that what they free falls before the next window.
    drop(rt);
    usage
}

/// `n` items made by `make`, held in a table allocated beforehand.
fn hold<T>(n: usize, make: impl Fn() -> T) -> Usage {
    let mut held = Vec::with_capacity(n);
    let window = Window::open();
    held.extend((0..n).map(|_| make()));
    let usage = window.read();
    drop(window);
    drop(held);
    usage
}

/// Spawns `n` tasks made by `task` (each counts itself in the counter it is given just
/// before it waits), waits until all have waited, and reads the allocator's growth
/// since before the first spawn (the table of handles excluded). The tasks are spawned
/// [`PARK_BATCH`] at a time, each batch parked before the next, so that no run queue
/// grows to hold them all.
async fn park<F>(n: usize, mut task: impl FnMut(Arc<AtomicUsize>) -> F) -> (Usage, Vec<rt::task::JoinHandle<()>>)
where
    F: Future<Output = ()> + Send + 'static,
{
    let parked = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::with_capacity(n);
    let window = Window::open();
    let start = Instant::now();
    for i in 0..n {
        handles.push(rt::spawn(task(parked.clone())));
        if (i + 1) % PARK_BATCH == 0 || i + 1 == n {
            while parked.load(Acquire) <= i {
                assert!(start.elapsed() < PARK_LIMIT, "tasks did not park within {PARK_LIMIT:?}");
                rt::task::yield_now().await;
            }
        }
    }
    // The last task counted itself before its first wait: let its poll end.
    rt::time::sleep(Duration::from_millis(10)).await;
    (window.read(), handles)
}

/// Tasks awaiting `std::future::pending()`: the task alone, for reference. Aborted.
async fn pending_tasks(n: usize) -> Usage {
    let (usage, handles) = park(n, |parked| async move {
        parked.fetch_add(1, Release);
        std::future::pending::<()>().await
    })
    .await;
    handles.iter().for_each(|h| h.abort());
    join_all(handles).await;
    usage
}

/// Tasks awaiting a `Mutex` this task holds; then released one after another.
async fn mutex_waiters(n: usize) -> Usage {
    let mutex = Arc::new(sync::Mutex::new(0usize));
    let guard = mutex.lock().await;
    let (usage, handles) = park(n, |parked| {
        let mutex = mutex.clone();
        async move {
            parked.fetch_add(1, Release);
            *mutex.lock().await += 1;
        }
    })
    .await;
    drop(guard);
    assert_eq!(join_all(handles).await, n);
    assert_eq!(*mutex.lock().await, n);
    usage
}

/// Tasks awaiting a permit of a `Semaphore` of none; then `n` permits are added.
async fn semaphore_waiters(n: usize) -> Usage {
    let semaphore = Arc::new(sync::Semaphore::new(0));
    let (usage, handles) = park(n, |parked| {
        let semaphore = semaphore.clone();
        async move {
            parked.fetch_add(1, Release);
            drop(semaphore.acquire().await.expect("the semaphore is open"));
        }
    })
    .await;
    semaphore.add_permits(n);
    assert_eq!(join_all(handles).await, n);
    usage
}

/// Tasks awaiting `Notify::notified`; then `notify_waiters`.
async fn notify_waiters(n: usize) -> Usage {
    let notify = Arc::new(sync::Notify::new());
    let (usage, handles) = park(n, |parked| {
        let notify = notify.clone();
        async move {
            let notified = notify.notified();
            parked.fetch_add(1, Release);
            notified.await;
        }
    })
    .await;
    notify.notify_waiters();
    assert_eq!(join_all(handles).await, n);
    usage
}

/// Tasks awaiting `recv` on a bounded channel of their own (the channel counted), its
/// sender kept here; then the senders are dropped.
async fn recv_waiters(n: usize) -> Usage {
    let mut senders = Vec::with_capacity(n);
    let (usage, handles) = park(n, |parked| {
        let (tx, mut rx) = sync::mpsc::channel::<u64>(BOUNDED);
        senders.push(tx);
        async move {
            parked.fetch_add(1, Release);
            assert_eq!(rx.recv().await, None);
        }
    })
    .await;
    drop(senders);
    assert_eq!(join_all(handles).await, n);
    usage
}
