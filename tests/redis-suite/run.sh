#!/usr/bin/env bash
# Runs units of Redis 7.0.15's own test suite (this folder: the part of tests/ from the Redis repository at tag
# 7.0.15 that these units use, BSD-licensed, see COPYING and README.md) against a server already listening on
# 127.0.0.1:PORT, in the suite's
# external-server mode, and prints per unit the tests passed and failed beside what Redis 7.0.15 itself
# passes in the same mode (redis-server 7.0.15, appendfsync always, enable-debug-command yes).
#
#   usage: run.sh PORT [UNIT...]        (default: the 17 core units; "all": those and the 17 more below)
#   needs: tclsh (Debian: tcl8.6)       logs: $REDIS_TESTS_LOGS (default /tmp/redis-tests-logs)
#
# One local change to the suite: tests/support/server.tcl tolerates a server without FUNCTION FLUSH,
# which the harness calls before every test file. Tests tagged needs:debug, needs:repl, needs:save and
# needs:config-maxmemory are skipped: they need DEBUG internals, replicas, RDB or maxmemory eviction.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=${1:?usage: run.sh PORT [UNIT...]}; shift
declare -A REFERENCE=(
  [unit/type/string]=75 [unit/type/incr]=23 [unit/type/hash]=72 [unit/type/list]=219 [unit/type/set]=95
  [unit/type/zset]=308 [unit/type/stream]=63 [unit/keyspace]=42 [unit/expire]=58 [unit/multi]=32
  [unit/pubsub]=29 [unit/scan]=17 [unit/info-command]=3 [unit/protocol]=5 [unit/bitops]=45
  [unit/scripting]=182 [unit/sort]=52
  [unit/type/stream-cgroups]=48 [unit/type/list-2]=2 [unit/type/list-3]=11 [unit/functions]=86 [unit/geo]=59
  [unit/hyperloglog]=20 [unit/bitfield]=16 [unit/dump]=9 [unit/introspection]=27 [unit/introspection-2]=43
  [unit/slowlog]=9 [unit/latency-monitor]=13 [unit/tracking]=51 [unit/other]=15 [unit/lazyfree]=4
  [unit/querybuf]=2 [unit/quit]=3
)
MORE=(unit/type/stream-cgroups unit/type/list-2 unit/type/list-3 unit/functions unit/geo unit/hyperloglog
  unit/bitfield unit/dump unit/introspection unit/introspection-2 unit/slowlog unit/latency-monitor unit/tracking
  unit/other unit/lazyfree unit/querybuf unit/quit)
units=("$@")
CORE=(unit/type/string unit/type/incr unit/type/hash unit/type/list unit/type/set
  unit/type/zset unit/type/stream unit/keyspace unit/expire unit/multi unit/pubsub unit/scan unit/info-command
  unit/protocol unit/bitops unit/scripting unit/sort)
[ ${#units[@]} -gt 0 ] || units=("${CORE[@]}")
[ "${units[0]}" = all ] && units=("${CORE[@]}" "${MORE[@]}")
command -v tclsh >/dev/null || { echo "run.sh: tclsh not found (apt-get install tcl8.6)" >&2; exit 2; }
logs=${REDIS_TESTS_LOGS:-/tmp/redis-tests-logs}; mkdir -p "$logs"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp -r "$here/runtest" "$here/tests" "$work/"
total_ok=0; total_err=0; total_ref=0
printf "%-20s %6s %6s %10s\n" unit passed failed "redis 7.0.15"
for u in "${units[@]}"; do
  log="$logs/$(echo "$u" | tr / _).log"
  (cd "$work" && timeout 600 ./runtest --host 127.0.0.1 --port "$port" --singledb --ignore-encoding \
     --ignore-digest --durable --clients 1 --no-latency --timeout 60 \
     --tags "-needs:debug -needs:repl -needs:save -needs:config-maxmemory" --single "$u") >"$log" 2>&1
  sed -i 's/\x1b\[[0-9;]*m//g' "$log"
  ok=$(grep -c '^\[ok\]' "$log"); err=$(( $(grep -c '^\[err\]' "$log") + $(grep -c '^\[exception\]' "$log") ))
  ref=${REFERENCE[$u]:-0}
  printf "%-20s %6d %6d %10d\n" "$u" "$ok" "$err" "$ref"
  total_ok=$((total_ok + ok)); total_err=$((total_err + err)); total_ref=$((total_ref + ref))
done
printf "%-20s %6d %6d %10d\n" total "$total_ok" "$total_err" "$total_ref"
echo "$total_ok passed, $total_err failed"
