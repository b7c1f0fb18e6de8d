#!/usr/bin/env bash
# Issue 17's command benchmark in one command: builds the release binary,
# installs redis-server, redis-tools (redis-benchmark), matplotlib and kevy
# 3.17.3 if missing, runs bench/commands.py (see --help) on a huge-page
# tmpfs and on the project's disk, writes bench/results/commands.*.
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
python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install -q matplotlib || apt-get install -y -qq python3-matplotlib || true
[ -x "${KEVY_BIN:-$HOME/.cargo/bin/kevy}" ] || cargo install kevy@3.17.3 --locked
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
