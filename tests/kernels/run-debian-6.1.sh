#!/usr/bin/env bash
# A manual check, not part of CI: boots Debian 12's own kernel (Linux 6.1,
# the package linux-image-amd64 depends on) under qemu/KVM with a tiny
# initramfs (busybox, the packetstore binary, redis-cli and their shared
# libraries), and checks there that `packetstore serve` starts, answers SET
# and GET (RESP) and PUT and GET (HTTP), stops gracefully on SIGTERM and
# finds its data after a restart; that `--io epoll --persist copy` does the
# same; and that `packetstore wal` answers a POST and a GET. Prints the
# guest's console; exits 0 when every check passed.
#
# Needs root (apt-get, /dev/kvm) on a Debian 12 host:
#   cargo build --release && bash tests/kernels/run-debian-6.1.sh
# PACKETSTORE_BIN picks another binary; KERNEL_PACKAGE another kernel
# package (e.g. linux-image-6.12.*-amd64 from bookworm-backports).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${PACKETSTORE_BIN:-target/release/packetstore}")
[ -x "$bin" ] || { echo "run-debian-6.1: no $bin (cargo build --release)" >&2; exit 1; }
[ -e /dev/kvm ] || { echo "run-debian-6.1: needs /dev/kvm" >&2; exit 1; }
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
[ -x /bin/busybox ] && /bin/busybox --list | grep -qx nc || missing+=(busybox-static)
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v cpio >/dev/null || missing+=(cpio)
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

work=$(mktemp -d /tmp/packetstore-kernel.XXXXXX)
trap 'rm -rf "$work"' EXIT
package=${KERNEL_PACKAGE:-$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')}
(cd "$work" && apt-get download "$package" >/dev/null 2>&1 && dpkg-deb -x ./*.deb kernel)
vmlinuz=$(ls "$work"/kernel/boot/vmlinuz-*)
echo "kernel: $package ($(basename "$vmlinuz"))"

root="$work/root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,lib64,lib/x86_64-linux-gnu}
cp /bin/busybox "$root/bin/busybox"
cp "$bin" "$root/bin/packetstore"
cp "$(command -v redis-cli)" "$root/bin/redis-cli"
for lib in $(ldd "$bin" "$(command -v redis-cli)" | awk '/=> \// { print $3 } /^[ \t]*\/lib64\// { print $1 }' | sort -u); do
  cp -L "$lib" "$root$lib"
done
cat > "$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/shm && mount -t tmpfs -o size=1g tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
ip link set lo up
export PATH=/bin
failed=0
check() { # name, then a command that must succeed
  name=$1; shift
  if "$@"; then echo "CHECK ok: $name"; else echo "CHECK FAILED: $name"; failed=1; fi
}
wait_line() { # file, text: waits up to 30 s for a line containing text
  i=0; while [ $i -lt 300 ]; do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; i=$((i+1)); done; return 1
}
http() { # request text: the reply's status line
  printf "$1" | nc 127.0.0.1 "$2" | head -1 | tr -d '\r'
}
echo "guest kernel: $(uname -r)"
serve() { # tag, extra flags
  tag=$1; shift
  packetstore serve --pool /dev/shm/$tag.pool --pool-size 256MiB --ring-entries 1024 "$@" >/tmp/$tag.out 2>/tmp/$tag.err &
  pid=$!
  if ! wait_line /tmp/$tag.out "^listening"; then
    echo "--- $tag: did not start"; cat /tmp/$tag.out /tmp/$tag.err; kill -9 $pid 2>/dev/null; return 1
  fi
  cat /tmp/$tag.out /tmp/$tag.err
}
stop() { kill -TERM $pid; wait $pid; }
kv_round() { # tag, extra flags
  tag=$1
  serve "$@" || { echo "CHECK FAILED: $tag starts"; failed=1; return; }
  echo "CHECK ok: $tag starts"
  check "$tag SET" [ "$(redis-cli -p 6379 set greeting 'hello 6.1')" = OK ]
  check "$tag GET" [ "$(redis-cli -p 6379 get greeting)" = "hello 6.1" ]
  check "$tag 1000 pipelined SETs" sh -c 'for i in $(seq 1000); do echo "SET key:$i value-$i"; done | redis-cli -p 6379 | grep -c OK | grep -qx 1000'
  check "$tag HTTP PUT" [ "$(http 'PUT /kv/k HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbytes' 8080)" = "HTTP/1.1 204 No Content" ]
  check "$tag HTTP GET" sh -c "printf 'GET /kv/k HTTP/1.1\r\nConnection: close\r\n\r\n' | nc 127.0.0.1 8080 | tail -1 | grep -qx bytes"
  stop
  check "$tag stopped gracefully" grep -q "stopped: every reply sent; checkpoint" /tmp/$tag.err
  shift
  serve "$tag" "$@" || { echo "CHECK FAILED: $tag restarts"; failed=1; return; }
  check "$tag restart replays nothing" grep -q " 0 log records replayed" /tmp/$tag.out
  check "$tag GET after restart" [ "$(redis-cli -p 6379 get key:1000)" = "value-1000" ]
  stop
}
kv_round uring
kv_round epoll --io epoll --persist copy
packetstore wal --pool /dev/shm/wal.pool --pool-size 64MiB --log-size 4MiB --ring-entries 256 --listen 127.0.0.1:8081 >/tmp/wal.out 2>/tmp/wal.err &
pid=$!
if wait_line /tmp/wal.out "^listening"; then
  cat /tmp/wal.out /tmp/wal.err
  check "wal POST" [ "$(http 'POST /wal HTTP/1.1\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello wal 1' 8081)" = "HTTP/1.1 200 OK" ]
  check "wal GET" sh -c "printf 'GET /log/1 HTTP/1.1\r\nConnection: close\r\n\r\n' | nc 127.0.0.1 8081 | tail -1 | grep -qx 'hello wal 1'"
  stop
else
  echo "CHECK FAILED: wal starts"; cat /tmp/wal.out /tmp/wal.err; failed=1
fi
[ $failed = 0 ] && echo "ALL CHECKS PASSED" || echo "SOME CHECKS FAILED"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

# KVM, when nested under this project's VMs, hangs right after the
# kernel decompresses itself; TCG (emulation) boots in about a minute.
# ACCEL="-enable-kvm -cpu host" uses KVM where it works.
# shellcheck disable=SC2086
timeout 900 qemu-system-x86_64 ${ACCEL:--accel tcg -cpu max} -smp 2 -m 2048 -nographic -no-reboot \
  -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "console=ttyS0 panic=-1 ${KERNEL_CMDLINE:-quiet}" | tee "$work/console.log"
grep -q "ALL CHECKS PASSED" "$work/console.log"
