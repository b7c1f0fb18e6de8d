# Sourced by the benchmark scripts (not run): installs what they measure
# against, if missing. `bench_peers [wrk] [kevy]`: redis-server and
# redis-tools (redis-benchmark) always, wrk and kevy 3.17.3 when named, and
# matplotlib for the plots (a script without it still writes its tables).
bench_peers() {
  local missing=() want
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v redis-benchmark >/dev/null || missing+=(redis-tools)
  for want in "$@"; do
    if [ "$want" = wrk ]; then command -v wrk >/dev/null || missing+=(wrk); fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}"
  fi
  # Debian starts a redis-server on 6379 when installing it: not ours.
  systemctl stop redis-server 2>/dev/null || true
  python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install -q matplotlib \
    || apt-get install -y -qq python3-matplotlib || true
  for want in "$@"; do
    if [ "$want" = kevy ]; then
      [ -x "${KEVY_BIN:-$HOME/.cargo/bin/kevy}" ] || cargo install kevy@3.17.3 --locked
    fi
  done
}
