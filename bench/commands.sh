#!/usr/bin/env bash
# Issue 17's command benchmark in one command: builds the release binary,
# installs redis-server, redis-tools (redis-benchmark), matplotlib and kevy
# 3.17.3 if missing, runs bench/commands.py (see --help) on a huge-page
# tmpfs and on the project's disk, writes bench/results/commands.*.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/peers.sh
bench_peers kevy
cargo build --release -q
huge=$(mktemp -d /tmp/packetstore-bench-huge.XXXXXX)
if mount -t tmpfs -o size=12g,huge=within_size tmpfs "$huge"; then
  trap 'umount "$huge"; rmdir "$huge"' EXIT
  python3 bench/commands.py --shm-dir "$huge" "$@"
else
  rmdir "$huge"
  echo "commands.sh: could not mount a huge-page tmpfs (not root?); using /dev/shm (4 KiB pages)" >&2
  python3 bench/commands.py "$@"
fi
