//! `#[rt::test]` in its tokio forms, and the macros through `rt::`, on either runtime.
//! Every body runs under `rt::time::timeout`.

use std::time::Duration;

use netloop_dropin::rt;
use netloop_dropin::rt::sync::{mpsc, oneshot};
use rt::time::{Instant, timeout};

const LIMIT: Duration = Duration::from_secs(5);

#[rt::test]
async fn current_thread_by_default() {
    timeout(LIMIT, async {
        let flavor = rt::runtime::Handle::current().runtime_flavor();
        assert_eq!(flavor, rt::runtime::RuntimeFlavor::CurrentThread);
        // `!Send` futures can be spawned locally... inside a LocalSet on tokio.
        let local = rt::task::LocalSet::new();
        let rc = std::rc::Rc::new(5);
        let got = local
            .run_until(async move { rt::task::spawn_local(async move { *rc }).await.unwrap() })
            .await;
        assert_eq!(got, 5);
    })
    .await
    .unwrap();
}

#[rt::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_thread_with_two_workers() {
    timeout(LIMIT, async {
        let flavor = rt::runtime::Handle::current().runtime_flavor();
        assert_eq!(flavor, rt::runtime::RuntimeFlavor::MultiThread);
        let handles: Vec<_> = (0..8).map(|i| rt::spawn(async move { i * 2 })).collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await.unwrap();
        }
        assert_eq!(sum, 56);
    })
    .await
    .unwrap();
}

#[rt::test]
async fn a_test_returning_result() -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = timeout(LIMIT, async { "42".parse::<u32>() }).await??;
    assert_eq!(n, 42);
    Ok(())
}

#[rt::test(start_paused = true)]
async fn start_paused_and_advance() {
    // The limit is in virtual time here: the sleeps below stay well inside it.
    let real = std::time::Instant::now();
    timeout(LIMIT, async {
        let start = Instant::now();
        rt::time::sleep(Duration::from_secs(2)).await;
        assert!(start.elapsed() >= Duration::from_secs(2));

        let (tx, rx) = oneshot::channel();
        rt::spawn(async move {
            rt::time::sleep(Duration::from_secs(1)).await;
            tx.send(()).unwrap();
        });
        // Let the task start its sleep, then move the clock past it.
        rt::task::yield_now().await;
        rt::time::advance(Duration::from_secs(1)).await;
        rt::time::timeout(Duration::from_millis(100), rx)
            .await
            .unwrap()
            .unwrap();
    })
    .await
    .unwrap();
    assert!(
        real.elapsed() < Duration::from_secs(2),
        "virtual seconds took {:?}",
        real.elapsed()
    );
}

#[rt::test(start_paused = true)]
async fn select_join_try_join_and_pin_through_rt() {
    timeout(LIMIT, async {
        // select!: a closed channel's `None` disables its branch; the timer wins.
        let (tx, mut rx) = mpsc::channel::<u8>(1);
        drop(tx);
        let out = rt::select! {
            Some(v) = rx.recv() => format!("{v}"),
            _ = rt::time::sleep(Duration::from_millis(10)) => "timer".to_string(),
        };
        assert_eq!(out, "timer");
        let out = rt::select! {
            biased;
            v = async { 1 } => v,
            v = async { 2 } => v,
        };
        assert_eq!(out, 1);
        let out = rt::select! {
            _ = async {}, if false => 0,
            else => 1,
        };
        assert_eq!(out, 1);

        // join!: concurrent.
        let start = Instant::now();
        let (a, b) = rt::join!(
            async {
                rt::time::sleep(Duration::from_millis(50)).await;
                'a'
            },
            async {
                rt::time::sleep(Duration::from_millis(50)).await;
                "b"
            },
        );
        assert_eq!((a, b), ('a', "b"));
        assert!(start.elapsed() < Duration::from_millis(100));

        // try_join!: the first error.
        let r: Result<(u8, u8), &str> = rt::try_join!(async { Ok(1) }, async { Err("no") });
        assert_eq!(r, Err("no"));

        // pin!
        let fut = async { 7 };
        rt::pin!(fut);
        assert_eq!((&mut fut).await, 7);
    })
    .await
    .unwrap();
}

#[rt::test]
#[should_panic(expected = "all branches are disabled and there is no else branch")]
async fn select_without_else_panics_when_all_disabled() {
    timeout(LIMIT, async {
        let _: u8 = rt::select! {
            v = async { 1 }, if false => v,
        };
    })
    .await
    .unwrap();
}
