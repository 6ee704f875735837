#!/usr/bin/env bash
# The cost of tokio's tracing instrumentation with tokio-console's layer installed, on
# netloop and on tokio (docs/observability.md, "What it costs"): tests/console's
# `tracing_cost` binary, built in release with `--cfg tokio_unstable` and tokio's
# `tracing` feature, once against netloop (that workspace's [patch]) and once against
# tokio (a copy of the workspace without the [patch], under the target directory), each
# run without a subscriber and with console-subscriber's layer. Prints nanoseconds per
# operation and the ratios.
#
#   benches/tracing-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
export RUSTFLAGS="--cfg tokio_unstable"
# netloop: the workspace as it is.
CARGO_TARGET_DIR=$TARGET/console-release cargo build -q --release --locked \
    --manifest-path tests/console/Cargo.toml --bin tracing_cost
# tokio: the same sources, the [patch] section and the lock file left out.
copy=$TARGET/tracing-cost-tokio
rm -rf "$copy" && mkdir -p "$copy"
cp -r tests/console/src "$copy/"
sed '/^\[patch.crates-io\]/,$d' tests/console/Cargo.toml >"$copy/Cargo.toml"
CARGO_TARGET_DIR=$TARGET/tracing-cost-tokio-build cargo build -q --release \
    --manifest-path "$copy/Cargo.toml" --bin tracing_cost
net=$TARGET/console-release/release/tracing_cost
tok=$TARGET/tracing-cost-tokio-build/release/tracing_cost
grep -q 'name = "tokio"' "$copy/Cargo.lock" && grep -A1 '^name = "tokio"$' "$copy/Cargo.lock" | grep -q '1\.54'
declare -A r
for who in net tok; do
    for sub in off on; do
        flag=; [ $sub = on ] && flag=--console
        while read -r shape ns; do r[$who-$sub-$shape]=$ns; done < <("${!who}" $flag)
    done
done
printf '| shape | netloop ns/op (no subscriber / console) | tokio ns/op (no subscriber / console) | netloop/tokio with console | console on/off, netloop / tokio |\n|---|---|---|---|---|\n'
for shape in spawn sleep mutex; do
    awk -v s=$shape -v a="${r[net-off-$shape]}" -v b="${r[net-on-$shape]}" -v c="${r[tok-off-$shape]}" -v d="${r[tok-on-$shape]}" \
        'BEGIN { printf "| %s | %d / %d | %d / %d | %.2fx | %.2fx / %.2fx |\n", s, a, b, c, d, b / d, b / a, d / c }'
done
