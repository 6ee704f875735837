//! A `LocalSet` running `!Send` tasks that share `Rc<RefCell<_>>` state, inside a
//! multi-thread runtime and on a current-thread runtime built by hand.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use netloop_dropin::rt;
use rt::task::{self, LocalSet};

#[rt::main]
async fn main() {
    let state = Rc::new(RefCell::new(Vec::new()));
    let local = LocalSet::new();

    // `run_until`: `spawn_local` inside it adds to the set.
    let sum = local
        .run_until(async {
            let mut handles = Vec::new();
            for i in 0..4 {
                let state = Rc::clone(&state);
                handles.push(task::spawn_local(async move {
                    task::yield_now().await;
                    state.borrow_mut().push(i);
                    i
                }));
            }
            let mut sum = 0;
            for h in handles {
                sum += h.await.unwrap();
            }
            sum
        })
        .await;
    assert_eq!(sum, 6);

    // Tasks given to the set directly, then the set awaited until they all finish.
    let s = Rc::clone(&state);
    local.spawn_local(async move {
        rt::time::sleep(Duration::from_millis(10)).await;
        s.borrow_mut().push(100);
    });
    local.await;
    let mut seen = state.borrow().clone();
    seen.sort();
    assert_eq!(seen, [0, 1, 2, 3, 100]);

    // The synchronous form: `LocalSet::block_on` on a current-thread runtime, on a
    // thread of its own (a runtime cannot be started inside another).
    let counted = std::thread::spawn(|| {
        let runtime = rt::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let local = LocalSet::new();
        local.block_on(&runtime, async {
            let counter = Rc::new(RefCell::new(0));
            let handles: Vec<_> = (0..10)
                .map(|_| {
                    let counter = Rc::clone(&counter);
                    task::spawn_local(async move { *counter.borrow_mut() += 1 })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            *counter.borrow()
        })
    })
    .join()
    .unwrap();
    assert_eq!(counted, 10);

    println!(
        "local_set: ok on {}: state {seen:?}, counted {counted}",
        netloop_dropin::RUNTIME
    );
}
