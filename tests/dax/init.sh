#!/bin/busybox sh
# The guest's /init for tests/dax/run.sh (read that first): busybox sh on
# Debian 12's kernel with an emulated NVDIMM. `ps_stage=load` prepares the
# DAX file system, checks the detected domain, loads packetstore's two
# servers and powers off mid-load; `ps_stage=verify` checks that every
# acknowledged write came back. Everything the host learns is a console
# line starting with PSDAX; a failure is "PSDAX FAIL <why>".
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1

stage=$(sed -n 's/.*ps_stage=\([a-z]*\).*/\1/p' /proc/cmdline)
domain=$(sed -n 's/.*ps_domain=\([a-z-]*\).*/\1/p' /proc/cmdline)
# Values of 200 bytes: past the inline limit, so they stay in pool buffers.
pad=$(printf '%0200d' 0)
kv_load=100000   # more than a boot sends before its power-off
kv_acks_before_off=400
wal_acks_before_off=40

say() { echo "PSDAX $*"; }
fail() {
  say "FAIL $*"
  [ -f /tmp/serve.log ] && tail -5 /tmp/serve.log
  [ -f /tmp/wal.log ] && tail -5 /tmp/wal.log
  echo o >/proc/sysrq-trigger
  sleep 60
}
off() { echo o >/proc/sysrq-trigger; sleep 60; }

load_modules() {
  for module in /lib/modules/*.ko; do
    insmod "$module" || fail "insmod $module"
  done
  ip link set lo up
}

# The namespace comes up raw on a fresh NVDIMM; fsdax needs a pfn device
# (struct pages on the device), whose info block then persists: what
# `ndctl create-namespace -f -e namespace0.0 -m fsdax` does, by sysfs.
ensure_fsdax() {
  nd=/sys/bus/nd/devices
  i=0
  while [ ! -e $nd/namespace0.0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ -e $nd/namespace0.0 ] || fail "no namespace0.0 (is the nvdimm there?)"
  say "region persistence_domain=$(cat $nd/region0/persistence_domain 2>/dev/null)"
  for pfn in $nd/pfn0.*; do
    if [ "$(cat "$pfn/namespace" 2>/dev/null)" = namespace0.0 ]; then
      say "fsdax found at boot ($(basename "$pfn"))"
      return
    fi
  done
  [ "$stage" = load ] || fail "the namespace came up raw: the fsdax info block did not persist"
  echo namespace0.0 >/sys/bus/nd/drivers/nd_pmem/unbind || fail "unbind namespace0.0"
  pfn=$(cat $nd/region0/pfn_seed)
  cat /proc/sys/kernel/random/uuid >$nd/$pfn/uuid
  echo pmem >$nd/$pfn/mode
  echo 2097152 >$nd/$pfn/align
  echo namespace0.0 >$nd/$pfn/namespace
  echo "$pfn" >/sys/bus/nd/drivers/nd_pmem/bind || fail "bind $pfn to nd_pmem"
  say "fsdax made ($pfn)"
}

mount_dax() {
  i=0
  while [ ! -b /dev/pmem0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ -b /dev/pmem0 ] || fail "no /dev/pmem0"
  if [ "$stage" = load ]; then
    # Stripes of 2 MiB: ext4 then allocates the pools in 2 MiB-aligned
    # extents, which map with 2 MiB pages (without it, every fault of the
    # 1 GiB pool fell back to 4 KiB pages here).
    mkfs.ext4 -q -F -b 4096 -E stride=512,stripe_width=512 /dev/pmem0 >/tmp/mkfs.log 2>&1 || fail "mkfs.ext4: $(cat /tmp/mkfs.log)"
  fi
  mount -t ext4 -o dax /dev/pmem0 /mnt || fail "mount -o dax"
  grep -q ' /mnt ext4 .*dax' /proc/mounts || fail "/mnt is not mounted with dax: $(grep /mnt /proc/mounts)"
}

# Waits until `probe` succeeds (a server is up), at most 60 s.
wait_for() {
  i=0
  until eval "$1" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 600 ] || fail "$2 did not come up in 60 s: $(tail -3 "$3")"
    sleep 0.1
  done
}

start_servers() {
  cd /mnt
  # The key-value server with its default flags (pool under
  # ./packetstore-data/, Redis protocol on 6379, HTTP on 8080); the WAL
  # server beside it on 8090.
  packetstore serve >/tmp/serve.log 2>&1 &
  packetstore wal --pool /mnt/packetstore-data/wal.pool --pool-size 512MiB --listen 127.0.0.1:8090 >/tmp/wal.log 2>&1 &
  wait_for "redis-cli -p 6379 ping | grep -q PONG" "packetstore serve" /tmp/serve.log
  wait_for "wget -q -O /dev/null http://127.0.0.1:8090/metrics" "packetstore wal" /tmp/wal.log
  say "servers up: $(grep -o 'persistence domain[^,]*' /tmp/serve.log | head -1)"
  # What the servers said at start (fallbacks of this older kernel among it).
  sed -n '1,12s/^/PSDAX serve: /p' /tmp/serve.log | cut -c1-220
  sed -n '1,6s/^/PSDAX wal: /p' /tmp/wal.log | cut -c1-220
}

check_domain() {
  packetstore demo --pool /mnt/demo.pool --records 100 >/tmp/demo.log 2>&1 || fail "demo: $(tail -3 /tmp/demo.log)"
  line=$(packetstore inspect /mnt/demo.pool | sed -n 's/^domain *//p')
  say "domain $line"
}

# Whether this kernel pins an FS-DAX file for AF_XDP (docs/switch.md):
# the switch registers the pool as its UMEM before it binds anything, so
# its first error says. Informative only: reported, never a failure.
probe_af_xdp() {
  ip link set lo up 2>/dev/null || true
  out=$(timeout 20 packetstore switch --pool /mnt/switch.pool --pool-size 16MiB --log-size 1MiB \
    --port lo --port lo --datapath xdp 2>&1 </dev/null | grep -v '^[0-9T:.-]* *INFO' | tail -1)
  say "af_xdp on fsdax: $(echo "$out" | cut -c1-240)"
  rm -f /mnt/switch.pool
}

# One POST; prints its X-Seq (empty when there is no acknowledgement).
post() {
  wget -q -S -O /dev/null --post-data "$1" http://127.0.0.1:8090/wal 2>&1 | sed -n 's/^ *[Xx]-[Ss]eq: *\([0-9]*\).*/\1/p'
}

# Counts the DAX page faults of 2 MiB (PMD) that were served as such, and
# those that fell back to 4 KiB pages, while the servers start and load.
trace_pmd_faults() {
  mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
  t=/sys/kernel/tracing
  [ -d $t/events/fs_dax ] || return 0
  echo 1 >$t/events/fs_dax/dax_pmd_fault_done/enable
}

report_pmd_faults() {
  t=/sys/kernel/tracing
  [ -f $t/trace ] || return 0
  echo 0 >$t/events/fs_dax/dax_pmd_fault_done/enable
  say "2 MiB page faults: $(grep -c 'dax_pmd_fault_done' $t/trace), of which $(grep -c FALLBACK $t/trace) fell back to 4 KiB pages"
}

stage_load() {
  load_modules
  ensure_fsdax
  mount_dax
  check_domain
  probe_af_xdp
  trace_pmd_faults
  start_servers
  # SETs through one redis-cli, in order: reply n acknowledges k<n>. The
  # line goes out only after the reply came back.
  i=1
  while [ $i -le $kv_load ]; do
    echo "SET k$i v$i-$pad"
    i=$((i + 1))
  done | redis-cli -p 6379 | awk '$0 == "OK" { print "PSDAX ack kv " NR " end" > "/dev/console"; print NR > "/tmp/kv.acks"; fflush("/dev/console"); fflush("/tmp/kv.acks"); next } { print "PSDAX FAIL kv reply " NR ": " $0 > "/dev/console"; fflush("/dev/console") }' &
  n=1
  while :; do
    seq=$(post "rec$n-$pad")
    [ -n "$seq" ] || fail "POST $n got no X-Seq: $(tail -3 /tmp/wal.log)"
    say "ack wal $n $seq end"
    acked=$(tail -1 /tmp/kv.acks 2>/dev/null)
    if [ $n -ge $wal_acks_before_off ] && [ "${acked:-0}" -ge $kv_acks_before_off ]; then
      break
    fi
    n=$((n + 1))
  done
  report_pmd_faults
  say "powering off mid-load after $n WAL acks and ${acked} SET acks (load still running)"
  say "load done"
  off
}

stage_verify() {
  load_modules
  ensure_fsdax
  mount_dax
  # The test's own check (PACKETSTORE_DAX_SABOTAGE=1 on the host): lose
  # the pool, and the host must report the kv check failed.
  ! grep -q ps_sabotage=1 /proc/cmdline || rm -f /mnt/packetstore-data/kv.pool
  start_servers
  kv=$(cat /expect/kv)
  i=1
  while [ $i -le "$kv" ]; do
    echo "GET k$i"
    i=$((i + 1))
  done | redis-cli -p 6379 | awk -v pad="$pad" '$0 != "v" NR "-" pad { missing++; if (missing <= 5) print "PSDAX kv wrong " NR ": " substr($0, 1, 40) }
    END { print "PSDAX kv checked " NR " missing " missing + 0 }'
  total=0
  missing=0
  while read -r n seq; do
    body=$(wget -q -O - "http://127.0.0.1:8090/log/$seq" 2>/dev/null)
    total=$((total + 1))
    if [ "$body" != "rec$n-$pad" ]; then
      missing=$((missing + 1))
      say "wal wrong $n at $seq: $(echo "$body" | cut -c1-40)"
    fi
  done </expect/wal
  say "wal checked $total missing $missing"
  say "recovery: $(grep -o 'recover[^"]*' /tmp/serve.log | head -1 | cut -c1-160)"
  say "verify done"
  off
}

case $stage in
  load) stage_load ;;
  verify) stage_verify ;;
  *) fail "unknown ps_stage '$stage'" ;;
esac
