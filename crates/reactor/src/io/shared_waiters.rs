//! A direction's list of tasks that all wake at its next event: tokio's `readable()`
//! and `writable()`, and several tasks accepting on one listener.
//!
//! A future dropped before its event (a `readable()` that lost a `select!` or ran out
//! its `timeout`) leaves its waker in the list: nothing tells the list. So a list is
//! bounded: the waker that would make it longer than [`MAX`] empties it instead, and
//! the old entries are woken. A future still waiting polls again and rejoins (a
//! spurious wake, which every future accepts); a dropped one's waker, and the task it
//! keeps alive, are released.

use std::task::Waker;

/// Entries a list holds before a newcomer empties it.
pub(crate) const MAX: usize = 64;

/// Adds `waker` to `list` once, however often its task polls. Returns the wakers the
/// newcomer displaced (none until the list is full), for the caller to wake once its
/// lock is released: a wake may run any code.
#[must_use = "displaced waiters must be woken, or a live one waits forever"]
pub(crate) fn join(list: &mut Vec<Waker>, waker: &Waker) -> Vec<Waker> {
    if list.iter().any(|w| w.will_wake(waker)) {
        return Vec::new();
    }
    let displaced = if list.len() >= MAX {
        std::mem::take(list)
    } else {
        Vec::new()
    };
    list.push(waker.clone());
    displaced
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn a_full_list_hands_its_waiters_back_and_keeps_the_newcomer() {
        let mut list = Vec::new();
        let counts: Vec<_> = (0..MAX + 1).map(|_| Arc::new(Count(AtomicUsize::new(0)))).collect();
        let wakers: Vec<Waker> = counts.iter().map(|c| Waker::from(c.clone())).collect();
        for w in &wakers[..MAX] {
            assert!(join(&mut list, w).is_empty());
            assert!(join(&mut list, w).is_empty(), "a task joins once");
        }
        assert_eq!(list.len(), MAX);
        let displaced = join(&mut list, &wakers[MAX]);
        assert_eq!(displaced.len(), MAX, "every old waiter handed back");
        assert_eq!(list.len(), 1);
        assert!(list[0].will_wake(&wakers[MAX]));
        displaced.into_iter().for_each(Waker::wake);
        assert!(counts[..MAX].iter().all(|c| c.0.load(SeqCst) == 1), "each woken once");
        drop(wakers);
        assert!(
            counts[..MAX].iter().all(|c| Arc::strong_count(c) == 1),
            "their wakers released"
        );
    }
}
