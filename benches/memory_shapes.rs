// The workloads of `examples/memory_report.rs`, written once against a runtime named
// `rt`. The example includes this file twice, in a module with `use netloop as rt;`
// and in one with `use tokio as rt;`, so both runtimes run exactly this source: only
// tokio's API is used (`rt::spawn`, `rt::net`, `rt::time`, `rt::runtime::Builder`,
// `rt::io::AsyncReadExt`), plus tokio's runtime-agnostic `sync::oneshot`.
//
// Every shape builds its runtime, warms it up, takes a reading (`Probe`) once the
// runtime is idle, creates its N items, waits (bounded) until every item is in the
// state to measure, takes a second reading and returns both. Tables the items are
// kept in are allocated and filled with `None` before the first reading, so their
// pages are not counted.

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use rt::io::AsyncReadExt;
use tokio::sync::oneshot;

use super::{LISTEN_IPS, Probe, SETTLE, Sample, WAIT_LIMIT, wait_blocking};

/// `std::mem::size_of` of the runtime's `JoinHandle<()>` and of its `Sleep`.
pub fn sizes() -> (usize, usize) {
    (
        std::mem::size_of::<rt::task::JoinHandle<()>>(),
        std::mem::size_of::<rt::time::Sleep>(),
    )
}

fn runtime() -> rt::runtime::Runtime {
    rt::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("building the runtime")
}

/// Runs tasks and timers on every worker, so that the workers' threads, their
/// allocator arenas and the runtime's lazily made parts exist before the first reading.
async fn warm_up() {
    for _ in 0..4 {
        let handles: Vec<_> = (0..1000)
            .map(|_| rt::spawn(async { rt::time::sleep(Duration::from_millis(1)).await }))
            .collect();
        for handle in handles {
            handle.await.expect("a warm-up task");
        }
    }
}

/// A reading once the runtime has been left alone for [`SETTLE`].
async fn settled() -> Probe {
    rt::time::sleep(SETTLE).await;
    Probe::now()
}

/// Waits until `count` reaches `target`, at most [`WAIT_LIMIT`].
async fn wait_for(count: &AtomicUsize, target: usize, what: &str) -> Result<(), String> {
    let start = Instant::now();
    loop {
        let seen = count.load(Acquire);
        if seen >= target {
            return Ok(());
        }
        if start.elapsed() > WAIT_LIMIT {
            return Err(format!("gave up after {WAIT_LIMIT:?}: {seen} of {target} {what}"));
        }
        rt::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Fills the tables with tasks that each await a oneshot receiver (`polled` counts the
/// tasks that started, `received` those whose value came).
fn spawn_parked(
    senders: &mut [Option<oneshot::Sender<()>>],
    handles: &mut [Option<rt::task::JoinHandle<()>>],
    polled: &Arc<AtomicUsize>,
    received: &Arc<AtomicUsize>,
) {
    for (sender, handle) in senders.iter_mut().zip(handles.iter_mut()) {
        let (tx, rx) = oneshot::channel::<()>();
        let (polled, received) = (polled.clone(), received.clone());
        *handle = Some(rt::spawn(async move {
            polled.fetch_add(1, Release);
            if rx.await.is_ok() {
                received.fetch_add(1, Release);
            }
        }));
        *sender = Some(tx);
    }
}

/// `n` tasks parked on a oneshot receiver each (the task, its channel and its join
/// handle), spawned from `block_on` or, with `from_task`, from one task on a worker.
/// Afterwards every sender sends and every task must finish.
pub fn parked_tasks(n: usize, from_task: bool) -> Result<Sample, String> {
    let runtime = runtime();
    let result = runtime.block_on(async move {
        warm_up().await;
        let polled = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(AtomicUsize::new(0));
        let mut senders: Vec<Option<oneshot::Sender<()>>> = (0..n).map(|_| None).collect();
        let mut handles: Vec<Option<rt::task::JoinHandle<()>>> = (0..n).map(|_| None).collect();
        let before = settled().await;
        if from_task {
            let (polled, received) = (polled.clone(), received.clone());
            (senders, handles) = rt::spawn(async move {
                spawn_parked(&mut senders, &mut handles, &polled, &received);
                (senders, handles)
            })
            .await
            .map_err(|e| format!("the spawning task: {e}"))?;
        } else {
            spawn_parked(&mut senders, &mut handles, &polled, &received);
        }
        wait_for(&polled, n, "tasks polled").await?;
        let after = settled().await;

        for sender in &mut senders {
            if sender.take().is_none_or(|tx| tx.send(()).is_err()) {
                return Err("a parked task was gone before its value was sent".to_string());
            }
        }
        let joined = rt::time::timeout(WAIT_LIMIT, async move {
            let mut ok = 0;
            for handle in handles.into_iter().flatten() {
                ok += usize::from(handle.await.is_ok());
            }
            ok
        })
        .await
        .map_err(|_| format!("the parked tasks did not all finish within {WAIT_LIMIT:?}"))?;
        let received = received.load(Acquire);
        if joined != n || received != n {
            return Err(format!(
                "of {n} parked tasks, {received} received their value and {joined} joined"
            ));
        }
        Ok(Sample { before, after, n })
    });
    runtime.shutdown_background();
    result
}

/// `n` tasks that do nothing but wait forever (`pending()`), spawned from `block_on`:
/// a task allocation with a trivial future, and its join handle.
pub fn idle_tasks(n: usize) -> Result<Sample, String> {
    let runtime = runtime();
    let result = runtime.block_on(async move {
        warm_up().await;
        let polled = Arc::new(AtomicUsize::new(0));
        let mut handles: Vec<Option<rt::task::JoinHandle<()>>> = (0..n).map(|_| None).collect();
        let before = settled().await;
        for handle in &mut handles {
            let polled = polled.clone();
            *handle = Some(rt::spawn(async move {
                polled.fetch_add(1, Release);
                std::future::pending::<()>().await
            }));
        }
        wait_for(&polled, n, "tasks polled").await?;
        let after = settled().await;
        for handle in handles.iter().flatten() {
            handle.abort();
        }
        Ok(Sample { before, after, n })
    });
    runtime.shutdown_background();
    result
}

/// `n` one-hour sleeps, each boxed and polled once (so registered with the timer) in
/// one task, kept in a table.
pub fn pending_sleeps(n: usize) -> Result<Sample, String> {
    let runtime = runtime();
    let result = runtime.block_on(async move {
        warm_up().await;
        let slots: Vec<Option<Pin<Box<rt::time::Sleep>>>> = (0..n).map(|_| None).collect();
        let before = settled().await;
        // `unconstrained`: a sleep polled with the cooperative budget spent returns
        // `Pending` without registering.
        let polling = rt::task::unconstrained(async move {
            let mut slots = slots;
            let mut ready = 0usize;
            for slot in &mut slots {
                let mut sleep = Box::pin(rt::time::sleep(Duration::from_secs(3600)));
                ready += usize::from(poll_fn(|cx| Poll::Ready(sleep.as_mut().poll(cx).is_ready())).await);
                *slot = Some(sleep);
            }
            (slots, ready)
        });
        let (slots, ready) = rt::time::timeout(WAIT_LIMIT, rt::spawn(polling))
            .await
            .map_err(|_| format!("polling {n} sleeps took more than {WAIT_LIMIT:?}"))?
            .map_err(|e| format!("the task polling the sleeps: {e}"))?;
        if ready > 0 {
            return Err(format!("{ready} one-hour sleeps completed at their first poll"));
        }
        let after = settled().await;
        // Still registered at the reading. Not dropped: the process ends after the
        // report, and a million cancellations would only make it slower.
        std::mem::forget(slots);
        Ok(Sample { before, after, n })
    });
    runtime.shutdown_background();
    result
}

/// tokio's plain accept loop: a task per connection that awaits one read into a
/// `buf_len`-byte buffer with a 60 s idle timeout. `ready` counts the tasks about to
/// await the read, `ended` those whose read returned (none should, while measured).
async fn serve(
    listener: rt::net::TcpListener,
    buf_len: usize,
    ready: Arc<AtomicUsize>,
    ended: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    loop {
        let (mut s, _) = listener.accept().await?;
        let (ready, ended) = (ready.clone(), ended.clone());
        rt::spawn(async move {
            let mut buf = vec![0u8; buf_len];
            ready.fetch_add(1, Release);
            let _ = rt::time::timeout(Duration::from_secs(60), s.read(&mut buf)).await;
            ended.fetch_add(1, Release);
        });
    }
}

/// `n` idle loopback connections to the server above, one listener on each of
/// [`LISTEN_IPS`], connected round-robin by plain `std::net::TcpStream`s on this
/// thread (their user-space part is a descriptor in a table filled beforehand).
pub fn idle_connections(n: usize, buf_len: usize) -> Result<Sample, String> {
    let runtime = runtime();
    let ready = Arc::new(AtomicUsize::new(0));
    let ended = Arc::new(AtomicUsize::new(0));
    // The first accept error, for the message if the connections never all arrive.
    let failure: Arc<Mutex<Option<String>>> = Arc::default();
    let (r, e, f) = (ready.clone(), ended.clone(), failure.clone());
    let addrs = runtime.block_on(async move {
        warm_up().await;
        let mut addrs = Vec::new();
        for ip in LISTEN_IPS {
            let listener = rt::net::TcpListener::bind(SocketAddr::from((ip, 0)))
                .await
                .map_err(|err| format!("bind {ip}: {err}"))?;
            let addr = listener.local_addr().map_err(|err| format!("local_addr: {err}"))?;
            let (r, e, f) = (r.clone(), e.clone(), f.clone());
            rt::spawn(async move {
                if let Err(err) = serve(listener, buf_len, r, e).await {
                    let mut failure = f.lock().unwrap_or_else(|p| p.into_inner());
                    failure.get_or_insert_with(|| format!("accept on {addr}: {err}"));
                }
            });
            addrs.push(addr);
        }
        Ok::<_, String>(addrs)
    });
    let result = addrs
        .and_then(|addrs| connect_all(n, &addrs, &ready, &ended))
        .map_err(|err| match failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(accept) => format!("{err} ({accept})"),
            None => err,
        });
    runtime.shutdown_background();
    result
}

fn connect_all(n: usize, addrs: &[SocketAddr], ready: &AtomicUsize, ended: &AtomicUsize) -> Result<Sample, String> {
    /// Connections allowed ahead of the server's accepts: well within the backlog.
    const AHEAD: usize = 256;
    debug_assert!(addrs.iter().all(|a| a.ip().is_loopback()));
    let mut clients: Vec<Option<std::net::TcpStream>> = (0..n).map(|_| None).collect();
    std::thread::sleep(SETTLE);
    let before = Probe::now();
    let start = Instant::now();
    for (i, slot) in clients.iter_mut().enumerate() {
        if ready.load(Relaxed) + AHEAD < i {
            wait_blocking(|| ready.load(Acquire) + AHEAD >= i, "connections accepted")?;
        }
        let addr = addrs[i % addrs.len()];
        let stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .map_err(|err| format!("connection {i} to {addr}: {err}"))?;
        *slot = Some(stream);
    }
    wait_blocking(|| ready.load(Acquire) >= n, "connections accepted and reading")?;
    std::thread::sleep(SETTLE);
    let after = Probe::now();
    let ended = ended.load(Acquire);
    if ended > 0 {
        return Err(format!("{ended} connections stopped reading before the measurement"));
    }
    eprintln!("  {n} connections in {:.1} s", start.elapsed().as_secs_f64());
    // Not closed: the process ends after the report, which closes them all at once.
    std::mem::forget(clients);
    Ok(Sample { before, after, n })
}
