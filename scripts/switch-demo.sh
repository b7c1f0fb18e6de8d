#!/usr/bin/env bash
# The three-namespace switch demo (README, "The packet-logging switch").
#
#   bash scripts/switch-demo.sh up      # namespaces ps-h1..3 and ps-sw, veth pairs
#   bash scripts/switch-demo.sh run     # the switch in ps-sw (Ctrl-C stops it)
#   bash scripts/switch-demo.sh traffic # ping and a TCP transfer through it
#   bash scripts/switch-demo.sh pcap    # the log as /tmp/packetstore-switch.pcap
#   bash scripts/switch-demo.sh down    # removes everything
#
# Host hN (10.11.0.N/24, interface eth0) is wired to port pN of the switch
# namespace. Needs root (ip netns). PACKETSTORE names the binary
# (default: target/release/packetstore, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-ps}
POOL=${POOL:-/dev/shm/packetstore-switch.pool}
PCAP=${PCAP:-/tmp/packetstore-switch.pcap}
BIN=${PACKETSTORE:-target/release/packetstore}
HOSTS=(1 2 3)

up() {
  ip netns add "$PREFIX-sw"
  ip -n "$PREFIX-sw" link set lo up
  for n in "${HOSTS[@]}"; do
    ip netns add "$PREFIX-h$n"
    ip link add "p$n" netns "$PREFIX-sw" type veth peer name eth0 netns "$PREFIX-h$n"
    ip -n "$PREFIX-h$n" addr add "10.11.0.$n/24" dev eth0
    ip -n "$PREFIX-h$n" link set eth0 up
    # A veth hands the switch TCP and UDP frames whose checksum is left for
    # hardware to fill in (CHECKSUM_PARTIAL); AF_XDP sees the raw bytes,
    # so the hosts compute checksums themselves, as a NIC would on a wire.
    ip netns exec "$PREFIX-h$n" ethtool -K eth0 tx off >/dev/null
    ip -n "$PREFIX-h$n" link set lo up
    ip -n "$PREFIX-sw" link set "p$n" up
  done
  echo "up: hosts $PREFIX-h1..3 (10.11.0.1..3) wired to ports p1..p3 of $PREFIX-sw"
}

down() {
  for n in "${HOSTS[@]}"; do ip netns del "$PREFIX-h$n" 2>/dev/null || true; done
  ip netns del "$PREFIX-sw" 2>/dev/null || true
  echo "down"
}

binary() {
  [ -x "$BIN" ] || cargo build --release -p packetstore-cli >&2
  echo "$BIN"
}

run() {
  exec ip netns exec "$PREFIX-sw" "$(binary)" switch --pool "$POOL" --port p1 --port p2 --port p3 \
    --metrics 127.0.0.1:9180 "$@"
}

traffic() {
  ip netns exec "$PREFIX-h1" ping -c 3 -i 0.2 10.11.0.2
  ip netns exec "$PREFIX-h3" ping -c 3 -i 0.2 10.11.0.1
  ip netns exec "$PREFIX-h2" python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.11.0.2", 5001)); s.listen(1); c, _ = s.accept(); n = 0
while True:
    b = c.recv(65536)
    if not b: break
    n += len(b)
print("h2 received", n, "bytes over TCP")' &
  sleep 0.5
  ip netns exec "$PREFIX-h1" python3 -c '
import socket
s = socket.create_connection(("10.11.0.2", 5001)); s.sendall(b"x" * 1000000); s.close()'
  wait
  ip netns exec "$PREFIX-sw" curl -s 127.0.0.1:9180/metrics | grep -E "^packetstore_switch_(rx|tx|logged)_frames" || true
}

pcap() {
  "$(binary)" pcap "$POOL" -o "$PCAP"
  if command -v tcpdump >/dev/null; then tcpdump -nr "$PCAP" -c 20; fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  run) shift; run "$@" ;;
  traffic) traffic ;;
  pcap) pcap ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
