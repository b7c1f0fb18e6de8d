#!/usr/bin/env bash
# The key-value benchmark in one command: builds the release binary,
# installs redis-server, redis-tools (redis-benchmark), wrk and matplotlib
# if missing, runs bench/kv.py (see --help), writes bench/results/kv.*.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/peers.sh
bench_peers wrk
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
