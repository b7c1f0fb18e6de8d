#!/usr/bin/env python3
"""Issue 37: what a command that spans shards costs on the main port.

One server with `--shards 1`, then `--shards 2` (rounds alternate), pool on
/dev/shm; 100,000 keys of 16 B filled first; then redis-benchmark on the
main port: GET and SET (at 2 shards, half the keys are the other shard's: one
hop), MGET, EXISTS and MSET of 10 keys (at 2 shards, nearly every call spans
both: it runs with both shards parked, `apps/kv/across.rs`, and an MSET is
made durable on both before its reply). Server
CPU per request from /proc/PID/task/*/schedstat; medians. On a 2-core
machine the server's shards and the load generator share the cores.

Usage: python3 bench/span.py [--rounds 3] [--requests 200000]
Writes bench/results/span.md (or --out).
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from cpu import cpu_seconds, ping, send_all, resp  # noqa: E402  (one CPU reader for every bench)
import cpu  # noqa: E402

PS_BIN = os.environ.get("PACKETSTORE_BIN", os.path.join(ROOT, "target", "release", "packetstore"))
PORT = cpu.PORT
TEN = ["key:__rand_int__"] * 10
WORKLOADS = {
    "get": ["GET", "key:__rand_int__"],
    "set": ["SET", "key:__rand_int__", "v" * 16],
    "mget-10": ["MGET"] + TEN,
    "exists-10": ["EXISTS"] + TEN,
    "mset-10": ["MSET"] + [w for _ in range(10) for w in ("key:__rand_int__", "v" * 16)],
}


def start(shards, data):
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    cmd = [PS_BIN, "serve", "--pool", os.path.join(data, "kv.pool"), "--pool-size", "2GiB", "--resp",
           f"127.0.0.1:{PORT}", "--http", f"127.0.0.1:{PORT + 1}", "--shards", str(shards), "--cluster-ports",
           str(PORT + 10)]
    log = open(os.path.join(data, "server.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=dict(os.environ, PACKETSTORE_LOG="warn"))
    deadline = time.time() + 60
    while not ping(PORT):
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise RuntimeError(open(log.name).read()[-500:])
        time.sleep(0.05)
    return proc


def run(args):
    rows = []
    for r in range(args.rounds):
        for shards in ([1, 2] if r % 2 == 0 else [2, 1]):
            data = f"/dev/shm/spanbench-{shards}"
            cpu.wait_port_free(PORT)
            proc = start(shards, data)
            try:
                send_all([resp("SET", f"key:{i:012d}", "v" * 16) for i in range(100000)])
                for name, command in WORKLOADS.items():
                    bench = ["redis-benchmark", "-p", str(PORT), "-c", "50", "-n", str(args.requests), "-P", "16",
                             "-r", "100000", "--csv"] + command
                    cpu0, t0 = cpu_seconds(proc.pid), time.time()
                    out = subprocess.run(bench, capture_output=True, text=True, check=True, timeout=600).stdout
                    used = cpu_seconds(proc.pid) - cpu0
                    line = [l for l in out.splitlines() if l.startswith('"') and not l.startswith('"test"')][-1]
                    rps = float(line.split(",")[1].strip('"'))
                    rows.append((name, shards, rps, used / args.requests * 1e6))
                    print(f"round {r} shards {shards} {name:10s} {rps:9.0f}/s {used / args.requests * 1e6:6.2f} us/req",
                          flush=True)
            finally:
                proc.kill()
                proc.wait()
                shutil.rmtree(data, ignore_errors=True)
    return rows


def write(rows, args):
    lines = ["# Commands across shards on the main port (issue 37)", "",
             f"`python3 bench/span.py --rounds {args.rounds} --requests {args.requests}` on this VM (2 cores): "
             "one server with `--shards 1` or `--shards 2`, alternated, pool on /dev/shm, 100,000 keys of 16 B; "
             "redis-benchmark `-c 50 -P 16` on the main port. At 2 shards a GET is the other shard's half the "
             "time (one hop), and an MGET, EXISTS or MSET of 10 keys nearly always spans both (it runs with "
             "both shards parked, atomic; an MSET is made durable on both before its reply). The shards and the load generator share the 2 cores. Server CPU per request "
             "(schedstat), medians.", "",
             "| workload | 1 shard K/s | 1 shard us/req | 2 shards K/s | 2 shards us/req | CPU 2/1 |",
             "|---|---:|---:|---:|---:|---:|"]
    for name in WORKLOADS:
        m = {}
        for shards in (1, 2):
            sel = [(r[2], r[3]) for r in rows if r[0] == name and r[1] == shards]
            m[shards] = (statistics.median(s[0] for s in sel), statistics.median(s[1] for s in sel))
        lines.append(f"| {name} | {m[1][0] / 1000:.0f}K | {m[1][1]:.2f} | {m[2][0] / 1000:.0f}K | {m[2][1]:.2f} | "
                     f"{m[2][1] / m[1][1]:.2f}x |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200000)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "span.md"))
    args = parser.parse_args()
    write(run(args), args)


if __name__ == "__main__":
    main()
