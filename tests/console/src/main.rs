//! tokio-console and tokio-metrics watching a netloop service, in patch mode: the
//! repository's check of docs/observability.md (run by `run.sh`, in CI).
//!
//! A multi-thread runtime of two loops runs three tasks named with
//! `task::Builder::name`, each sleeping and locking a mutex in a loop, under
//! tokio-metrics' `TaskMonitor`. console-subscriber's layer serves tokio-console's gRPC
//! API on a free port; this program connects to it as tokio-console does (the
//! `Instrument` service's `WatchUpdates` stream) and requires, within 60 s:
//!
//! - every named task listed, with its name (`task.name`), netloop's loop field
//!   (`netloop.loop`, a loop index below the worker count) and at least one poll;
//! - resources of the kinds it used: a `Mutex` and a `Sleep`;
//! - tokio-metrics' figures non-zero: the runtime's polls, parks and busy time, and
//!   the tasks' instrumented count, polls and poll time.
//!
//! It prints what it saw and exits with 0, or names what it missed and exits with 1.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use console_api::field::{Name, Value};
use console_api::instrument::instrument_client::InstrumentClient;
use console_api::instrument::InstrumentRequest;
use tracing_subscriber::prelude::*;

const NAMES: [&str; 3] = ["netloop-check-ticker", "netloop-check-locker", "netloop-check-sleeper"];
const WORKERS: usize = 2;

fn main() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let console = console_subscriber::ConsoleLayer::builder()
        .server_addr(([127, 0, 0, 1], port))
        .publish_interval(Duration::from_millis(100))
        .spawn();
    tracing_subscriber::registry().with(console).init();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .expect("a runtime");
    let checked = rt.block_on(async { tokio::time::timeout(Duration::from_secs(60), check(port)).await });
    match checked {
        Ok(Ok(())) => println!("console-check: ok"),
        Ok(Err(e)) => {
            eprintln!("console-check: FAILED: {e}");
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!("console-check: FAILED: not everything was seen within 60 s");
            std::process::exit(1);
        }
    }
}

/// What the console's stream said of one task.
#[derive(Default, Debug)]
struct Seen {
    name: Option<String>,
    loop_index: Option<u64>,
    polls: u64,
}

async fn check(port: u16) -> Result<(), String> {
    let runtime_monitor = tokio_metrics::RuntimeMonitor::new(&tokio::runtime::Handle::current());
    let mut runtime_intervals = runtime_monitor.intervals();
    let task_monitor = tokio_metrics::TaskMonitor::new();

    let lock = Arc::new(tokio::sync::Mutex::new(0u64));
    for (i, name) in NAMES.iter().enumerate() {
        let lock = lock.clone();
        let work = task_monitor.instrument(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5 + i as u64 * 5)).await;
                *lock.lock().await += 1;
            }
        });
        tokio::task::Builder::new()
            .name(name)
            .spawn(work)
            .map_err(|e| format!("spawning {name}: {e}"))?;
    }

    let mut client = loop {
        match InstrumentClient::connect(format!("http://127.0.0.1:{port}")).await {
            Ok(client) => break client,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let mut updates = client
        .watch_updates(InstrumentRequest {})
        .await
        .map_err(|e| format!("WatchUpdates: {e}"))?
        .into_inner();

    // Task ids of the console, with what was seen of each; field names by index, for
    // fields the stream names by their metadata's index.
    let mut tasks: HashMap<u64, Seen> = HashMap::new();
    let mut resource_types: BTreeSet<String> = BTreeSet::new();
    let mut field_names: HashMap<(u64, u64), String> = HashMap::new();
    loop {
        let update = updates
            .message()
            .await
            .map_err(|e| format!("the stream: {e}"))?
            .ok_or("the stream ended")?;
        if let Some(meta) = update.new_metadata {
            for m in meta.metadata {
                if let (Some(id), Some(md)) = (m.id, m.metadata) {
                    for (i, f) in md.field_names.iter().enumerate() {
                        field_names.insert((id.id, i as u64), f.clone());
                    }
                }
            }
        }
        if let Some(update) = update.task_update {
            for task in update.new_tasks {
                let Some(id) = task.id else { continue };
                let meta = task.metadata.map(|m| m.id).unwrap_or_default();
                let seen = tasks.entry(id.id).or_default();
                for field in task.fields {
                    let name = match field.name {
                        Some(Name::StrName(n)) => n,
                        Some(Name::NameIdx(i)) => field_names.get(&(meta, i)).cloned().unwrap_or_default(),
                        None => continue,
                    };
                    match (name.as_str(), field.value) {
                        ("task.name", Some(Value::DebugVal(v) | Value::StrVal(v))) => seen.name = Some(v),
                        ("netloop.loop", Some(Value::U64Val(v))) => seen.loop_index = Some(v),
                        _ => {}
                    }
                }
            }
            for (id, stats) in update.stats_update {
                let polls = stats.poll_stats.map(|p| p.polls).unwrap_or(0);
                tasks.entry(id).or_default().polls = polls;
            }
        }
        if let Some(update) = update.resource_update {
            for r in update.new_resources {
                resource_types.insert(r.concrete_type);
            }
        }
        let named: BTreeMap<&str, &Seen> = tasks
            .values()
            .filter_map(|s| s.name.as_deref().filter(|n| NAMES.contains(n)).map(|n| (n, s)))
            .collect();
        let complete = named.len() == NAMES.len()
            && named
                .values()
                .all(|s| s.polls > 0 && s.loop_index.is_some_and(|l| (l as usize) < WORKERS))
            && resource_types.contains("Mutex")
            && resource_types.contains("Sleep");
        if complete {
            for (name, s) in &named {
                println!(
                    "console: task {name}: netloop.loop={} polls={}",
                    s.loop_index.unwrap_or_default(),
                    s.polls
                );
            }
            println!("console: {} tasks, resources {:?}", tasks.len(), resource_types);
            break;
        }
    }

    let rt = runtime_intervals.next().ok_or("no runtime interval")?;
    println!(
        "tokio-metrics runtime: workers={} polls={} parks={} busy={:?} local_schedules={} steals={} remote_schedules={}",
        rt.workers_count,
        rt.total_polls_count,
        rt.total_park_count,
        rt.total_busy_duration,
        rt.total_local_schedule_count,
        rt.total_steal_count,
        rt.num_remote_schedules
    );
    if rt.workers_count != WORKERS
        || rt.total_polls_count == 0
        || rt.total_park_count == 0
        || rt.total_busy_duration.is_zero()
    {
        return Err(format!("runtime metrics zero where they must not be: {rt:?}"));
    }
    let t = task_monitor.cumulative();
    println!(
        "tokio-metrics tasks: instrumented={} first_polls={} polls={} poll_time={:?} scheduled={}",
        t.instrumented_count, t.first_poll_count, t.total_poll_count, t.total_poll_duration, t.total_scheduled_count
    );
    if t.instrumented_count != NAMES.len() as u64
        || t.first_poll_count == 0
        || t.total_poll_count == 0
        || t.total_poll_duration.is_zero()
    {
        return Err(format!("task metrics zero where they must not be: {t:?}"));
    }
    Ok(())
}
