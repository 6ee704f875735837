//! `netloop::task_local!`: a value scoped to a future, seen by everything it calls,
//! wherever the future is polled, and by nothing else.

use std::cell::Cell;
use std::rc::Rc;

use netloop::task::{self, JoinSet};
use netloop::time::{Duration, sleep};

netloop::task_local! {
    static NUMBER: u32;
    /// Doc comments and visibility are accepted, as with tokio's macro.
    pub static NAME: String;
}

#[netloop::test]
async fn scope_sets_the_value_for_the_future_and_nested_scopes_shadow_it() {
    NUMBER
        .scope(1, async {
            assert_eq!(NUMBER.get(), 1);
            NUMBER
                .scope(2, async {
                    assert_eq!(NUMBER.get(), 2);
                })
                .await;
            assert_eq!(NUMBER.get(), 1, "the outer value is back after the inner scope");
            assert_eq!(NUMBER.sync_scope(3, || NUMBER.get()), 3);
            assert_eq!(NUMBER.with(|n| *n + 10), 11);
        })
        .await;
    assert!(NUMBER.try_get().is_err());
    assert_eq!(
        NUMBER.try_with(|_| ()).unwrap_err().to_string(),
        "task-local value not set"
    );
}

#[netloop::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_task_sees_its_own_value_across_awaits_and_threads() {
    let mut set = JoinSet::new();
    for i in 0..16u32 {
        set.spawn(NUMBER.scope(i, async move {
            for _ in 0..3 {
                sleep(Duration::from_millis(1)).await;
                task::yield_now().await;
                assert_eq!(NUMBER.get(), i, "the value follows its own task");
            }
            NAME.scope(format!("task {i}"), async move { NAME.get() }).await
        }));
    }
    let mut names = Vec::new();
    while let Some(r) = set.join_next().await {
        names.push(r.unwrap());
    }
    names.sort();
    assert_eq!(names.len(), 16);
    assert!(names.contains(&"task 15".to_string()));
}

#[test]
#[should_panic(expected = "cannot access a task-local storage value without setting it first")]
fn with_outside_a_scope_panics_with_tokios_message() {
    NUMBER.with(|_| ());
}

#[test]
#[should_panic(expected = "cannot enter a task-local scope while the task-local storage is borrowed")]
fn entering_a_scope_from_inside_with_panics() {
    NUMBER.sync_scope(1, || NUMBER.with(|_| NUMBER.sync_scope(2, || ())));
}

#[netloop::test]
async fn the_value_is_set_while_the_future_is_dropped_and_can_be_taken() {
    struct ReadsOnDrop(Rc<Cell<Option<u32>>>);
    impl Drop for ReadsOnDrop {
        fn drop(&mut self) {
            self.0.set(NUMBER.try_get().ok());
        }
    }
    let seen = Rc::new(Cell::new(None));
    let guard = ReadsOnDrop(seen.clone());
    let fut = NUMBER.scope(9, async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    });
    let mut fut = Box::pin(fut);
    assert!(futures::poll!(fut.as_mut()).is_pending());
    assert_eq!(fut.as_mut().take_value(), Some(9));
    assert_eq!(fut.as_mut().take_value(), None, "taken once");
    drop(fut);
    assert_eq!(seen.get(), None, "the value was taken before the drop");

    let seen = Rc::new(Cell::new(None));
    let guard = ReadsOnDrop(seen.clone());
    let fut = Box::pin(NUMBER.scope(5, async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    }));
    drop(fut);
    assert_eq!(seen.get(), Some(5), "the future's destructor ran inside the scope");
}
