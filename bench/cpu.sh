#!/usr/bin/env bash
# Issue 36's table in one command: builds the release binary, installs
# redis-server, redis-tools (redis-benchmark), matplotlib and kevy 3.17.3 if
# missing, and runs bench/cpu.py (see --help): server CPU per request of
# packetstore, packetstore --domain none, Redis without persistence, Redis
# with appendfsync always and kevy with one shard, on tmpfs and on ext4,
# unpipelined and at -P 16. Writes bench/results/cpu.{md,csv,png}.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/peers.sh
bench_peers kevy
cargo build --release -q
exec python3 bench/cpu.py "$@"
