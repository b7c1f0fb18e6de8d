#!/usr/bin/env bash
# CI's guard on Redis compatibility: runs a fast subset of Redis 7.0.15's
# own suite (tests/redis-suite.sh, against the release binary) and fails if
# any unit passes fewer tests than its floor below, the count last recorded
# in bench/results/redis-suite.md less a margin for the suite's randomised
# tests. Raise a floor when a unit improves; never lower one to hide a
# regression. Installs tclsh (Debian's tcl8.6) when missing.
#
#   usage: bash tests/redis-suite-floor.sh
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A FLOOR=(
  [unit/type/hash]=68 [unit/expire]=56 [unit/keyspace]=40 [unit/type/string]=72 [unit/type/incr]=22
  [unit/bitops]=44 [unit/multi]=30 [unit/type/zset]=300 [unit/scan]=16 [unit/type/list]=216 [unit/sort]=50
  [unit/type/stream]=61 [unit/type/set]=93 [unit/pubsub]=27 [unit/protocol]=17 [unit/info-command]=3
  [unit/scripting]=170 [unit/hyperloglog]=19 [unit/geo]=55 [unit/slowlog]=9
  [unit/tracking]=48 [unit/latency-monitor]=11 [unit/functions]=84 [unit/introspection]=24
  [unit/introspection-2]=39
)
if ! command -v tclsh >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq tcl8.6 >/dev/null
fi
units=("${!FLOOR[@]}")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The suite's own closing line ("N passed, M failed", failures expected:
# units Redis passes that packetstore does not yet) is reworded, so that
# CI reads this script's verdict, not a failure count, as its result.
PORT=${PORT:-7190} bash tests/redis-suite.sh "${units[@]}" \
  | sed -E 's/^([0-9]+) passed, ([0-9]+) failed$/redis suite subset total: passed \1, failed \2/' | tee "$out"
# One known race gets a second run: unit/type/list's "BRPOPLPUSH with
# multiple blocked clients" sends two clients' blocking commands back to
# back and expects the first sent to be served first; on two shards the
# two connections may live on different shards, and which shard takes its
# command first depends on the scheduler (the suite's client shares the
# machine's two CPUs with them): about one run in ten (measured: 13 to 18
# of 100 rounds of that test alone), the second is served, the test
# waits forever, and the suite stops the unit there. A unit stopped there
# is run once more, on a fresh server, and that count is compared (both
# printed); a second timeout counts as nothing passed. A timeout in any
# other test fails as it is.
race="BRPOPLPUSH with multiple blocked clients"
logs=${REDIS_TESTS_LOGS:-/tmp/redis-tests-logs}
again_out="$out.again"
trap 'rm -f "$out" "$again_out"' EXIT
for unit in "${units[@]}"; do
  log="$logs/$(echo "$unit" | tr / _).log"
  if grep -A1 '^\[TIMEOUT\]' "$log" 2>/dev/null | grep -q "(IN PROGRESS) $race"; then
    echo "redis-suite-floor: $unit stopped on the known race ($race); running it once more"
    PORT=$(( ${PORT:-7190} + 2 )) bash tests/redis-suite.sh "$unit" \
      | sed -E 's/^([0-9]+) passed, ([0-9]+) failed$/redis suite, again: passed \1, failed \2/' | tee -a "$again_out"
    again=$(awk -v u="$unit" '$1 == u { print $2 }' "$again_out" | tail -1)
    if grep -q '^\[TIMEOUT\]' "$log"; then
      echo "redis-suite-floor: $unit stopped on a timeout again" >&2
      again=0
    fi
    sed -i -E "s|^($unit +)[0-9]+|\1${again:-0}|" "$out"
  fi
done
status=0
for unit in "${units[@]}"; do
  passed=$(awk -v u="$unit" '$1 == u { print $2 }' "$out")
  if [ -z "$passed" ] || [ "$passed" -lt "${FLOOR[$unit]}" ]; then
    echo "redis-suite-floor: $unit passed ${passed:-nothing}, below its floor of ${FLOOR[$unit]}" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "redis-suite-floor: every unit at or above its floor"
exit "$status"
