#!/usr/bin/env bash
# Restart after a crash, packetstore vs Redis 7's AOF replay, in one
# command: builds the release binary, installs redis-server, redis-tools
# (redis-benchmark) and matplotlib if missing, runs bench/restart.py (see
# --help), writes bench/results/restart.{md,csv,png}.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/peers.sh
bench_peers
cargo build --release -q -p packetstore-cli
python3 bench/restart.py "$@"
