#!/usr/bin/env bash
# Runs Redis 7.0.15's own test suite (the units vendored in tests/redis-suite,
# or the copy at REDIS_TESTS) against the release binary: builds it (into
# CARGO_TARGET_DIR when set), serves a fresh pool on tmpfs on
# port ${PORT:-7100} (HTTP on PORT+1) with --enable-debug-command, runs the
# given units (default: the 17 default units), prints each beside what
# Redis 7.0.15 passes, and stops the server. Needs tclsh (tcl8.6).
# SERVE_ARGS adds arguments to `serve` (e.g. "--shards 2 --cluster-ports 0").
#
#   usage: bash tests/redis-suite.sh [UNIT...]      e.g. unit/multi unit/pubsub
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${REDIS_TESTS:-$(pwd)/tests/redis-suite}
[ -x "$suite/run.sh" ] || { echo "redis-suite.sh: no suite at $suite (set REDIS_TESTS)" >&2; exit 2; }
command -v tclsh >/dev/null 2>&1 || { echo "redis-suite.sh: needs tclsh (apt-get install tcl8.6)" >&2; exit 2; }
port=${PORT:-7100}
cargo build --release -q -p packetstore-cli
binary=${CARGO_TARGET_DIR:-target}/release/packetstore
pool=$(mktemp -u /dev/shm/packetstore-redis-suite-XXXXXX.pool)
"$binary" serve --pool "$pool" --pool-size 1GiB --resp "127.0.0.1:$port" \
  --http "127.0.0.1:$((port + 1))" --enable-debug-command ${SERVE_ARGS:-} >"${pool%.pool}.log" 2>&1 &
server=$!
# (A sharded server's other shards' pools are named base.N.pool.)
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "${pool%.pool}".*pool "${pool%.pool}.log"' EXIT
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
bash "$suite/run.sh" "$port" "$@"
