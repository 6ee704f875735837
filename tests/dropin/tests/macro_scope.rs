//! The names `select!` brings into its branches, on either runtime from one source: a
//! branch names `Pin` without importing it (tokio's expansion has `use
//! $crate::macros::support::Pin;`), and `BRANCHES`, its number of branches. Nothing in
//! this file imports `Pin`.

use std::future::{pending, ready};
use std::time::Duration;

use netloop_dropin::rt;

const LIMIT: Duration = Duration::from_secs(5);

#[rt::test]
async fn select_branches_name_pin_and_branches() {
    let mut later = Box::pin(ready(1u8));
    let got = rt::time::timeout(LIMIT, async {
        rt::select! {
            v = Pin::as_mut(&mut later) => {
                let boxed: Pin<Box<u8>> = Box::pin(v);
                (*boxed, BRANCHES)
            }
            _ = pending::<()>() => (0, BRANCHES),
        }
    })
    .await
    .unwrap();
    assert_eq!(got, (1, 2));
}

/// `macros::support` is nameable, as code written for tokio names it.
#[rt::test]
async fn macros_support_is_nameable() {
    use rt::macros::support::{Pin, Poll, poll_fn};
    let mut fut = Box::pin(ready(3u8));
    let got = poll_fn(|cx| match Pin::as_mut(&mut fut).poll(cx) {
        Poll::Ready(v) => Poll::Ready(v),
        Poll::Pending => Poll::Pending,
    })
    .await;
    assert_eq!(got, 3);
}
