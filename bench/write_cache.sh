#!/bin/bash
# The write cache (issue 21, packetstore-preload): unmodified programs'
# synchronous writes, side by side in one run, alternated rounds:
#   ext4          plain: the files on the project's ext4 disk
#   cache-tmpfs   the preload library, pool on /dev/shm (EMULATED persistent
#                 memory: fast, not power-safe), files on ext4
#   cache-ext4    the preload library, pool on the same ext4 disk (page
#                 domain: one fdatasync of the pool per write)
#   tmpfs         the files on /dev/shm, no sync reaches a disk (the ceiling)
# Workloads: sqlite3 inserting one row per transaction (PRAGMA
# synchronous=FULL) in WAL and DELETE journal modes (transactions per
# second); fio 4 KiB random writes, psync engine, fsync=1 (IOPS, p99 of the
# write+fsync, from fio's completion latency). The load runs on CPU 0.
# Writes bench/results/write-cache.csv and prints the table (medians) with
# the issue's ratios.
#   bash bench/write_cache.sh [--rounds N] [--transactions N] [--fio-seconds S]
set -euo pipefail
ROUNDS=3; TXNS=3000; FIO_SECONDS=5; HERE=$(cd "$(dirname "$0")" && pwd); OUT=$HERE/results
while [ $# -gt 0 ]; do case "$1" in
  --rounds) ROUNDS=$2; shift 2;; --transactions) TXNS=$2; shift 2;; --fio-seconds) FIO_SECONDS=$2; shift 2;;
  -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  *) echo "unknown $1"; exit 2;; esac; done
ROOT=$HERE/..
(cd "$ROOT" && cargo build --release -q -p packetstore-preload)
LIB=$ROOT/target/release/libpacketstore_preload.so
command -v sqlite3 >/dev/null && command -v fio >/dev/null || { echo "needs sqlite3 and fio (apt-get install sqlite3 fio)"; exit 1; }
DISK=$(mktemp -d "$ROOT/target/wcbench.XXXX"); SHM=$(mktemp -d /dev/shm/wcbench.XXXX)
trap 'rm -rf "$DISK" "$SHM"' EXIT
SQL=$DISK/txns.sql
for i in $(seq 1 "$TXNS"); do echo "INSERT INTO t(v) VALUES('value number $i');"; done > "$SQL"
# prepare SYSTEM: a fresh directory (WORK) and, for the cache, its env (ENV)
prepare() {
  case $1 in
    ext4|cache-tmpfs|cache-ext4) WORK=$DISK/work;; tmpfs) WORK=$SHM/work;; esac
  rm -rf "$WORK" "$DISK"/pool "$SHM"/pool; mkdir -p "$WORK"
  ENV=()
  case $1 in
    cache-tmpfs) ENV=(LD_PRELOAD=$LIB PACKETSTORE_CACHE_POOL=$SHM/pool PACKETSTORE_CACHE_PATHS=$WORK/ PACKETSTORE_CACHE_QUIET=1);;
    cache-ext4) ENV=(LD_PRELOAD=$LIB PACKETSTORE_CACHE_POOL=$DISK/pool PACKETSTORE_CACHE_PATHS=$WORK/ PACKETSTORE_CACHE_QUIET=1);;
  esac
}
sqlite_run() { # system mode: prints transactions per second
  local start end
  prepare "$1"
  # The schema, and the pool made, before the clock starts.
  env "${ENV[@]}" sqlite3 "$WORK/db" "PRAGMA journal_mode=$2; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);" > /dev/null
  start=$(date +%s.%N)
  ( echo "PRAGMA journal_mode=$2;"; echo "PRAGMA synchronous=FULL;"; cat "$SQL" ) | \
    env "${ENV[@]}" taskset -c 0 sqlite3 "$WORK/db" > /dev/null
  end=$(date +%s.%N)
  [ "$(sqlite3 "$WORK/db" 'PRAGMA integrity_check; SELECT count(*) FROM t;' | tr '\n' ' ')" = "ok $TXNS " ] \
    || { echo "sqlite3 $1 $2: wrong result" >&2; exit 1; }
  echo "$TXNS / ($end - $start)" | bc -l
}
fio_run() { # system: prints iops,p99_us (jobs as threads: a forked child would not cache)
  prepare "$1"
  env "${ENV[@]}" taskset -c 0 fio --name=w --thread --directory="$WORK" --ioengine=psync --rw=randwrite --bs=4k \
    --size=64m --fsync=1 --runtime="$FIO_SECONDS" --time_based --output-format=json > "$DISK/fio.json"
  python3 -c "
import json,sys
j=json.load(open('$DISK/fio.json'))['jobs'][0]['write']
print('%.0f,%.1f' % (j['iops'], j['clat_ns']['percentile']['99.000000']/1000))"
}
CSV=$OUT/write-cache.csv
echo "round,system,workload,value,p99_us" > "$CSV"
for r in $(seq 1 "$ROUNDS"); do
  for system in ext4 cache-tmpfs cache-ext4 tmpfs; do
    for mode in WAL DELETE; do
      echo "$r,$system,sqlite-$mode,$(sqlite_run $system $mode)," | tee -a "$CSV" >&2
    done
    IFS=, read -r iops p99 <<< "$(fio_run $system)"
    echo "$r,$system,fio-4k-randwrite-fsync,$iops,$p99" | tee -a "$CSV" >&2
  done
done
python3 - "$CSV" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
m = {}
for r in rows:
    m.setdefault((r['workload'], r['system']), []).append(float(r['value']))
systems = ['ext4', 'cache-tmpfs', 'cache-ext4', 'tmpfs']
print('| workload | ' + ' | '.join(systems) + ' | cache-tmpfs / ext4 | cache-tmpfs / tmpfs | cache-ext4 / ext4 |')
print('|---|' + '---:|' * (len(systems) + 3))
for w in sorted({k[0] for k in m}):
    v = {s: statistics.median(m[(w, s)]) for s in systems if (w, s) in m}
    print(f"| {w} | " + ' | '.join(f"{v[s]:,.0f}" for s in systems) +
          f" | {v['cache-tmpfs']/v['ext4']:.2f}x | {v['cache-tmpfs']/v['tmpfs']:.2f}x | {v['cache-ext4']/v['ext4']:.2f}x |")
p99 = {}
for r in rows:
    if r['p99_us']:
        p99.setdefault(r['system'], []).append(float(r['p99_us']))
print()
print('fio p99 (us, median): ' + ', '.join(f"{s} {statistics.median(p99[s]):.1f}" for s in systems if s in p99))
PY
