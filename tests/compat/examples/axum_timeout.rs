//! An axum server, with or without tower-http's timeout layer, on netloop (with
//! `tokio-compat`) or on tokio: one source, one worker, for `benches/compat/run.sh`.
//!
//! ```sh
//! axum_timeout netloop|tokio timeout|plain PORT
//! ```
//!
//! It serves `GET /` with "hello", and `GET /tick` with "tick" after a 1 ms
//! `tokio::time::sleep`, until killed. On netloop the accept loop and the
//! connections are netloop's (its `TcpListener` and `TcpStream`, served by hyper-util's
//! connection builder with netloop's executor); the timeout layer's sleeps are tokio's,
//! on the compat runtime. On tokio everything is tokio's.

use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use tower_http::timeout::TimeoutLayer;

fn app(timeout: bool) -> Router {
    // `/tick` waits on a tokio timer: on netloop that timer is the compat runtime's.
    let app = Router::new().route("/", get(|| async { "hello" })).route(
        "/tick",
        get(|| async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            "tick"
        }),
    );
    if timeout {
        app.layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(10),
        ))
    } else {
        app
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = args.first().map(String::as_str).unwrap_or("netloop");
    let timeout = args.get(1).map(String::as_str) != Some("plain");
    let port: u16 = args.get(2).and_then(|p| p.parse().ok()).unwrap_or(8090);
    let addr = format!("127.0.0.1:{port}");
    match runtime {
        "tokio" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(async {
                let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
                println!("tokio: serving on {addr}");
                axum::serve(listener, app(timeout)).await.expect("serve");
            });
        }
        _ => {
            let rt = netloop::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("netloop runtime");
            rt.block_on(async {
                let listener = netloop::net::TcpListener::bind(&addr).await.expect("bind");
                println!("netloop: serving on {addr}");
                let app = app(timeout);
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        continue;
                    };
                    let service = hyper_util::service::TowerToHyperService::new(app.clone());
                    netloop::spawn(async move {
                        let io = hyper_util::rt::TokioIo::new(socket);
                        let _ = hyper_util::server::conn::auto::Builder::new(netloop::hyper_rt::NetloopExecutor)
                            .serve_connection(io, service)
                            .await;
                    });
                }
            });
        }
    }
}
