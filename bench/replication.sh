#!/bin/bash
# Replicated durable SET: a 3-node packetstore group against one packetstore
# node and against Valkey 8 with one primary and two replicas, every SET
# followed by WAITAOF 1 1 0 (durable on the primary and on one replica: the
# guarantee of a 3-node majority). All are measured with the same load
# generator, packetstore-cli/examples/durable_set.rs (redis-benchmark cannot
# send two commands per request), which checks every reply: SET must be +OK
# and WAITAOF must count >= 1 local and >= 1 replica, or the request failed.
#
# Systems, alternated within each round (A B C [D], A B C [D], ...), each
# started fresh for each measurement:
#   group         packetstore, 3 nodes (--node-id/--peers), SETs to the leader
#   single        packetstore, 1 node
#   valkey        valkey-server 8: primary + 2 replicas (--replicaof), all with
#                 appendonly yes, appendfsync always, save ''; each batch of -P
#                 SETs (one SET at -P 1), once answered, followed by WAITAOF 1 1 0
#                 (it covers them all), as a client awaiting each reply does
#   valkey-pairs  the same servers, each SET followed by its own WAITAOF 1 1 0
#                 in the same write (SET WAITAOF SET WAITAOF ...)
# Every server process is pinned to CPU 1 (the three of a group share it), the
# load generator to CPU 0; pools and AOF directories on /dev/shm. Load: 50
# connections, 300-byte values, keys over 100,000; -P 1 and -P 16 (a batch of
# 16 requests per write per connection). Server CPU per request sums utime +
# stime (and reaped children's) of every server process of the run.
#
# Valkey 8.0's WAITAOF numreplicas waits for a replica's REPLCONF ACK that
# carries its fsynced offset. A replica answers the primary's GETACK at once,
# before the fsync of the writes that came with it, and otherwise acks once a
# second (replicationCron). When the WAITAOF arrives in the same read as its
# SET, the GETACK reaches the replica with the SET, is answered before the
# fsync, and the WAITAOF waits for the next GETACK (a later WAITAOF's) or the
# 1 s ack: one connection sending "SET ...; WAITAOF 1 1 0" in one write
# waits 1.00 s per request (measured), while one that waits for +OK first
# gets 0.2 ms. valkey-pairs shows that case; valkey is the fair comparison.
#
# Writes bench/results/replication.csv (one row per measurement) and, through
# bench/replication.py, prints the tables (every row and the medians) and draws
# bench/results/replication.png.
#   bash bench/replication.sh [--rounds N] [--requests N] [--pipelines "1 16"] [--out DIR]
# Needs target/release/packetstore and target/release/examples/durable_set
# (built if missing: cargo build --release -p packetstore-cli --bin packetstore
# --example durable_set), valkey-server 8 (Debian bookworm-backports) and
# redis-cli.
set -euo pipefail
ROUNDS=3; REQUESTS=100000; PIPELINES="1 16"; HERE=$(cd "$(dirname "$0")" && pwd); OUT=$HERE/results
while [ $# -gt 0 ]; do case "$1" in
  --rounds) ROUNDS=$2; shift 2;; --requests) REQUESTS=$2; shift 2;;
  --pipelines) PIPELINES=$2; shift 2;; --out) OUT=$2; shift 2;;
  -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  *) echo "unknown $1"; exit 2;; esac; done
ROOT=$HERE/..
BIN=${PACKETSTORE_BIN:-$ROOT/target/release/packetstore}
LOAD=${DURABLE_SET_BIN:-$ROOT/target/release/examples/durable_set}
VALKEY=${VALKEY_BIN:-valkey-server}
if [ ! -x "$BIN" ] || [ ! -x "$LOAD" ]; then
  (cd "$ROOT" && cargo build --release -p packetstore-cli --bin packetstore --example durable_set)
fi
"$VALKEY" --version | grep -q 'v=8\.' \
  || { echo "replication.sh: needs valkey-server 8 ($("$VALKEY" --version))"; exit 1; }
CSV=$OUT/replication.csv
mkdir -p "$OUT"
DIR=$(mktemp -d /dev/shm/psbench.XXXX)
PIDS=()
stop_all() { # kills the servers of this run (by pid) and waits for them to exit
  [ ${#PIDS[@]} -gt 0 ] || return 0
  kill "${PIDS[@]}" 2>/dev/null || true
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
trap 'stop_all; rm -rf "$DIR"' EXIT
trap 'exit 130' INT TERM
CLK=$(getconf CLK_TCK)
ticks() { # utime + stime + cutime + cstime of these processes
  local t=0 f; for pid in "$@"; do
    read -r -a f < <(sed 's/.*) //' /proc/"$pid"/stat); t=$((t + f[11] + f[12] + f[13] + f[14])); done; echo $t; }
steal() { read -r -a f < /proc/stat; echo "${f[8]} $(( f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7] + f[8] ))"; }
port_free() { ! ss -ltnH "sport = :$1" | grep -q .; }
wait_until() { # seconds command...: polls the command until it succeeds
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.1; done; }
# packetstore: N nodes; sets PIDS and PORT (the leader's RESP port).
start_packetstore() {
  local n=$1 peers="" i
  for i in $(seq 1 "$n"); do peers="$peers${peers:+,}$i=127.0.0.1:$((7200 + i))"; done
  for i in $(seq 1 "$n"); do
    wait_until 20 port_free $((6400 + i)); wait_until 20 port_free $((7200 + i))
    local group=(); [ "$n" -gt 1 ] && group=(--node-id "$i" --peers "$peers")
    rm -f "$DIR/n$i.pool"
    taskset -c 1 "$BIN" serve --pool "$DIR/n$i.pool" --pool-size 512MiB --http 127.0.0.1:$((8200 + i)) \
      --resp 127.0.0.1:$((6400 + i)) "${group[@]}" > "$DIR/n$i.log" 2>&1 &
    PIDS+=($!)
  done
  leader() {
    for i in $(seq 1 "$n"); do
      if [ "$(redis-cli -p $((6400 + i)) role 2>/dev/null | head -1)" = master ]; then PORT=$((6400 + i)); return 0; fi
    done; return 1; }
  wait_until 30 leader || { echo "no leader" >&2; tail "$DIR"/n*.log >&2; exit 1; }
  # A write through the leader, acknowledged once on a majority.
  [ "$(redis-cli -p "$PORT" set warmup 1)" = OK ] || { echo "warm-up SET failed" >&2; exit 1; }
}
# Valkey: primary + 2 replicas; sets PIDS and PORT (the primary's).
start_valkey() {
  local i args
  for i in 1 2 3; do
    wait_until 20 port_free $((6500 + i))
    rm -rf "$DIR/v$i"; mkdir -p "$DIR/v$i"
    args=(--port $((6500 + i)) --bind 127.0.0.1 --dir "$DIR/v$i" --appendonly yes --appendfsync always --save ''
      --daemonize no --logfile "$DIR/v$i.log")
    [ "$i" -gt 1 ] && args+=(--replicaof 127.0.0.1 6501)
    taskset -c 1 "$VALKEY" "${args[@]}" &
    PIDS+=($!)
  done
  PORT=6501
  linked() { for i in 2 3; do
    redis-cli -p $((6500 + i)) info replication 2>/dev/null | grep -q 'master_link_status:up' || return 1
    redis-cli -p $((6500 + i)) info replication | grep -q 'master_sync_in_progress:0' || return 1; done; }
  online() { [ "$(redis-cli -p $PORT info replication | grep -c 'state=online')" = 2 ]; }
  wait_until 60 linked && wait_until 30 online \
    || { echo "valkey replicas did not sync" >&2; tail "$DIR"/v*.log >&2; exit 1; }
  # A write durable on the primary and on both replicas before measuring.
  redis-cli -p $PORT set warmup 1 > /dev/null
  [ "$(redis-cli -p $PORT waitaof 1 2 10000 | tr '\n' ' ')" = "1 2 " ] \
    || { echo "warm-up WAITAOF 1 2 failed" >&2; exit 1; }
}
run() { # round system pipeline: prints one CSV row
  local round=$1 system=$2 p=$3 extra=() nodes
  case $system in
    group) nodes=3; start_packetstore 3;;
    single) nodes=1; start_packetstore 1;;
    valkey) nodes=3; start_valkey; extra=(--waitaof 1 1 --wait-per after-reply);;
    valkey-pairs) nodes=3; start_valkey; extra=(--waitaof 1 1 --wait-per request);;
  esac
  local t0 t1 s0 s1 out
  s0=$(steal); t0=$(ticks "${PIDS[@]}")
  out=$(taskset -c 0 "$LOAD" -p "$PORT" -c 50 -n "$REQUESTS" -P "$p" -d 300 -r 100000 "${extra[@]}" 2>"$DIR/load.err") \
    || { echo "load generator failed: $(cat "$DIR/load.err")" >&2; exit 1; }
  t1=$(ticks "${PIDS[@]}"); s1=$(steal)
  [ -s "$DIR/load.err" ] && sed "s/^/$system -P $p: /" "$DIR/load.err" >&2
  stop_all
  local rps p50 p99 failures max cpu st
  IFS=, read -r rps p50 p99 failures _ _ max <<< "$out"
  cpu=$(echo "($t1 - $t0) * 1000000 / $CLK / $REQUESTS" | bc -l)
  read -r -a s0 <<< "$s0"; read -r -a s1 <<< "$s1"
  st=$(echo "100 * (${s1[0]} - ${s0[0]}) / (${s1[1]} - ${s0[1]} + 1)" | bc -l)
  printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.2f,%.1f\n' "$round" "$system" "$nodes" "$p" "$rps" "$p50" "$p99" "$max" \
    "$failures" "$REQUESTS" "$cpu" "$st"
}
echo "round,system,nodes,pipeline,requests_per_s,p50_ms,p99_ms,max_ms,failures,requests,server_cpu_us_per_req,\
steal_pct" > "$CSV"
for r in $(seq 1 "$ROUNDS"); do
  for p in $PIPELINES; do
    systems="group single valkey valkey-pairs"
    for s in $systems; do
      run "$r" "$s" "$p" > "$DIR/row"   # not in a subshell: its servers stay this shell's to stop
      cat "$DIR/row" >> "$CSV"
      cat "$DIR/row" >&2
    done
  done
done
python3 "$HERE/replication.py" "$CSV" --png "$OUT/replication.png"
