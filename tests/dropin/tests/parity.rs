//! tokio idioms that netloop once lacked (each was a gap found by writing these
//! programs against tokio first); they now build and pass on both runtimes.

use std::future::{Future, ready};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use netloop_dropin::rt;

const LIMIT: Duration = Duration::from_secs(5);

/// `tokio::time::Duration`: tokio re-exports `std::time::Duration` in `time`, and its
/// docs and tutorials import it from there (`use tokio::time::{sleep, Duration};`).
#[rt::test]
async fn time_reexports_duration() {
    use rt::time::{Duration, sleep};
    rt::time::timeout(LIMIT, sleep(Duration::from_millis(1))).await.unwrap();
}

/// `JoinError: Sync` (tokio wraps the panic payload to make it so): needed for `?` into
/// `Box<dyn Error + Send + Sync>` and `anyhow::Error`.
#[rt::test]
async fn join_error_converts_into_a_send_sync_box() {
    async fn run() -> Result<u8, Box<dyn std::error::Error + Send + Sync>> {
        Ok(rt::spawn(async { 1u8 }).await?)
    }
    assert_eq!(rt::time::timeout(LIMIT, run()).await.unwrap().unwrap(), 1);
}

/// `select!` takes any expression as a branch's future, struct literals included.
#[rt::test]
async fn select_branch_future_may_be_a_struct_literal() {
    struct Value {
        v: u8,
    }
    impl Future for Value {
        type Output = u8;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u8> {
            Poll::Ready(self.v)
        }
    }
    let v = rt::select! { v = Value { v: 4 } => v };
    assert_eq!(v, 4);
}

/// `ref mut` bindings in a `select!` pattern.
#[rt::test]
async fn select_pattern_may_bind_ref_mut() {
    let len = rt::select! {
        Some(ref mut s) = ready(Some(String::from("a"))) => {
            s.push('b');
            s.len()
        }
        else => 0,
    };
    assert_eq!(len, 2);
}

/// `join!(biased; ...)` and `try_join!(biased; ...)`: poll in the written order.
#[rt::test]
async fn join_and_try_join_accept_biased() {
    let order = std::cell::RefCell::new(Vec::new());
    let (a, b) = rt::join!(biased; async { order.borrow_mut().push(1); 1 }, async { order.borrow_mut().push(2); 2 });
    assert_eq!((a, b), (1, 2));
    assert_eq!(*order.borrow(), [1, 2]);
    let r: Result<(u8, u8), ()> = rt::try_join!(biased; async { Ok(1) }, async { Ok(2) });
    assert_eq!(r, Ok((1, 2)));
}

/// `AbortHandle::is_finished` (netloop's `AbortHandle` has `is_aborted` instead).
#[rt::test]
async fn abort_handle_is_finished() {
    let handle = rt::spawn(async {});
    let abort = handle.abort_handle();
    rt::time::timeout(LIMIT, handle).await.unwrap().unwrap();
    assert!(abort.is_finished());
}

/// `JoinSet::join_next_with_id` and `task::id()`.
#[rt::test]
async fn joinset_join_next_with_id_and_task_id() {
    let mut set = rt::task::JoinSet::new();
    let abort = set.spawn(async { rt::task::id() });
    let (id, inner) = rt::time::timeout(LIMIT, set.join_next_with_id())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(id, abort.id());
    assert_eq!(inner, id);
}
