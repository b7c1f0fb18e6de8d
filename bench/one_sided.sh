#!/bin/bash
# One-sided reads (issue 20): GET latency and throughput on one reader core,
# one-sided (packetstore::reader on the server's pool) against GET over the
# Redis protocol and over HTTP on loopback, for values of 64 B, 1 KiB,
# 16 KiB and 64 KiB, in three mixes: read-only; YCSB-B (95% reads, 5%
# updates of the same zipfian keys, sent over the Redis port by the same
# thread); and writer (reads only, while another process on the server's
# CPU SETs the same zipfian keys as fast as the server answers it). With
# the share of reads that fell back to the server. "updates" counts the
# writer's SETs too; server CPU per operation divides by reads + updates.
#
# One server (packetstore serve --one-sided-reads, pool on /dev/shm:
# emulated persistent memory) pinned to CPU 1; the load generator,
# packetstore-cli/examples/read_bench.rs (one thread, one connection, one
# request at a time), pinned to CPU 0. 10,000 keys per size, loaded once.
# Modes alternate within each round (one-sided resp http, one-sided resp
# http, ...). Server CPU per operation: the server's utime + stime over the
# run divided by the run's reads and updates.
#
# Writes bench/results/one-sided.csv (one row per measurement) and, through
# bench/one_sided.py, prints the tables (medians, ratios) and draws
# bench/results/one-sided.png.
#   bash bench/one_sided.sh [--rounds N] [--seconds S] [--sizes "64 1024 16384 65536"] [--out DIR]
set -euo pipefail
ROUNDS=3; SECONDS_PER_RUN=3; SIZES="64 1024 16384 65536"; HERE=$(cd "$(dirname "$0")" && pwd); OUT=$HERE/results
while [ $# -gt 0 ]; do case "$1" in
  --rounds) ROUNDS=$2; shift 2;; --seconds) SECONDS_PER_RUN=$2; shift 2;;
  --sizes) SIZES=$2; shift 2;; --out) OUT=$2; shift 2;;
  -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  *) echo "unknown $1"; exit 2;; esac; done
ROOT=$HERE/..
BIN=$ROOT/target/release/packetstore
LOAD=$ROOT/target/release/examples/read_bench
(cd "$ROOT" && cargo build --release -q -p packetstore-cli --bin packetstore --example read_bench)
python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install -q matplotlib || true
CSV=$OUT/one-sided.csv
mkdir -p "$OUT"
DIR=$(mktemp -d /dev/shm/psbench.XXXX)
RESP=127.0.0.1:16390; HTTP=127.0.0.1:18090
taskset -c 1 "$BIN" serve --pool "$DIR/kv.pool" --pool-size 2GiB --resp $RESP --http $HTTP --one-sided-reads \
  > "$DIR/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
trap 'exit 130' INT TERM
for _ in $(seq 100); do grep -q '^listening' "$DIR/serve.log" && break; sleep 0.1; done
grep -q '^listening' "$DIR/serve.log" || { cat "$DIR/serve.log"; exit 1; }
CLK=$(getconf CLK_TCK)
ticks() { local f; read -r -a f < <(sed 's/.*) //' /proc/"$PID"/stat); echo $((f[11] + f[12])); }
for size in $SIZES; do "$LOAD" --load --size "$size" --keys 10000 --resp $RESP; done
sleep 2 # a checkpoint: the tree holds every key
echo "round,size,mix,mode,reads_per_s,p50_us,p99_us,reads,updates,seconds,fallbacks,retries,from_log,\
fallback_pct,server_cpu_us_per_op" > "$CSV"
for r in $(seq 1 "$ROUNDS"); do
  for size in $SIZES; do
    for mix in read-only ycsb-b writer; do
      share=0; [ $mix = ycsb-b ] && share=0.05
      for mode in one-sided resp http; do
        writer=""
        if [ $mix = writer ]; then
          taskset -c 1 "$LOAD" --mode writer --size "$size" --keys 10000 --seconds "$SECONDS_PER_RUN" --resp $RESP \
            > "$DIR/writer.out" &
          writer=$!
        fi
        t0=$(ticks)
        out=$(taskset -c 0 "$LOAD" --mode $mode --size "$size" --keys 10000 --seconds "$SECONDS_PER_RUN" \
          --update-share $share --pool "$DIR/kv.pool" --resp $RESP --http $HTTP)
        t1=$(ticks)
        [ -n "$writer" ] && wait "$writer"
        IFS=, read -r rps p50 p99 reads updates secs fallbacks retries fromlog <<< "$out"
        writes=0; [ -n "$writer" ] && writes=$(cut -d, -f5 "$DIR/writer.out")
        updates=$((updates + writes))
        cpu=$(echo "($t1 - $t0) * 1000000 / $CLK / ($reads + $updates)" | bc -l)
        pct=$(echo "100 * $fallbacks / $reads" | bc -l)
        row=$(printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.3f,%.3f' "$r" "$size" "$mix" "$mode" "$rps" "$p50" \
          "$p99" "$reads" "$updates" "$secs" "$fallbacks" "$retries" "$fromlog" "$pct" "$cpu")
        echo "$row" >> "$CSV"; echo "$row" >&2
      done
    done
  done
done
python3 "$HERE/one_sided.py" "$CSV" --png "$OUT/one-sided.png"
