#!/usr/bin/env bash
# Restart after a crash, packetstore vs Redis 7's AOF replay, in one
# command: builds the release binary, installs redis-server, redis-tools
# (redis-benchmark) and matplotlib if missing, runs bench/restart.py (see
# --help), writes bench/results/restart.{md,csv,png}.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-benchmark >/dev/null || missing+=(redis-tools)

if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi
# Debian starts a redis-server on 6379 when installing it: not ours.
systemctl stop redis-server 2>/dev/null || true
python3 -c "import matplotlib" 2>/dev/null || pip install -q matplotlib || true
cargo build --release -q -p packetstore-cli
python3 bench/restart.py "$@"
