#!/usr/bin/env bash
# The key-value benchmark in one command: builds the release binary,
# installs redis-server, redis-tools (redis-benchmark), wrk and matplotlib
# if missing, runs bench/kv.py (see --help), writes bench/results/kv.*.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-benchmark >/dev/null || missing+=(redis-tools)
command -v wrk >/dev/null || missing+=(wrk)
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi
# Debian starts a redis-server on 6379 when installing it: not ours.
systemctl stop redis-server 2>/dev/null || true
python3 -c "import matplotlib" 2>/dev/null || pip install -q matplotlib || true
cargo build --release -q
# /dev/shm maps files with 4 KiB pages. A tmpfs mounted with
# huge=within_size gives the emulated persistent memory 2 MiB pages, as a
# DAX mapping of real persistent memory has (docs/operations.md). Both
# packetstore's pool and Redis's AOF live on it; --shm-dir overrides.
huge=$(mktemp -d /tmp/packetstore-bench-huge.XXXXXX)
if mount -t tmpfs -o size=12g,huge=within_size tmpfs "$huge"; then
  trap 'umount "$huge"; rmdir "$huge"' EXIT
  python3 bench/kv.py --shm-dir "$huge" "$@"
else
  rmdir "$huge"
  echo "kv.sh: could not mount a huge-page tmpfs (not root?); using /dev/shm (4 KiB pages)" >&2
  python3 bench/kv.py "$@"
fi
