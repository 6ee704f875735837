//! Unit tests of the scheduled-task queue and its state word.

use super::*;

fn task(deadline: u64) -> ScheduledTask {
    ScheduledTask::new(deadline, Job::Once(Box::new(|| {})), ScheduledState::new(deadline))
}

fn pop_task(q: &mut ScheduledQueue, now: u64) -> Option<ScheduledTask> {
    match q.pop_due(now)? {
        Timer::Task(t) => Some(*t),
        Timer::Wake(_) => panic!("a local wake where a task was expected"),
    }
}

/// A waker that counts its wakes.
fn counting_waker() -> (Waker, Arc<std::sync::atomic::AtomicUsize>) {
    struct Count(Arc<std::sync::atomic::AtomicUsize>);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Relaxed);
        }
    }
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    (Waker::from(Arc::new(Count(n.clone()))), n)
}

#[test]
#[cfg(target_pointer_width = "64")]
fn a_wheel_entry_takes_48_bytes() {
    assert_eq!(std::mem::size_of::<Timer>(), 32);
    assert_eq!(crate::wheel::node_size::<Timer>(), 48);
}

#[test]
fn local_wakes_and_tasks_leave_in_one_deadline_order() {
    let mut q = ScheduledQueue::default();
    let (w, _) = counting_waker();
    assert!(q.push(task(30)).is_none());
    let a = q.push_wake(10, w.clone());
    assert!(q.push(task(20)).is_none());
    let b = q.push_wake(30, w.clone());
    let mut order = vec![];
    while let Some(t) = q.pop_due(100) {
        order.push(match t {
            Timer::Task(t) => ("task", t.deadline),
            Timer::Wake(w) => ("wake", w.deadline),
        });
    }
    // Equal deadlines: first submitted first.
    assert_eq!(order, vec![("wake", 10), ("task", 20), ("task", 30), ("wake", 30)]);
    assert!(
        q.wakes(&a, &w).is_none() && q.wakes(&b, &w).is_none(),
        "fired timers are gone"
    );
}

#[test]
fn a_local_wake_is_found_and_removed_by_its_key_only() {
    let mut q = ScheduledQueue::default();
    let (w1, fired1) = counting_waker();
    let (w2, fired2) = counting_waker();
    let a = q.push_wake(5 * crate::wheel::TICK, w1.clone());
    assert_eq!(q.wakes(&a, &w1), Some(true));
    assert_eq!(q.wakes(&a, &w2), Some(false));
    assert!(q.set_waker(&a, w2.clone()).is_ok(), "the replaced waker comes back");
    assert_eq!(q.wakes(&a, &w2), Some(true));
    match q.pop_due(5 * crate::wheel::TICK) {
        Some(Timer::Wake(w)) => w.fire(),
        _ => panic!("the wake is due"),
    }
    assert_eq!(
        (fired1.load(Relaxed), fired2.load(Relaxed)),
        (0, 1),
        "the latest waker is woken"
    );
    // Its key, reused by a new timer, does not reach the new one.
    let b = q.push_wake(60 * crate::wheel::TICK, w1);
    assert!(q.remove_wake(&a).is_none() && q.wakes(&a, &w2).is_none() && q.set_waker(&a, w2).is_err());
    assert!(q.remove_wake(&b).is_some());
    assert!(q.remove_wake(&b).is_none());
    assert!(q.is_empty());
}

#[test]
fn the_state_word_orders_cancel_postpone_and_claim() {
    // Postponed while pending: claimed later, at the new deadline.
    let state = ScheduledState::new(10);
    let mut task = ScheduledTask::new(10, Job::Once(Box::new(|| {})), state.clone());
    assert!(state.postpone(30));
    assert!(
        state.postpone(20),
        "an earlier deadline changes nothing, and it is pending"
    );
    assert_eq!(task.claim(), Claim::Later);
    assert_eq!(task.deadline, 30);
    assert_eq!(task.claim(), Claim::Run);
    assert!(!state.postpone(40) && !state.try_cancel(), "too late once started");
    state.set_done();
    assert!(state.is_done() && !state.is_cancelled());
    // Cancelled: claimed as gone.
    let state = ScheduledState::new(10);
    let mut task = ScheduledTask::new(10, Job::Once(Box::new(|| {})), state.clone());
    assert!(state.try_cancel() && !state.try_cancel());
    assert!(!state.postpone(20));
    assert_eq!(task.claim(), Claim::Gone);
    // A deadline beyond the word's range is kept as the task's own.
    let state = ScheduledState::new(u64::MAX - 1);
    let mut task = ScheduledTask::new(u64::MAX - 1, Job::Once(Box::new(|| {})), state.clone());
    assert!(!task.refresh());
    task.reschedule(u64::MAX - 1);
    assert_eq!(task.deadline, u64::MAX - 1);
    assert_eq!(task.claim(), Claim::Run);
}

#[test]
fn pops_in_deadline_then_submission_order() {
    let mut q = ScheduledQueue::default();
    let deadlines = [50, 10, 30, 10, 70, 20, 30];
    let states: Vec<_> = deadlines
        .iter()
        .map(|&d| {
            let t = task(d);
            let s = t.state.clone();
            assert!(q.push(t).is_none());
            s
        })
        .collect();
    let mut order = vec![];
    while let Some(t) = pop_task(&mut q, u64::MAX - 1) {
        order.push(states.iter().position(|s| Arc::ptr_eq(s, &t.state)).unwrap());
    }
    assert_eq!(order, vec![1, 3, 5, 2, 6, 0, 4]);
}

#[test]
fn pop_due_respects_now() {
    let mut q = ScheduledQueue::default();
    assert!(q.push(task(100)).is_none());
    assert!(pop_task(&mut q, 99).is_none());
    assert_eq!(q.peek_deadline(), Some(100));
    assert!(pop_task(&mut q, 100).is_some());
    assert!(q.is_empty());
}

#[test]
fn remove_any_element_keeps_the_rest_in_order() {
    // Deterministic pseudo-random deadlines and removal order.
    let mut x: u64 = 0x2545F4914F6CDD1D;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut q = ScheduledQueue::default();
    let mut states = vec![];
    for _ in 0..2_000 {
        let t = task(rnd() % 500);
        states.push(t.state.clone());
        assert!(q.push(t).is_none());
    }
    for i in (0..states.len()).step_by(3) {
        assert!(q.remove(&states[i]).is_some());
        assert!(q.remove(&states[i]).is_none(), "removing twice finds nothing");
    }
    let mut last = 0;
    let mut n = 0;
    while let Some(t) = pop_task(&mut q, u64::MAX - 1) {
        assert!(t.deadline >= last);
        last = t.deadline;
        n += 1;
    }
    assert_eq!(n, 2_000 - (0..2_000).step_by(3).count());
}

#[test]
fn cancelled_before_insert_is_dropped() {
    let mut q = ScheduledQueue::default();
    let t = task(1);
    assert!(t.state.try_cancel());
    assert!(q.push(t).is_some(), "handed back, not filed");
    assert!(q.is_empty());
}

#[test]
fn stale_key_does_not_remove_a_stranger() {
    let mut q = ScheduledQueue::default();
    let a = task(1);
    let sa = a.state.clone();
    assert!(q.push(a).is_none());
    pop_task(&mut q, 1).unwrap();
    let b = task(2);
    assert!(q.push(b).is_none()); // likely reuses a's slab slot
    assert!(q.remove(&sa).is_none());
    assert_eq!(q.len(), 1);
}
