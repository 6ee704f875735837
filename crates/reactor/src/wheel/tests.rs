//! Unit tests of the wheel: pops in deadline then sequence order and never early, moved
//! deadlines, removal from any place, carries between levels.

use super::*;

#[derive(Debug)]
struct Item {
    deadline: u64,
    seq: u64,
    later: Option<u64>,
}

impl WheelItem for Item {
    fn deadline(&self) -> u64 {
        self.deadline
    }
    fn seq(&self) -> u64 {
        self.seq
    }
    fn refresh(&mut self) -> bool {
        match self.later.take() {
            Some(d) if d > self.deadline => {
                self.deadline = d;
                true
            }
            _ => false,
        }
    }
}

fn item(deadline: u64, seq: u64) -> Item {
    Item {
        deadline,
        seq,
        later: None,
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Pops everything due at each of `steps`, checking order and that nothing is early.
fn drain_over(w: &mut TimerWheel<Item>, steps: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut out = vec![];
    for now in steps {
        while let Some(it) = w.pop_due(now) {
            assert!(it.deadline <= now, "{} popped at {now}: early", it.deadline);
            out.push((it.deadline, it.seq));
        }
        w.check_invariants();
    }
    out
}

#[test]
fn level_for_picks_the_highest_differing_digit() {
    assert_eq!(level_for(0, 0), 0);
    assert_eq!(level_for(0, 63), 0);
    assert_eq!(level_for(0, 64), 1);
    assert_eq!(level_for(0, 4095), 1);
    assert_eq!(level_for(0, 4096), 2);
    assert_eq!(level_for(100, 127), 0);
    assert_eq!(level_for(63, 64), 1);
    assert_eq!(level_for(0, RANGE - 1), LEVELS - 1);
}

#[test]
fn pops_in_deadline_then_sequence_order_never_early() {
    let mut w = TimerWheel::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut want = vec![];
    for seq in 1..=5_000u64 {
        // From sub-tick to about 20 minutes, with many equal deadlines.
        let deadline = match seq % 4 {
            0 => rng.next() % (5 * TICK),
            1 => rng.next() % (70_000 * TICK),
            2 => (rng.next() % 100) * TICK,
            _ => rng.next() % (1_200_000 * TICK),
        } + 1;
        w.insert(item(deadline, seq));
        want.push((deadline, seq));
    }
    w.check_invariants();
    want.sort();
    // Uneven steps: some well inside a tick, some jumping many slots at once.
    let mut steps = vec![];
    let mut now = 0;
    while now < 1_300_000 * TICK {
        now += match rng.next() % 3 {
            0 => rng.next() % TICK,
            1 => rng.next() % (300 * TICK),
            _ => rng.next() % (40_000 * TICK),
        };
        steps.push(now);
    }
    assert_eq!(drain_over(&mut w, steps), want);
    assert!(w.is_empty());
}

#[test]
fn reschedule_moves_entries_earlier_and_later_keeping_keys_and_order() {
    let mut w = TimerWheel::default();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut keys = vec![];
    for seq in 1..=2_000u64 {
        let deadline = rng.next() % (100_000 * TICK) + 1;
        keys.push((w.insert(item(deadline, seq)), deadline, seq));
    }
    // Pop part of the way, so that some entries sit in the due heap, some in low
    // slots and some high up; then move every other one, half earlier (some into
    // the past) and half later.
    let popped = drain_over(&mut w, [TICK / 2, 3 * TICK, 500 * TICK]);
    let mut want = vec![];
    for (i, (key, deadline, seq)) in keys.into_iter().enumerate() {
        if popped.contains(&(deadline, seq)) {
            continue;
        }
        let moved = match i % 4 {
            0 => deadline / 3,
            1 => deadline + rng.next() % (200_000 * TICK),
            _ => deadline,
        };
        if moved != deadline {
            assert!(w.reschedule(key, |it| it.deadline = moved));
            assert_eq!(w.get(key).map(|it| it.seq), Some(seq), "the key still names the entry");
        }
        want.push((moved.max(500 * TICK), moved, seq));
    }
    w.check_invariants();
    // An entry moved into the past leaves at the next pop; the rest in order.
    want.sort();
    let want: Vec<_> = want.into_iter().map(|(_, d, s)| (d, s)).collect();
    let mut steps = vec![500 * TICK];
    let mut now = 500 * TICK;
    while now < 400_000 * TICK {
        now += rng.next() % (3_000 * TICK);
        steps.push(now);
    }
    let rest = drain_over(&mut w, steps);
    // Past-due entries come out together at the first step, in (deadline, seq) order.
    assert_eq!(rest, want);
    assert!(w.is_empty());
    assert!(!w.reschedule(0, |_| unreachable!("no entry")));
}

#[test]
fn peek_deadline_is_a_lower_bound_and_exact_once_due() {
    let mut w = TimerWheel::default();
    w.insert(item(5 * TICK + 7, 1));
    let first = w.peek_deadline().unwrap();
    assert!(first <= 5 * TICK + 7);
    assert!(w.pop_due(first.saturating_sub(1)).is_none());
    // Once its slot's time has come the exact deadline shows.
    assert!(w.pop_due(5 * TICK).is_none());
    assert_eq!(w.peek_deadline(), Some(5 * TICK + 7));
    assert_eq!(w.pop_due(5 * TICK + 7).unwrap().seq, 1);
    assert_eq!(w.peek_deadline(), None);
}

#[test]
fn remove_from_any_place_keeps_the_rest() {
    let mut w = TimerWheel::default();
    let mut rng = Rng(12345);
    let mut keys = vec![];
    for seq in 1..=3_000u64 {
        let deadline = rng.next() % (10_000 * TICK) + 1;
        keys.push((w.insert(item(deadline, seq)), deadline, seq));
    }
    // Move part of them into `due`, then remove every third entry wherever it is.
    assert!(w.pop_due(0).is_none());
    let mut popped = drain_over(&mut w, [40 * TICK]);
    let mut kept = vec![];
    for (i, &(key, deadline, seq)) in keys.iter().enumerate() {
        if popped.contains(&(deadline, seq)) {
            continue;
        }
        if i % 3 == 0 {
            let it = w.remove(key).expect("a live key");
            assert_eq!((it.deadline, it.seq), (deadline, seq));
            assert!(w.remove(key).is_none() || w.get(key).is_some());
        } else {
            kept.push((deadline, seq));
        }
    }
    w.check_invariants();
    popped.clear();
    kept.sort();
    assert_eq!(drain_over(&mut w, (1..=200).map(|i| i * 60 * TICK)), kept);
}

#[test]
fn removing_the_first_due_entry_uncovers_the_next() {
    let mut w = TimerWheel::default();
    let a = w.insert(item(TICK + 10, 1));
    w.insert(item(TICK + 20, 2));
    assert!(w.pop_due(TICK).is_none());
    assert_eq!(w.peek_deadline(), Some(TICK + 10));
    w.remove(a).unwrap();
    assert_eq!(w.peek_deadline(), Some(TICK + 20));
    // The freed key is reused; the stale heap slot must not be taken for it.
    let c = w.insert(item(TICK + 30, 3));
    assert_eq!(c, a);
    assert_eq!(
        drain_over(&mut w, [TICK + 25, TICK + 30]),
        vec![(TICK + 20, 2), (TICK + 30, 3)]
    );
}

#[test]
fn a_moved_deadline_is_taken_up_without_popping() {
    let mut w = TimerWheel::default();
    w.insert(Item {
        deadline: 10 * TICK,
        seq: 1,
        later: Some(5_000 * TICK),
    });
    w.insert(item(20 * TICK, 2));
    assert_eq!(drain_over(&mut w, [100 * TICK]), vec![(20 * TICK, 2)]);
    assert_eq!(w.len(), 1);
    assert!(w.peek_deadline().unwrap() <= 5_000 * TICK);
    assert_eq!(
        drain_over(&mut w, [4_999 * TICK, 5_000 * TICK]),
        vec![(5_000 * TICK, 1)]
    );
}

#[test]
fn past_deadlines_and_far_ones() {
    let mut w = TimerWheel::default();
    assert!(w.pop_due(1_000 * TICK).is_none());
    w.insert(item(3, 1)); // long past
    w.insert(item(u64::MAX - 1, 2)); // beyond the wheel's span
    w.insert(item(RANGE * TICK + 5, 3)); // just beyond it
    w.check_invariants();
    assert_eq!(drain_over(&mut w, [1_000 * TICK]), vec![(3, 1)]);
    // Jump in large steps: the far entries walk down the levels and never pop early.
    let steps = (1..=40).map(|i| i * (RANGE / 16) * TICK);
    assert_eq!(drain_over(&mut w, steps), vec![(RANGE * TICK + 5, 3)]);
    assert_eq!(drain_over(&mut w, [u64::MAX - 2]), vec![]);
    assert_eq!(drain_over(&mut w, [u64::MAX - 1]), vec![(u64::MAX - 1, 2)]);
}

#[test]
fn a_level_one_slot_reached_by_a_level_zero_carry_expires_first() {
    let mut w = TimerWheel::default();
    w.insert(item(10_000 * TICK, 1)); // far: keeps the wheel from being empty
    assert!(w.pop_due(127 * TICK).is_none()); // elapsed: tick 127, a block's last
    w.insert(item(130 * TICK, 2)); // filed at level 1, for the next block
    w.insert(item(127 * TICK, 3)); // level 0; taking it carries elapsed to 128
    assert_eq!(drain_over(&mut w, [127 * TICK]), vec![(127 * TICK, 3)]);
    w.insert(item(150 * TICK, 4)); // filed at level 0, in the new block
    let next = w.peek_deadline().expect("entries wait");
    assert!(next <= 130 * TICK, "the loop would sleep until {next}, past 130");
    assert_eq!(drain_over(&mut w, [140 * TICK]), vec![(130 * TICK, 2)]);
    assert_eq!(drain_over(&mut w, [150 * TICK]), vec![(150 * TICK, 4)]);
}

#[test]
fn inserts_between_pops_come_out_on_time_and_in_order() {
    // Against a model: at each step, entries are added for the near and far future
    // (some in the current tick), then everything due is popped. Each must come out
    // at the first step at or after its deadline, in (deadline, seq) order, and the
    // wheel's next deadline must never be later than the earliest entry's.
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut w = TimerWheel::default();
    let mut model = std::collections::BTreeSet::new();
    let mut seq = 0;
    let mut now = 0;
    for _ in 0..20_000 {
        for _ in 0..rng.next() % 4 {
            seq += 1;
            let ahead = match rng.next() % 10 {
                0 => rng.next() % (RANGE / 64),
                1 => 0,
                _ => rng.next() % 300,
            } * TICK;
            let deadline = now + ahead + rng.next() % TICK;
            w.insert(item(deadline, seq));
            model.insert((deadline, seq));
        }
        if let (Some(peek), Some(&(first, _))) = (w.peek_deadline(), model.first()) {
            assert!(
                peek <= first.max(1),
                "next deadline {peek} after the earliest entry's {first}"
            );
        }
        now += (rng.next() % 5) * TICK / 2;
        let due: Vec<_> = model.iter().copied().take_while(|&(d, _)| d <= now).collect();
        for entry in &due {
            model.remove(entry);
        }
        assert_eq!(drain_over(&mut w, [now]), due, "popped at {now}");
    }
}

#[test]
fn drain_empties_everything() {
    let mut w = TimerWheel::default();
    for seq in 1..=100 {
        w.insert(item(seq * 997 * TICK, seq));
    }
    assert!(w.pop_due(0).is_none());
    assert_eq!(w.drain().len(), 100);
    assert!(w.is_empty());
    assert_eq!(w.peek_deadline(), None);
    w.check_invariants();
}
