#!/usr/bin/env bash
# Issue 36's table in one command: builds the release binary, installs
# redis-server, redis-tools (redis-benchmark), matplotlib and kevy 3.17.3 if
# missing, and runs bench/cpu.py (see --help): server CPU per request of
# packetstore, packetstore --domain none, Redis without persistence, Redis
# with appendfsync always and kevy with one shard, on tmpfs and on ext4,
# unpipelined and at -P 16. Writes bench/results/cpu.{md,csv,png}.
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
exec python3 bench/cpu.py "$@"
