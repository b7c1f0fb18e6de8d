#!/usr/bin/env bash
# The B+ tree benchmark in one command: builds the release binary, runs
# `packetstore bench tree` pinned to CPU 1 (the domain matrix, then the
# node-size sweep on emulated PM), records the CPU steal of each part, and
# plots bench/results/tree*.png with bench/tree.py.
#   bench/tree.sh            # the full run (1,000,000 keys, 3 rounds: ~15 min)
#   KEYS=100000 bench/tree.sh  # a quick one
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${KEYS:-1000000}
rounds=${ROUNDS:-3}
out=bench/results
mkdir -p "$out"
cargo build --release -q
python3 -c 'import matplotlib' 2>/dev/null || pip install -q matplotlib
steal() { awk '/^cpu / { s = $9; t = 0; for (i = 2; i <= NF; i++) t += $i; print s, t }' /proc/stat; }
run() {
  local name=$1; shift
  read -r s0 t0 < <(steal)
  taskset -c 1 ./target/release/packetstore bench tree --keys "$keys" --rounds "$rounds" \
    --out "$out/$name.md" --csv "$out/$name.csv" "$@"
  read -r s1 t1 < <(steal)
  local pct
  pct=$(awk -v a="$s0" -v b="$s1" -v c="$t0" -v d="$t1" 'BEGIN { printf "%.0f", 100 * (b - a) / (d - c) }')
  printf '\nCPU steal during this run (all CPUs, /proc/stat): %s%%\n' "$pct" >> "$out/$name.md"
  echo "steal: $pct%"
}
run tree
run tree-node-size --domains pm --node-sizes 512,1024,2048,4096
python3 bench/tree.py "$out"
