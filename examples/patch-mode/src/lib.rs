//! A small tokio application, written against tokio's API only, that netloop runs by
//! one `[patch.crates-io]` line in `Cargo.toml` (docs/patch-mode.md):
//!
//! - an axum router behind tower-http's `TimeoutLayer`, whose timers are `tokio::time`'s;
//! - a reminder service: a task that owns a tokio-util `DelayQueue` and answers each
//!   request when its deadline passes;
//! - a line protocol over TCP framed with tokio-util's `LinesCodec`.
//!
//! Nothing here names netloop. With the patch, `tokio` in this crate and in axum, hyper,
//! hyper-util, tower-http, tokio-util and reqwest is netloop's `tokio` crate.

use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{Framed, LinesCodec};
use tokio_util::time::DelayQueue;
use tower_http::timeout::TimeoutLayer;

/// How long a request may take before the timeout layer answers 408.
pub const REQUEST_TIMEOUT: Duration = Duration::from_millis(300);

/// A request to the reminder task: answer on `reply` after `after`.
struct Reminder {
    after: Duration,
    reply: oneshot::Sender<()>,
}

/// The reminder service's handle, shared by the router's handlers.
#[derive(Clone)]
pub struct Reminders {
    tx: mpsc::Sender<Reminder>,
}

impl Reminders {
    /// Starts the task that owns the `DelayQueue`; it ends when every handle is gone and
    /// every reminder has fired.
    pub fn start() -> Reminders {
        let (tx, mut rx) = mpsc::channel::<Reminder>(1024);
        tokio::spawn(async move {
            let mut queue: DelayQueue<oneshot::Sender<()>> = DelayQueue::new();
            let mut open = true;
            loop {
                tokio::select! {
                    msg = rx.recv(), if open => match msg {
                        Some(r) => {
                            queue.insert(r.reply, r.after);
                        }
                        None => open = false,
                    },
                    Some(expired) = queue.next(), if !queue.is_empty() => {
                        let _ = expired.into_inner().send(());
                    }
                    else => break,
                }
            }
        });
        Reminders { tx }
    }

    /// Resolves after `after`, as the reminder task's `DelayQueue` says.
    pub async fn remind(&self, after: Duration) {
        let (reply, done) = oneshot::channel();
        self.tx
            .send(Reminder { after, reply })
            .await
            .expect("the reminder task runs");
        done.await.expect("the reminder task answers");
    }
}

#[derive(serde::Deserialize)]
struct RemindQuery {
    ms: u64,
}

/// The application's routes, behind tower-http's `TimeoutLayer`:
/// - `GET /`: "hello";
/// - `GET /tick`: "tick" after a 1 ms `tokio::time::sleep` (a request that waits on a timer);
/// - `GET /slow`: sleeps longer than [`REQUEST_TIMEOUT`], so the layer answers 408;
/// - `GET /remind?ms=N`: answers "reminded" once the reminder service's `DelayQueue`
///   releases the request, N milliseconds later.
pub fn router(reminders: Reminders) -> Router {
    Router::new()
        .route("/", get(|| async { "hello" }))
        .route(
            "/tick",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                "tick"
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(REQUEST_TIMEOUT * 20).await;
                "too late"
            }),
        )
        .route(
            "/remind",
            get(
                |State(reminders): State<Reminders>, Query(q): Query<RemindQuery>| async move {
                    reminders.remind(Duration::from_millis(q.ms)).await;
                    "reminded"
                },
            ),
        )
        .with_state(reminders)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
}

/// Serves [`router`] on `listener` until the process ends.
pub async fn serve_http(listener: TcpListener) -> std::io::Result<()> {
    axum::serve(listener, router(Reminders::start())).await
}

/// Serves the line protocol on `listener`: each connection gets its own task, and each
/// line is answered with the line upper-cased. A connection ends at the client's EOF or
/// at a line of over 1,024 bytes.
pub async fn serve_lines(listener: TcpListener) -> std::io::Result<()> {
    loop {
        let (socket, _) = listener.accept().await?;
        tokio::spawn(async move {
            let mut lines = Framed::new(socket, LinesCodec::new_with_max_length(1024));
            while let Some(Ok(line)) = lines.next().await {
                if lines.send(line.to_uppercase()).await.is_err() {
                    break;
                }
            }
        });
    }
}
