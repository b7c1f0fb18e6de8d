#!/usr/bin/env bash
# The test command (README, "Testing"; .ci/run calls it): installs what the
# tests drive the servers with when it is missing (redis-cli from
# redis-tools, curl, sqlite3, fio and gcc for the write cache's
# tests, mkfs.ext4 and mount for the full-disk test, Go and
# iproute2 for the partition test, ping, ethtool and tcpdump for the
# switch's; apt, as root or through sudo), then runs `cargo test --workspace` with any
# arguments given. Prints the number of tests passed and failed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "test.sh: cargo not found; packetstore needs Rust >= 1.85 (https://rustup.rs)" >&2
  exit 1
fi

missing=()
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
# A real Redis 7 for the tests that compare with it (redis_peer.rs).
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v curl >/dev/null 2>&1 || missing+=(curl)
# redis_py.rs makes a virtualenv for Python's redis-py.
python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
# shards.rs installs ioredis (Node.js 20 or newer) under target/tmp with npm.
command -v npm >/dev/null 2>&1 || missing+=(npm)
# packetstore-preload/tests/sqlite.rs runs Debian's sqlite3 under the library.
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
# packetstore-preload/tests/fio.rs verifies fio's blocks through the library.
command -v fio >/dev/null 2>&1 || missing+=(fio)
# packetstore-reader/tests/bindings.rs compiles the C example, and
# packetstore-preload/tests/threads.rs its multi-threaded writer.
command -v cc >/dev/null 2>&1 || missing+=(gcc)
command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
command -v mount >/dev/null 2>&1 || missing+=(mount)
# partitions.rs: Go builds its linearizability checker (tools/linearizability,
# vendored: offline); ip and tc make its network namespaces and cuts (root).
command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || missing+=(golang-go)
{ command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1; } || missing+=(iproute2)
# packetstore-cli/tests/switch.rs: hosts in namespaces ping through the
# switch (their veths' checksum offload off with ethtool), and tcpdump
# must read its pcap export.
command -v ping >/dev/null 2>&1 || missing+=(iputils-ping)
command -v ethtool >/dev/null 2>&1 || missing+=(ethtool)
command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "test.sh: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The tests put pools on tmpfs (emulated persistent memory) and on the
# project's disk (the page domain).
if [ ! -d /dev/shm ] || [ ! -w /dev/shm ]; then
  echo "test.sh: /dev/shm must be a writable tmpfs" >&2
  exit 1
fi

# Every file in the checkout that is not committed as it is: changed,
# untracked, and ignored ones too (a leftover that .gitignore happens to
# match, a *.pool say, must be caught as well), less the build's own
# directories. Empty outside a git checkout.
leftovers() {
  git status --porcelain --untracked-files=normal --ignored=traditional 2>/dev/null \
    | grep -v -E '^!! (target|fuzz/target)/$' | sort || true
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
before=$(leftovers)
status=0
cargo test --workspace "$@" 2>&1 | tee "$log" || status=$?
echo
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
# The tests keep their scratch files in temporary directories: whatever
# they left or changed in the checkout is a bug (issue 35: fio's verify
# state files were committed twice).
left=$(comm -13 <(echo "$before") <(leftovers))
if [ -n "$left" ]; then
  echo "test.sh: the tests left files in the repository (scratch files belong in temporary directories):" >&2
  echo "$left" >&2
  status=1
fi
exit "$status"
