#!/usr/bin/env bash
# The unsafe code under miri (docs/ARCHITECTURE.md): the reactor's unit tests
# of the task layer, the block cache, the inbox, the readiness code (with the
# registration set and the loop core's queue cells), the run queue, the idle spin, the
# io_uring buffer pool and recvmsg memory, and the timing wheel, under Stacked Borrows;
# the unsafe-heavy part of them again under Tree Borrows; and netloop-sync's unit
# tests.
#
# Skipped (--skip, by name), all stress or model tests that miri runs for minutes each
# (an interpreter, it runs them thousands of times slower than native code) and whose code paths the tests
# kept here already take; they still run natively in `cargo test --workspace`, and the
# cross-thread ones are modelled under loom:
#   inbox      fifo_across_threads (10,000 spun pushes across threads),
#              each_producer_keeps_its_order_through_ring_and_overflow (15,000 pushes
#              from three threads through an 8-slot ring);
#   wheel      inserts_between_pops_come_out_on_time_and_in_order (20,000 steps
#              against a model), pops_in_deadline_then_sequence_order_never_early
#              (5,000 entries), remove_from_any_place_keeps_the_rest (3,000 entries);
#              the wheel has no unsafe code of its own;
#   sync       waiters::tests::matches_a_model_under_random_operations (20,000
#              operations against a model).
# Tree Borrows also leaves out block_cache's a_full_class_frees_what_does_not_fit (its
# local twin, which takes the same fill logic, stays) and the task layer's
# yields_keep_the_reference_count_and_run_to_completion (the slowest task test).
#
# Needs the nightly toolchain with miri; installs what is missing. Its own target dir
# (target/miri): miri builds every dependency for its interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
export CARGO_TARGET_DIR=target/miri
start=$(date +%s)
step() { echo; echo "== miri: $1 ($(( $(date +%s) - start ))s)"; }

if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal --component miri --component rust-src
fi
if ! rustup component list --toolchain nightly --installed | grep -q '^miri'; then
  rustup component add miri --toolchain nightly
fi
# miri's sysroot is built from rust-src; without it `cargo miri setup` stops to ask.
if ! rustup component list --toolchain nightly --installed | grep -q '^rust-src'; then
  rustup component add rust-src --toolchain nightly
fi
cargo +nightly miri setup

# Isolation off, as in docs/ARCHITECTURE.md: the clock and sys tests read the real
# monotonic clock.
isolation="-Zmiri-disable-isolation"

reactor_filters=(
  task::
  block_cache::
  inbox::
  io::readiness::
  io::registration_set::
  core::tests
  run_queue::
  idle_spin::
  sys::tests
  sys::ring::tests
  wheel::
)
reactor_skips=(
  --skip fifo_across_threads
  --skip each_producer_keeps_its_order_through_ring_and_overflow
  --skip inserts_between_pops_come_out_on_time_and_in_order
  --skip pops_in_deadline_then_sequence_order_never_early
  --skip remove_from_any_place_keeps_the_rest
)

step "netloop-reactor, Stacked Borrows"
MIRIFLAGS="$isolation" cargo +nightly miri test -p netloop-reactor --lib -- \
  "${reactor_filters[@]}" "${reactor_skips[@]}"

step "netloop-reactor, Tree Borrows (task layer, block cache, readiness, registration set, core, the io_uring buffer pool, a recvmsg's memory)"
MIRIFLAGS="$isolation -Zmiri-tree-borrows" cargo +nightly miri test -p netloop-reactor --lib -- \
  task:: block_cache:: io::readiness:: io::registration_set:: core::tests sys::ring::tests \
  --skip a_full_class_frees_what_does_not_fit \
  --skip yields_keep_the_reference_count_and_run_to_completion

step "netloop-sync, Stacked Borrows"
MIRIFLAGS="$isolation" cargo +nightly miri test -p netloop-sync --lib -- \
  --skip matches_a_model_under_random_operations

step "done"
