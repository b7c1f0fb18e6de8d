#!/bin/bash
# Replicated durable SET: a 3-node group (all nodes pinned to CPU 1) against
# one node (CPU 1), redis-benchmark on CPU 0, pools on tmpfs, rounds
# alternated (group, single, group, single, ...). Prints a markdown table:
# requests/s, p50 and p99 (ms), and server CPU per request (us, every
# server process of the run summed).
#   bash bench/replication.sh [--rounds N] [--requests N]
set -euo pipefail
ROUNDS=3; REQUESTS=100000
while [ $# -gt 0 ]; do case "$1" in --rounds) ROUNDS=$2; shift 2;; --requests) REQUESTS=$2; shift 2;; *) echo "unknown $1"; exit 2;; esac; done
BIN=${PACKETSTORE_BIN:-$(dirname "$0")/../target/release/packetstore}
DIR=$(mktemp -d /dev/shm/psbench.XXXX)
trap 'pkill -f "pool $DIR" || true; rm -rf "$DIR"' EXIT
ticks() { local t=0; for pid in "$@"; do read -r -a f < /proc/$pid/stat; t=$((t + f[13] + f[14])); done; echo $t; }
start() { # start N nodes; prints pids; leader's port in $DIR/port
  local n=$1 pids=() peers=""
  for i in $(seq 1 "$n"); do peers="$peers${peers:+,}$i=127.0.0.1:$((7200 + i))"; done
  for i in $(seq 1 "$n"); do
    local group=(); [ "$n" -gt 1 ] && group=(--node-id "$i" --peers "$peers")
    taskset -c 1 "$BIN" serve --pool "$DIR/n$i.pool" --pool-size 512MiB --http 127.0.0.1:$((8200 + i)) \
      --resp 127.0.0.1:$((6400 + i)) "${group[@]}" > "$DIR/n$i.log" 2>&1 &
    pids+=($!)
  done
  sleep 3
  for i in $(seq 1 "$n"); do
    if [ "$(redis-cli -p $((6400 + i)) role | head -1)" = master ]; then echo $((6400 + i)) > "$DIR/port"; fi
  done
  echo "${pids[@]}"
}
run() { # mode pipeline
  local n=$1 p=$2 pids port out t0 t1
  pids=$(start "$n"); port=$(cat "$DIR/port")
  t0=$(ticks $pids)
  out=$(taskset -c 0 redis-benchmark -p "$port" -t set -d 300 -c 50 -r 100000 -n "$REQUESTS" -P "$p" --csv 2>/dev/null | tail -1)
  t1=$(ticks $pids)
  kill $pids; wait $pids 2>/dev/null || true; rm -f "$DIR"/*.pool
  local rps p50 p99
  rps=$(echo "$out" | cut -d, -f2 | tr -d '"'); p50=$(echo "$out" | cut -d, -f5 | tr -d '"'); p99=$(echo "$out" | cut -d, -f7 | tr -d '"')
  local cpu_us; cpu_us=$(echo "($t1 - $t0) * 10000 / $REQUESTS" | bc -l)
  printf '%s %s %s %s %s %.2f\n' "$n" "$p" "$rps" "$p50" "$p99" "$cpu_us"
}
echo "| nodes | -P | requests/s | p50 ms | p99 ms | server CPU us/request |"
echo "|---:|---:|---:|---:|---:|---:|"
for r in $(seq 1 "$ROUNDS"); do
  for p in 1 16; do
    for n in 3 1; do run "$n" "$p" | awk '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6}'; done
  done
done
