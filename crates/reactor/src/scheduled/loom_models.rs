//! The races between another thread's `postpone` or `cancel` and the loop claiming the
//! due task.

use super::*;
use loom::thread;

fn due_wake() -> (Arc<ScheduledState>, ScheduledTask) {
    let state = ScheduledState::new(10);
    let task = ScheduledTask::new(10, Job::Wake(Waker::noop().clone()), state.clone());
    (state, task)
}

/// A postpone that reports success is never overtaken by a start, and one that
/// reports failure came after the start: the loop files the task again exactly when
/// the postpone succeeded.
#[test]
fn loom_models_postpone_races_the_loop_claiming_the_task() {
    loom::model(|| {
        let (state, mut task) = due_wake();
        let other = thread::spawn(move || state.postpone(20));
        let claim = task.claim();
        let postponed = other.join().unwrap();
        match claim {
            Claim::Run => assert!(!postponed, "postponed, yet started at the old deadline"),
            Claim::Later => {
                assert!(postponed, "filed again, though the postpone was told it was too late");
                assert_eq!(task.deadline, 20);
            }
            Claim::Gone => unreachable!("nothing cancelled the task"),
        }
    });
}

/// Exactly one of a cancel and the loop's claim wins.
#[test]
fn loom_models_cancel_races_the_loop_claiming_the_task() {
    loom::model(|| {
        let (state, mut task) = due_wake();
        let canceller = state.clone();
        let other = thread::spawn(move || canceller.try_cancel());
        let claim = task.claim();
        let cancelled = other.join().unwrap();
        assert_eq!(
            claim == Claim::Run,
            !cancelled,
            "claim {claim:?}, cancelled {cancelled}"
        );
        assert_eq!(state.is_cancelled(), cancelled);
    });
}
