#!/bin/bash
# The write cache (issue 21): unmodified sqlite3 and fio, plain ext4 vs the
# preload library (pool on tmpfs, EMULATED persistent memory; pool on the
# same ext4 disk) vs tmpfs (the ceiling), alternated rounds. The work is in
# bench/write_cache.py (its --help lists the systems and workloads).
#   bash bench/write_cache.sh [--rounds N] [--transactions N] [--fio-seconds S] [--timeline-seconds S]
set -euo pipefail
exec python3 "$(cd "$(dirname "$0")" && pwd)/write_cache.py" "$@"
