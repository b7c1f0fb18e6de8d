#!/usr/bin/env bash
# Real persistent memory, exercised (issue 18): boots a Debian 12 guest
# (Linux 6.1) under QEMU with an emulated NVDIMM, twice per persistence
# domain, on the same backing file:
#
#   boot 1 (load): turns the NVDIMM's namespace into fsdax through sysfs (as
#     `ndctl create-namespace -m fsdax` would), makes ext4 on it, mounts it
#     with -o dax, checks that `packetstore inspect` reports the domain the
#     platform advertises, detected by MAP_SYNC (cache-line with
#     nvdimm-persistence=mem-ctrl, byte with =cpu), then runs `packetstore
#     serve` with its default flags and the WAL server, loads both from
#     inside the guest (redis-cli SETs, HTTP POSTs with busybox wget), and
#     powers the guest off in the middle of the load (sysrq o: no clean stop).
#   boot 2 (verify): the same backing file; the namespace must come up in
#     fsdax by itself; both servers recover, and every write whose
#     acknowledgement reached the host's console log must read back exactly.
#
# The guest's console is the only channel out: acknowledgements are printed
# after the reply arrives, so one lost at power-off is only not checked.
# Under TCG, clwb and sfence do nothing real: this proves the DAX and
# MAP_SYNC code path, the domain detection and the kernel fallbacks on 6.1,
# not power-fail physics (the crash simulator judges ordering).
#
# Usage: bash tests/dax/run.sh [mem-ctrl] [cpu]   (default: both domains)
# PACKETSTORE_DAX_SABOTAGE=1 deletes the key-value pool before the verify
# boot: the run must then fail with "kv check failed" (the test can fail).
# Caches the kernel under target/dax-guest/ (PACKETSTORE_DAX_CACHE). Needs
# root for apt (qemu-system-x86, busybox-static, cpio, e2fsprogs,
# redis-tools, binutils) when they are missing. About 2 minutes here.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
cache=${PACKETSTORE_DAX_CACHE:-$root/target/dax-guest}
# The guest kernel: Debian 12's, pinned; when the mirror has moved past it,
# the version linux-image-amd64 depends on now (printed).
kernel_package=${PACKETSTORE_DAX_KERNEL:-linux-image-6.1.0-56-amd64}
boot_timeout_s=${PACKETSTORE_DAX_BOOT_TIMEOUT:-600}
domains=("$@")
[ ${#domains[@]} -gt 0 ] || domains=(mem-ctrl cpu)

log() { echo "dax: $*" >&2; }
die() {
  log "FAIL: $*"
  exit 1
}

install_tools() {
  local missing=()
  command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
  [ -x /bin/busybox ] && [[ $'\n'$(/bin/busybox --list 2>/dev/null)$'\n' == *$'\nwget\n'* ]] || missing+=(busybox-static)
  command -v cpio >/dev/null || missing+=(cpio)
  command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
  command -v redis-cli >/dev/null || missing+=(redis-tools)
  command -v strings >/dev/null || missing+=(binutils)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # busybox-static replaces a dynamic busybox: the guest needs the static one.
  [[ $(ldd /bin/busybox 2>&1 || true) == *"not a dynamic"* ]] || die "/bin/busybox is not static (install busybox-static)"
}

fetch_kernel() {
  local package=$kernel_package
  if [ ! -f "$cache/$package/vmlinuz" ]; then
    mkdir -p "$cache/download"
    if ! (cd "$cache/download" && apt-get download "$package" >/dev/null 2>&1); then
      apt-get update -qq
      if ! (cd "$cache/download" && apt-get download "$package" >/dev/null 2>&1); then
        package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
        log "$kernel_package is no longer on the mirror: using $package"
        [ -f "$cache/$package/vmlinuz" ] || (cd "$cache/download" && apt-get download "$package" >/dev/null 2>&1) ||
          die "cannot download $package"
      fi
    fi
    if [ ! -f "$cache/$package/vmlinuz" ]; then
      rm -rf "$cache/$package.tmp"
      dpkg -x "$cache"/download/"$package"_*.deb "$cache/$package.tmp"
      mkdir -p "$cache/$package"
      cp "$cache/$package.tmp"/boot/vmlinuz-* "$cache/$package/vmlinuz"
      cp "$cache/$package.tmp"/boot/config-* "$cache/$package/config"
      rm -rf "$cache/$package/modules" && mv "$cache/$package.tmp/lib/modules"/* "$cache/$package/modules"
      rm -rf "$cache/$package.tmp" "$cache"/download/"$package"_*.deb
    fi
  fi
  kernel_dir=$cache/$package
  log "guest kernel: $package"
}

# The module's file, and those it depends on first (from its .modinfo).
module_closure() {
  local name=$1 file deps dep
  file=$(find "$kernel_dir/modules" -name "$name.ko" | head -1)
  [ -n "$file" ] || die "module $name not in the kernel package"
  deps=$(strings -a "$file" | sed -n 's/^depends=//p' | head -1)
  for dep in ${deps//,/ }; do
    module_closure "$dep"
  done
  grep -qx "$file" "$work/modules.order" 2>/dev/null || echo "$file" >>"$work/modules.order"
}

# Copies an executable and the shared libraries it loads into the guest tree.
copy_program() {
  local program=$1 target=$2 lib
  install -D -m 0755 "$program" "$tree$target"
  for lib in $(ldd "$program" 2>/dev/null | grep -o '/[^ ]*'); do
    [ -e "$tree$lib" ] || install -D -m 0755 "$lib" "$tree$lib"
  done
}

build_initramfs() {
  tree=$work/tree
  rm -rf "$tree" "$work/modules.order"
  mkdir -p "$tree"/{bin,sbin,dev,proc,sys,mnt,tmp,lib/modules,etc}
  install -m 0755 /bin/busybox "$tree/bin/busybox"
  install -m 0755 tests/dax/init.sh "$tree/init"
  for module in nfit nd_pmem ext4 crc32c_generic; do
    module_closure "$module"
  done
  local n=0 file
  while read -r file; do
    n=$((n + 1))
    install -m 0644 "$file" "$tree/lib/modules/$(printf %02d $n)-$(basename "$file")"
  done <"$work/modules.order"
  copy_program "$root/target/release/packetstore" /bin/packetstore
  copy_program "$(command -v redis-cli)" /bin/redis-cli
  copy_program "$(command -v mkfs.ext4)" /sbin/mkfs.ext4
  [ -f /etc/mke2fs.conf ] && cp /etc/mke2fs.conf "$tree/etc/"
  (cd "$tree" && find . | cpio -o -H newc --quiet) >"$work/base.cpio"
}

# What boot 2 checks: the acknowledgements boot 1 printed, in a second cpio
# archive appended to the first (the kernel unpacks both).
build_expectations() {
  local console=$1 out=$2 exp=$work/expect
  rm -rf "$exp" && mkdir -p "$exp/expect"
  # Only whole lines (a line cut by the power-off lacks its "end").
  grep -a '^PSDAX ack kv [0-9]* end' "$console" | awk '{print $4}' | sort -n | tail -1 >"$exp/expect/kv" || true
  grep -a '^PSDAX ack wal [0-9]* [0-9]* end' "$console" | awk '{print $4, $5}' >"$exp/expect/wal" || true
  [ -s "$exp/expect/kv" ] || echo 0 >"$exp/expect/kv"
  (cd "$exp" && find . | cpio -o -H newc --quiet) >"$work/expect.cpio"
  cat "$work/base.cpio" "$work/expect.cpio" >"$out"
}

boot() {
  local stage=$1 domain=$2 initrd=$3 console=$4
  local started=$SECONDS
  # -cpu max: clwb and clflushopt in the guest. TCG only: this machine's
  # /dev/kvm boots only kernels built for it.
  timeout "$boot_timeout_s" qemu-system-x86_64 \
    -machine "pc,nvdimm=on,nvdimm-persistence=$domain,accel=tcg" -cpu max -smp 2 \
    -m 1G,slots=2,maxmem=4G \
    -object "memory-backend-file,id=mem1,share=on,mem-path=$work/nvdimm.img,size=2G" \
    -device nvdimm,id=nvdimm1,memdev=mem1 \
    -kernel "$kernel_dir/vmlinuz" -initrd "$initrd" \
    -append "console=ttyS0 panic=-1 quiet ps_stage=$stage ps_domain=$domain ps_sabotage=${PACKETSTORE_DAX_SABOTAGE:-0}" \
    -display none -serial "file:$console" -monitor none -no-reboot -net none || {
    local status=$?
    [ $status -ne 124 ] || die "the $stage boot ($domain) did not power off within ${boot_timeout_s}s (console: $console)"
    die "qemu failed ($status) in the $stage boot ($domain) (console: $console)"
  }
  log "$domain $stage boot: $((SECONDS - started)) s"
  # The guest's tty writes \r\n.
  tr -d '\r' <"$console" >"$console.tmp" && mv "$console.tmp" "$console"
  grep -a '^PSDAX' "$console" | grep -av '^PSDAX ack' >&2 || true
  if grep -aq '^PSDAX FAIL' "$console"; then
    die "$domain $stage: $(grep -a '^PSDAX FAIL' "$console" | head -3) (console: $console)"
  fi
  grep -aq "^PSDAX $stage done" "$console" || die "$domain $stage did not finish (console: $console)"
}

run_domain() {
  local domain=$1
  local expected_domain
  case $domain in
    mem-ctrl) expected_domain="cache-line" ;;
    cpu) expected_domain="byte" ;;
    *) die "unknown domain $domain (mem-ctrl or cpu)" ;;
  esac
  rm -f "$work/nvdimm.img"
  truncate -s 2G "$work/nvdimm.img"
  boot load "$domain" "$work/base.cpio" "$work/$domain-load.log"
  grep -aq "^PSDAX domain $expected_domain[ ,(].*detected by MAP_SYNC" "$work/$domain-load.log" ||
    die "$domain: inspect did not report $expected_domain detected by MAP_SYNC"
  build_expectations "$work/$domain-load.log" "$work/verify.cpio"
  local kv wal
  kv=$(cat "$work/expect/expect/kv")
  wal=$(wc -l <"$work/expect/expect/wal")
  [ "$kv" -gt 0 ] && [ "$wal" -gt 0 ] || die "$domain: no acknowledged writes to check (kv $kv, wal $wal)"
  boot verify "$domain" "$work/verify.cpio" "$work/$domain-verify.log"
  grep -aq "^PSDAX kv checked $kv missing 0$" "$work/$domain-verify.log" || die "$domain: kv check failed"
  grep -aq "^PSDAX wal checked $wal missing 0$" "$work/$domain-verify.log" || die "$domain: wal check failed"
  log "PASS $domain: $expected_domain domain detected by MAP_SYNC; $kv SETs and $wal WAL records acknowledged before the power-off, all recovered"
}

install_tools
mkdir -p "$cache"
work=$cache/work
mkdir -p "$work"
fetch_kernel
cargo build --release -q
build_initramfs
for domain in "${domains[@]}"; do
  run_domain "$domain"
done
log "all passed (${domains[*]})"
