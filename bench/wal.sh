#!/usr/bin/env bash
# The WAL benchmark in one command: builds the release binary, installs
# wrk if missing, runs bench/wal.py (see --help), writes bench/results/wal.*.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
cargo build --release -q
exec python3 bench/wal.py "$@"
