//! tokio's tracing instrumentation on netloop (`--cfg tokio_unstable` and the
//! `tracing` feature), as console-subscriber reads it: a task's `runtime.spawn` span
//! with its name and netloop's loop field, the waker events that name the task's span,
//! and the resource spans of a timer and a mutex. tokio's own `tracing_*` tests check
//! the rest (tests/tokio-conformance, `--unstable`).
//!
//! ```sh
//! RUSTFLAGS="--cfg tokio_unstable" CARGO_TARGET_DIR=target/unstable \
//!   cargo test -p netloop-tests --features tracing --test tracing
//! ```
#![cfg(all(tokio_unstable, feature = "tracing"))]

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

use netloop::runtime::Builder;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span or an event as recorded: name, target, fields (as text).
#[derive(Debug, Clone)]
struct Seen {
    id: u64,
    name: &'static str,
    target: String,
    fields: HashMap<String, String>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

/// Records every span and event of the process: the tests share it (one global
/// subscriber, since tasks make their spans on the loops' threads) and tell theirs
/// apart by names and fields of their own.
#[derive(Default)]
struct Recorder {
    next: AtomicU64,
    spans: Mutex<Vec<Seen>>,
    events: Mutex<Vec<Seen>>,
}

impl Subscriber for &'static Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, SeqCst) + 1;
        let mut fields = HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        let meta = attrs.metadata();
        self.spans.lock().unwrap().push(Seen {
            id,
            name: meta.name(),
            target: meta.target().to_string(),
            fields,
        });
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(Seen {
            id: 0,
            name: event.metadata().name(),
            target: event.metadata().target().to_string(),
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn recorder() -> &'static Recorder {
    static RECORDER: OnceLock<&'static Recorder> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let recorder: &'static Recorder = Box::leak(Box::default());
        tracing::subscriber::set_global_default(recorder).expect("the only global subscriber");
        recorder
    })
}

/// The `runtime.spawn` span of the task named `name`.
fn task_span(name: &str) -> Option<Seen> {
    recorder()
        .spans
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.name == "runtime.spawn" && s.fields.get("task.name").map(String::as_str) == Some(name))
        .cloned()
}

#[test]
fn a_named_task_span_says_which_loop_it_lives_on() {
    recorder();
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for i in 0..4 {
        let name = format!("loop-field-{i}");
        let worker = rt.block_on(async {
            netloop::task::Builder::new()
                .name(&name)
                .spawn(async {
                    netloop::time::sleep(Duration::from_millis(1)).await;
                    netloop::runtime::worker_index()
                })
                .unwrap()
                .await
                .unwrap()
        });
        let span = task_span(&name).expect("the task's span");
        assert_eq!(span.target, "tokio::task");
        assert_eq!(span.fields["kind"], "task");
        assert_eq!(span.fields["loc.file"], file!());
        // The loop the task says it ran on, from its first poll to its end.
        assert_eq!(span.fields.get("netloop.loop"), worker.map(|w| w.to_string()).as_ref());
    }
}

#[test]
fn waker_events_name_the_task_span() {
    recorder();
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        netloop::task::Builder::new()
            .name("waker-events")
            .spawn(async {
                let mut woken = false;
                std::future::poll_fn(|cx| {
                    if woken {
                        return Poll::Ready(());
                    }
                    woken = true;
                    let waker = cx.waker().clone();
                    cx.waker().wake_by_ref();
                    waker.wake();
                    Poll::Pending
                })
                .await
            })
            .unwrap()
            .await
            .unwrap()
    });
    let span = task_span("waker-events").expect("the task's span");
    let ops: Vec<String> = recorder()
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.target == "tokio::task::waker" && e.fields.get("task.id") == Some(&span.id.to_string()))
        .map(|e| e.fields["op"].clone())
        .collect();
    for op in ["waker.clone", "waker.wake_by_ref", "waker.wake"] {
        assert!(ops.iter().any(|o| o == op), "{op} missing from {ops:?}");
    }
}

#[test]
fn a_sleep_and_a_mutex_are_resources_where_they_were_made() {
    recorder();
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    let line = line!() + 2;
    rt.block_on(async {
        let lock = netloop::sync::Mutex::new(0);
        netloop::time::sleep(Duration::from_millis(1)).await;
        *lock.lock().await += 1;
    });
    let spans = recorder().spans.lock().unwrap().clone();
    let made_here = |concrete: &str, line: u32| {
        spans.iter().any(|s| {
            s.name == "runtime.resource"
                && s.fields.get("concrete_type").map(String::as_str) == Some(concrete)
                && s.fields.get("loc.file").map(String::as_str) == Some(file!())
                && s.fields.get("loc.line") == Some(&line.to_string())
        })
    };
    assert!(made_here("Mutex", line), "no Mutex resource made at line {line}");
    assert!(
        made_here("Sleep", line + 1),
        "no Sleep resource made at line {}",
        line + 1
    );
    let lock_ops = spans
        .iter()
        .filter(|s| {
            s.name == "runtime.resource.async_op" && s.fields.get("source").map(String::as_str) == Some("Mutex::lock")
        })
        .count();
    assert!(lock_ops >= 1, "no Mutex::lock async op");
}
