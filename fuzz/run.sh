#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600) each, one after another,
# and writes what libFuzzer reported (executions, coverage, crashes) into
# fuzz/results.md. A crash input lands in fuzz/artifacts/<target>/: copy it
# into fuzz/regressions/<target>/ so packetstore/tests/fuzz.rs replays it.
#
#   bash fuzz/run.sh [SECONDS] [TARGET...]
# Needs nightly Rust and cargo-fuzz:
#   rustup toolchain install nightly && cargo +nightly install cargo-fuzz
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(http_head resp_parser log_records tree_node pool_open)
mkdir -p logs
crashed=0
cargo +nightly fuzz build -O >/dev/null 2>&1 || cargo +nightly fuzz build -O
for target in "${targets[@]}"; do
    dict=()
    case $target in
        http_head) dict=(-dict=http.dict) ;;
        resp_parser) dict=(-dict=resp.dict) ;;
    esac
    mkdir -p "corpus/$target"
    status=ok
    cargo +nightly fuzz run -O "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 "${dict[@]}" >"logs/$target.log" 2>&1 || status=crash
    if [ "$status" = crash ]; then
        crashed=1
        grep -A 12 -E 'panicked|ERROR: libFuzzer|SUMMARY' "logs/$target.log" | head -40 >&2
    fi
    last=$(grep -E '^#[0-9]+' "logs/$target.log" | tail -1)
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "logs/$target.log" | grep -oE '[0-9]+$' || true)
    [ -n "$execs" ] || execs=$(echo "$last" | grep -oE '^#[0-9]+' | tr -d '#')
    cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+' || echo "?")
    ft=$(echo "$last" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+' || echo "?")
    corp=$(echo "$last" | grep -oE 'corp: [0-9]+' | grep -oE '[0-9]+' || echo "?")
    rate=$(echo "$last" | grep -oE 'exec/s: [0-9]+' | grep -oE '[0-9]+' || echo "?")
    printf '| %s | %s s | %s | %s | %s | %s | %s | %s |\n' "$target" "$seconds" "$execs" "$rate" "$cov" "$ft" "$corp" "$status" \
        | tee -a logs/summary.md
done
exit "$crashed"
