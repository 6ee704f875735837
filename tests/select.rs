//! `select!`, `join!`, `try_join!` and `pin!`, checked against tokio's documented
//! semantics. Channels are tokio's runtime-agnostic `tokio::sync`; the clock is paused
//! wherever a test waits on timers, so no test waits in real time.

use std::cell::{Cell, RefCell};
use std::future::{Future, pending, poll_fn, ready};
use std::task::Poll;
use std::time::Duration;

use netloop::time::{self, Instant};
use netloop::{join, pin, select, try_join};
use netloop_tests::LIMIT;
use tokio::sync::{mpsc, oneshot};

const MS: Duration = Duration::from_millis(1);

/// Runs a test body under [`LIMIT`] (virtual time where the clock is paused, where an
/// idle runtime jumps straight to the deadline): a hang fails the test.
async fn guarded<F: Future>(body: F) -> F::Output {
    time::timeout(LIMIT, body).await.expect("the test body hangs")
}

/// Sets its flag when dropped: shows that a future was dropped.
struct SetOnDrop<'a>(&'a Cell<bool>);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// A future that logs `id` each time it is polled, then is ready with `id` if `ready`,
/// else pending (without a waker: only for selects that some other branch completes).
fn probe<'a>(log: &'a RefCell<Vec<usize>>, id: usize, ready: bool) -> impl Future<Output = usize> + 'a {
    poll_fn(move |_| {
        log.borrow_mut().push(id);
        if ready { Poll::Ready(id) } else { Poll::Pending }
    })
}

// ---------------------------------------------------------------- select!: branches

#[netloop::test]
async fn a_false_precondition_disables_its_branch_and_its_future_is_never_polled() {
    guarded(async {
        let evaluated = Cell::new(0);
        let polled = Cell::new(false);
        for _ in 0..100 {
            let out = select! {
                v = {
                    evaluated.set(evaluated.get() + 1);
                    poll_fn(|_| {
                        polled.set(true);
                        Poll::Ready(1)
                    })
                }, if false => v,
                v = ready(2) => v,
            };
            assert_eq!(out, 2);
        }
        assert_eq!(
            evaluated.get(),
            100,
            "a disabled branch's future expression is still evaluated"
        );
        assert!(!polled.get(), "but its future is never polled");

        // A true precondition leaves the branch enabled; preconditions see local state.
        let limit = 3;
        let out = select! {
            v = ready(1), if limit > 2 => v,
            v = pending::<i32>(), if limit > 0 => v,
        };
        assert_eq!(out, 1);
    })
    .await;
}

#[netloop::test]
async fn preconditions_are_evaluated_before_the_future_expressions() {
    guarded(async {
        let order = RefCell::new(Vec::new());
        let out = select! {
            v = {
                order.borrow_mut().push("future");
                ready(1)
            }, if {
                order.borrow_mut().push("precondition");
                true
            } => v,
        };
        assert_eq!(out, 1);
        assert_eq!(*order.borrow(), ["precondition", "future"]);
    })
    .await;
}

#[netloop::test]
async fn else_runs_when_every_branch_is_disabled() {
    guarded(async {
        // Disabled by preconditions: nothing is polled.
        let polled = Cell::new(false);
        let out = select! {
            v = ready(1), if false => v,
            v = poll_fn(|_| { polled.set(true); Poll::Ready(2) }), if 1 > 2 => v,
            else => 0,
        };
        assert_eq!(out, 0);
        assert!(!polled.get());

        // Disabled by outputs that do not match their patterns.
        let out = select! {
            Some(v) = ready(None::<i32>) => v,
            Ok(v) = ready(Err::<i32, ()>(())) => v,
            else => -1,
        };
        assert_eq!(out, -1);

        // Both at once.
        let out = select! {
            Some(_) = ready(None::<u8>) => "some",
            _ = ready(()), if false => "unit",
            else => "else",
        };
        assert_eq!(out, "else");

        // `else` is not taken while a branch is merely pending.
        let (tx, mut rx) = mpsc::channel(1);
        netloop::spawn(async move {
            netloop::task::yield_now().await;
            tx.send(5).await.unwrap();
        });
        let out = select! {
            Some(v) = rx.recv() => v,
            else => -1,
        };
        assert_eq!(out, 5);
    })
    .await;
}

#[netloop::test]
#[should_panic(expected = "all branches are disabled and there is no else branch")]
async fn without_else_all_branches_disabled_by_preconditions_panics() {
    guarded(async {
        let out: i32 = select! {
            v = ready(1), if false => v,
            v = ready(2), if false => v,
        };
        unreachable!("select! returned {out}");
    })
    .await;
}

#[netloop::test]
#[should_panic(expected = "all branches are disabled and there is no else branch")]
async fn without_else_all_branches_disabled_by_patterns_panics() {
    guarded(async {
        let (tx, mut rx) = mpsc::channel::<u32>(1);
        drop(tx);
        let out: u32 = select! {
            Some(v) = rx.recv() => v,
            Ok(v) = ready(Err::<u32, ()>(())) => v,
        };
        unreachable!("select! returned {out}");
    })
    .await;
}

#[netloop::test]
async fn biased_polls_in_the_written_order() {
    guarded(async {
        for _ in 0..500 {
            let first = select! {
                biased;
                v = ready(0) => v,
                v = ready(1) => v,
                v = ready(2) => v,
            };
            assert_eq!(first, 0, "with `biased;` the first ready branch in written order wins");
        }
        let log = RefCell::new(Vec::new());
        for _ in 0..100 {
            log.borrow_mut().clear();
            let winner = select! {
                biased;
                v = probe(&log, 0, false) => v,
                v = probe(&log, 1, false) => v,
                v = probe(&log, 2, true) => v,
                v = probe(&log, 3, true) => v,
            };
            assert_eq!(winner, 2);
            assert_eq!(*log.borrow(), [0, 1, 2], "polled in order, and not past the winner");
        }
        // A disabled branch is skipped in the order.
        let winner = select! {
            biased;
            v = ready(0), if false => v,
            v = ready(1) => v,
            v = ready(2) => v,
        };
        assert_eq!(winner, 1);
    })
    .await;
}

#[netloop::test]
async fn without_biased_the_branch_order_is_random() {
    guarded(async {
        const RUNS: usize = 3000;
        let mut wins = [0usize; 3];
        for _ in 0..RUNS {
            let w = select! {
                v = ready(0) => v,
                v = ready(1) => v,
                v = ready(2) => v,
            };
            wins[w] += 1;
        }
        // Each should win about a third of the time; 500 of 3000 is far out in the tail.
        assert!(wins.iter().all(|&w| w > 500), "wins per branch: {wins:?}");

        // The first branch polled varies too, not only the winner.
        let log = RefCell::new(Vec::new());
        let mut first_polled = [0usize; 2];
        for _ in 0..1000 {
            log.borrow_mut().clear();
            select! {
                _ = probe(&log, 0, true) => {}
                _ = probe(&log, 1, true) => {}
            }
            first_polled[log.borrow()[0]] += 1;
        }
        assert!(first_polled.iter().all(|&n| n > 200), "first polled: {first_polled:?}");
    })
    .await;
}

#[netloop::test(start_paused = true)]
async fn a_completed_future_whose_output_does_not_match_disables_only_its_branch() {
    guarded(async {
        let (tx, mut rx) = mpsc::channel::<u32>(1);
        drop(tx);
        let start = Instant::now();
        let out = select! {
            Some(v) = rx.recv() => format!("got {v}"),
            _ = time::sleep(50 * MS) => "timer".to_string(),
        };
        assert_eq!(
            out, "timer",
            "the closed channel's `None` disabled its branch; select kept waiting"
        );
        assert!(start.elapsed() >= 50 * MS);

        // The same with a literal pattern and a later match on another branch.
        let out = select! {
            1 = ready(2) => "one",
            Ok(n) = async {
                time::sleep(10 * MS).await;
                Ok::<u32, ()>(7)
            } => if n == 7 { "seven" } else { "other" },
        };
        assert_eq!(out, "seven");
    })
    .await;
}

#[netloop::test]
async fn the_losing_futures_are_dropped_before_the_handler_runs() {
    guarded(async {
        let dropped = Cell::new(false);
        select! {
            biased;
            _ = async {
                let _guard = SetOnDrop(&dropped);
                pending::<()>().await
            } => unreachable!(),
            _ = ready(()) => assert!(dropped.get(), "the pending branch's future was dropped first"),
        }
    })
    .await;
}

#[netloop::test]
async fn handlers_may_use_what_the_futures_borrowed_mutably() {
    guarded(async {
        let (tx, mut rx) = mpsc::channel(4);
        tx.send(1).await.unwrap();
        tx.send(2).await.unwrap();
        let mut buf = Vec::new();
        let len = select! {
            biased;
            // Borrows `buf` mutably and never completes.
            _ = async {
                buf.push(0);
                pending::<()>().await
            } => unreachable!(),
            // Borrows `rx` mutably.
            v = rx.recv() => {
                // Both borrows have ended: the handler uses `buf` and `rx` again.
                buf.push(v.unwrap());
                buf.push(rx.recv().await.unwrap());
                rx.close();
                buf.len()
            }
        };
        assert_eq!(len, 3);
        assert_eq!(buf, [0, 1, 2]);
        assert!(rx.recv().await.is_none());
    })
    .await;
}

#[netloop::test]
async fn patterns_may_bind_mut_and_destructure() {
    guarded(async {
        let v = select! {
            mut v = ready(vec![1]) => {
                v.push(2);
                v
            }
        };
        assert_eq!(v, [1, 2]);

        let v = select! {
            Some(mut v) = ready(Some(String::from("a"))) => {
                v.push('b');
                v
            }
            else => String::new(),
        };
        assert_eq!(v, "ab");

        let sum = select! {
            (mut a, b) = ready((1, 2)) => {
                a += b;
                a
            }
        };
        assert_eq!(sum, 3);

        struct Pair {
            left: u8,
            right: u8,
        }
        let swapped = select! {
            Pair { mut left, right } = ready(Pair { left: 1, right: 2 }) => {
                left *= 10;
                (right, left)
            }
        };
        assert_eq!(swapped, (2, 10));
    })
    .await;
}

#[netloop::test(start_paused = true)]
async fn select_in_a_loop_over_a_channel_and_an_interval() {
    guarded(async {
        let (tx, mut rx) = mpsc::channel(8);
        netloop::spawn(async move {
            for i in 0..5u32 {
                time::sleep(35 * MS).await;
                tx.send(i).await.unwrap();
            }
        });
        let start = Instant::now();
        let mut ticks = time::interval(10 * MS);
        let mut got = Vec::new();
        let mut n_ticks = 0;
        loop {
            select! {
                msg = rx.recv() => match msg {
                    Some(v) => got.push(v),
                    None => break,
                },
                _ = ticks.tick() => n_ticks += 1,
            }
        }
        assert_eq!(got, [0, 1, 2, 3, 4]);
        assert!(start.elapsed() >= 175 * MS);
        // Ticks at 0, 10, ..., 170 ms before the channel closes at 175 ms: 18. The
        // interval keeps its schedule though its `tick()` future is dropped each round.
        assert!((17..=19).contains(&n_ticks), "{n_ticks} ticks");
    })
    .await;
}

#[netloop::test]
async fn preconditions_track_completion_over_a_loop_with_else_to_finish() {
    guarded(async {
        // tokio's documented pattern: select over `&mut` pinned futures, disabling each
        // once done, until `else` ends the loop.
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        netloop::spawn(async move {
            tx1.send("one").unwrap();
            netloop::task::yield_now().await;
            tx2.send("two").unwrap();
        });
        pin!(rx1, rx2);
        let (mut done1, mut done2) = (false, false);
        let mut got = Vec::new();
        loop {
            select! {
                v = &mut rx1, if !done1 => {
                    done1 = true;
                    got.push(v.unwrap());
                }
                v = &mut rx2, if !done2 => {
                    done2 = true;
                    got.push(v.unwrap());
                }
                else => break,
            }
        }
        got.sort();
        assert_eq!(got, ["one", "two"]);
    })
    .await;
}

#[netloop::test]
async fn select_is_an_expression_and_handlers_control_the_enclosing_code() {
    guarded(async {
        let s: &str = select! { _ = ready(()) => "value" };
        assert_eq!(s, "value");

        // `break` with a value from a loop around the select.
        let mut n = 0;
        let v = loop {
            select! {
                _ = ready(()) => {
                    n += 1;
                    if n == 3 {
                        break n * 10;
                    }
                }
            }
        };
        assert_eq!(v, 30);

        // `continue` in a handler.
        let mut odd = Vec::new();
        for i in 0..6 {
            select! {
                v = ready(i) => if v % 2 == 0 { continue; },
            }
            odd.push(i);
        }
        assert_eq!(odd, [1, 3, 5]);

        // `?` and `return` in handlers apply to the enclosing function.
        async fn parse_plus_one(s: &str) -> Result<u32, std::num::ParseIntError> {
            let v = select! { t = ready(s) => t.parse::<u32>()? };
            Ok(v + 1)
        }
        assert_eq!(parse_plus_one("41").await, Ok(42));
        assert!(parse_plus_one("x").await.is_err());

        async fn sign(x: i32) -> &'static str {
            select! {
                v = ready(x) => {
                    if v < 0 {
                        return "negative";
                    }
                }
            }
            "non-negative"
        }
        assert_eq!(sign(-1).await, "negative");
        assert_eq!(sign(1).await, "non-negative");

        // Nested selects.
        let v = select! {
            a = ready(1) => select! {
                b = ready(a + 1) => a + b,
            },
        };
        assert_eq!(v, 3);
    })
    .await;
}

// ---------------------------------------------------------------- join!, try_join!

#[netloop::test]
async fn join_of_zero_one_and_three_futures_with_different_output_types() {
    guarded(async {
        let () = join!();
        let (one,) = join!(async { 1 });
        assert_eq!(one, 1);
        let (a, b, c) = join!(async { 1u8 }, async { "two" }, async { vec![3.0f64] });
        assert_eq!((a, b, c), (1u8, "two", vec![3.0]));
        // A trailing comma, and `IntoFuture` values.
        let (x, y) = join!(ready('x'), ready(String::from("y")),);
        assert_eq!((x, y), ('x', String::from("y")));
    })
    .await;
}

#[netloop::test(start_paused = true)]
async fn join_runs_its_futures_concurrently() {
    guarded(async {
        let start = Instant::now();
        let ((), ()) = join!(time::sleep(50 * MS), time::sleep(50 * MS));
        let took = start.elapsed();
        assert!(took >= 50 * MS && took < 100 * MS, "two 50 ms sleeps took {took:?}");

        // It waits for the slowest and returns every output.
        let start = Instant::now();
        let (fast, slow) = join!(
            async {
                time::sleep(10 * MS).await;
                "fast"
            },
            async {
                time::sleep(80 * MS).await;
                "slow"
            },
        );
        assert_eq!((fast, slow), ("fast", "slow"));
        let took = start.elapsed();
        assert!(took >= 80 * MS && took < 90 * MS, "took {took:?}");

        // Futures that need each other: run one after the other they would deadlock.
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        let (a, b) = join!(
            async {
                let v = rx2.await.unwrap();
                tx1.send(v + 1).unwrap();
                v
            },
            async {
                tx2.send(1).unwrap();
                rx1.await.unwrap()
            },
        );
        assert_eq!((a, b), (1, 2));
    })
    .await;
}

#[netloop::test(start_paused = true)]
async fn try_join_returns_every_ok_output() {
    guarded(async {
        let r: Result<(), ()> = try_join!();
        assert_eq!(r, Ok(()));
        let r: Result<(u8, &str, Vec<u8>), String> = try_join!(
            async {
                time::sleep(10 * MS).await;
                Ok(1)
            },
            async { Ok("two") },
            ready(Ok(vec![3])),
        );
        assert_eq!(r, Ok((1, "two", vec![3])));
        let r: Result<(i32,), ()> = try_join!(async { Ok(5) });
        assert_eq!(r, Ok((5,)));
    })
    .await;
}

#[netloop::test(start_paused = true)]
async fn try_join_short_circuits_on_the_first_err_and_drops_the_rest() {
    guarded(async {
        let dropped = Cell::new(false);
        let start = Instant::now();
        let r: Result<((), u32, ()), &str> = try_join!(
            async {
                time::sleep(20 * MS).await;
                Err("late")
            },
            async {
                let _guard = SetOnDrop(&dropped);
                pending::<()>().await;
                Ok(1)
            },
            async {
                time::sleep(10 * MS).await;
                Err("first")
            },
        );
        assert_eq!(r, Err("first"), "the first error in time, not in written order");
        assert!(
            dropped.get(),
            "the unfinished futures are dropped when try_join! returns"
        );
        let took = start.elapsed();
        assert!(took >= 10 * MS && took < 20 * MS, "returned after {took:?}");

        // An error after other futures succeeded still wins; their outputs are dropped.
        let r: Result<(u8, u8), u8> = try_join!(async { Ok(1) }, async {
            time::sleep(5 * MS).await;
            Err(2)
        });
        assert_eq!(r, Err(2));
    })
    .await;
}

// ---------------------------------------------------------------- pin!

#[netloop::test(start_paused = true)]
async fn pin_both_forms() {
    guarded(async {
        // `pin!(a, b)`: shadows each variable with a pinned reference.
        let a = async { 1 };
        let b = async { 2 };
        pin!(a, b);
        assert_eq!((&mut a).await + b.await, 3);

        // `pin! { let ...; }`.
        pin! {
            let c = async { 3 };
            let d = time::sleep(MS);
        }
        assert_eq!(c.as_mut().await, 3);
        d.as_mut().await;
        assert!(d.is_elapsed());

        // tokio's documented use: one sleep, pinned once, awaited across a select! loop.
        let (tx, mut rx) = mpsc::channel(8);
        netloop::spawn(async move {
            for i in 0..3 {
                time::sleep(30 * MS).await;
                tx.send(i).await.unwrap();
            }
        });
        let start = Instant::now();
        let deadline = time::sleep(100 * MS);
        pin!(deadline);
        let mut got = Vec::new();
        loop {
            select! {
                _ = &mut deadline => break,
                Some(v) = rx.recv() => got.push(v),
            }
        }
        assert_eq!(got, [0, 1, 2]);
        let took = start.elapsed();
        assert!(took >= 100 * MS && took < 110 * MS, "the one sleep was kept: {took:?}");
    })
    .await;
}

/// `join!`'s and `try_join!`'s futures have tokio's sizes (32 and 48 bytes for one and
/// two ready `i32` futures; 24 and 40 when biased), which tokio's own tests assert: the
/// futures sit in one pinned struct, each in a `repr(C)` `MaybeDone` as tokio's, and the
/// poll closure holds a reference and a rotation index.
#[test]
#[cfg(target_pointer_width = "64")]
fn join_futures_have_tokios_sizes() {
    use futures::future::ready;
    use std::mem::size_of_val;
    let one = async { netloop::join!(ready(0i32)) };
    let two = async { netloop::join!(ready(0i32), ready(0i32)) };
    let one_biased = async { netloop::join!(biased; ready(0i32)) };
    let two_biased = async { netloop::join!(biased; ready(0i32), ready(0i32)) };
    let try_two = async { netloop::try_join!(ready(Ok::<i32, ()>(0)), ready(Ok::<i32, ()>(0))) };
    let sizes = [
        size_of_val(&one),
        size_of_val(&two),
        size_of_val(&one_biased),
        size_of_val(&two_biased),
        size_of_val(&try_two),
    ];
    let tokio = [32, 48, 24, 40, 48];
    for (i, (ours, theirs)) in sizes.iter().zip(tokio).enumerate() {
        assert_eq!(
            *ours, theirs,
            "case {i}: {ours} bytes, tokio's is {theirs}; all: {sizes:?}"
        );
    }
}

#[test]
fn select_forms_tokio_accepts() {
    netloop_tests::test_body(|| {
        let rt = netloop::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            // Only `else`: it runs at once.
            let v = select! { else => 1 };
            assert_eq!(v, 1);
            // A temporary borrowed in the future expression lives through the select.
            let v = select! { v = &mut ready(2) => v };
            assert_eq!(v, 2);
            // A branch output whose type only the diverging `continue` fixes.
            let never = poll_fn(|_| panic!("a disabled branch is never polled"));
            let v = select! { _ = never, if false => unreachable!(), v = ready(3) => v };
            assert_eq!(v, 3);
        });
    });
}

#[test]
fn select_yields_once_the_budget_is_spent() {
    netloop_tests::test_body(|| {
        let rt = netloop::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            // Without the budget check, an always-ready branch in a loop never lets the
            // other task run, and this loop would spin forever.
            let flag = std::rc::Rc::new(Cell::new(false));
            let set = flag.clone();
            let local = netloop::task::LocalSet::new();
            local
                .run_until(async move {
                    netloop::task::spawn_local(async move { set.set(true) });
                    let mut rounds = 0u64;
                    while !flag.get() {
                        select! { _ = netloop::task::consume_budget() => {} }
                        rounds += 1;
                    }
                    assert!(rounds > 0);
                })
                .await;
        });
    });
}

#[test]
fn select_keeps_tokios_future_sizes() {
    // tokio's own tests pin these sizes (64-bit targets): the futures, one mask and one
    // pinned reference are kept across the await, nothing more.
    let one = async {
        let a = ready(0i32);
        select! { _ = a => {} }
    };
    let three = async {
        let (a, b, c) = (ready(0i32), ready(0i32), ready(0i32));
        select! { _ = a => {}, _ = b => {}, _ = c => {} }
    };
    if std::mem::size_of::<usize>() == 8 {
        assert_eq!(std::mem::size_of_val(&one), 32);
        assert_eq!(std::mem::size_of_val(&three), 48);
    }
}
