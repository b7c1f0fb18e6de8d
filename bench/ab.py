#!/usr/bin/env python3
"""Two builds of packetstore side by side: does a change move throughput?

Runs the same requests against build A and build B, alternated within each
round (A B, then B A, ...), and reports medians, the ratio B/A and the server's
CPU time per request (utime + stime from /proc over the run). The server
runs on CPU 1, the load generator on CPU 0. Every run starts on a fresh
pool.

Requests:
  - `packetstore serve`, redis-benchmark -d 1024 -c 50 -r 100000: SET and
    GET at pipeline 1 and 16, pool on /dev/shm (emulated persistent
    memory, cache-line domain); SET at pipeline 16 with the pool on the
    project's disk (page domain: one fdatasync per batch).
  - `packetstore wal --threads 2`, wrk -t 2 -c 32 POSTing 1 KiB bodies
    (bench/post.lua), pool on /dev/shm.

Usage: python3 bench/ab.py A_BINARY B_BINARY [--rounds N] [--requests N]
       [--seconds S] [--out FILE]
Build each binary with `cargo build --release` in its own checkout (for
example `git worktree add /tmp/a <commit>`). Writes a markdown table to
stdout and to --out if given.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POST_LUA = os.path.join(ROOT, "bench", "post.lua")
TICKS = os.sysconf("SC_CLK_TCK")
PORT_BASE = 19200


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start(binary, args, env=None):
    """Starts a server on CPU 1 and returns it once it says it listens."""
    proc = subprocess.Popen(
        ["taskset", "-c", "1", binary, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, PACKETSTORE_LOG="warn", **(env or {})),
        text=True,
    )
    deadline = time.time() + 60
    for line in proc.stdout:
        if line.startswith("listening"):
            return proc
        if time.time() > deadline:
            break
    proc.kill()
    raise RuntimeError(f"{binary} {' '.join(args)} did not start")


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def kv_run(binary, pool_dir, port, test, pipeline, requests):
    pool = os.path.join(pool_dir, f"ab-{port}.pool")
    proc = start(binary, ["serve", "--pool", pool, "--pool-size", "2GiB", "--resp", f"127.0.0.1:{port}",
                          "--http", f"127.0.0.1:{port + 1}"])
    try:
        if test == "get":  # GETs of stored values, not misses
            subprocess.run(["taskset", "-c", "0", "redis-benchmark", "-p", str(port), "-t", "set", "-d", "1024",
                            "-c", "50", "-r", "100000", "-n", "100000", "-P", "16", "-q"],
                           capture_output=True, check=True)
        before = cpu_seconds(proc.pid)
        out = subprocess.run(["taskset", "-c", "0", "redis-benchmark", "-p", str(port), "-t", test, "-d", "1024",
                              "-c", "50", "-r", "100000", "-n", str(requests), "-P", str(pipeline), "--csv"],
                             capture_output=True, text=True, check=True).stdout
        cpu = cpu_seconds(proc.pid) - before
    finally:
        stop(proc)
        os.remove(pool)
    row = [line for line in out.splitlines() if line.startswith(f'"{test.upper()}"')][-1]
    rate = float(row.split(",")[1].strip('"'))
    return rate, cpu / requests * 1e6


def wal_run(binary, pool_dir, port, seconds):
    pool = os.path.join(pool_dir, f"ab-wal-{port}.pool")
    proc = start(binary, ["wal", "--pool", pool, "--pool-size", "2GiB", "--threads", "2",
                          "--listen", f"127.0.0.1:{port}"])
    try:
        before = cpu_seconds(proc.pid)
        out = subprocess.run(["taskset", "-c", "0", "wrk", "-t", "2", "-c", "32", "-d", f"{seconds}s", "-s",
                              POST_LUA, f"http://127.0.0.1:{port}/wal"],
                             capture_output=True, text=True, check=True).stdout
        cpu = cpu_seconds(proc.pid) - before
    finally:
        stop(proc)
        os.remove(pool)
    total = next(int(line.split()[0]) for line in out.splitlines() if "requests in" in line)
    rate = next(float(line.split()[1]) for line in out.splitlines() if line.startswith("Requests/sec"))
    return rate, cpu / max(total, 1) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--out")
    parser.add_argument("--only", help="comma-separated cases to run: set1,set16,get1,get16,disk,wal,"
                        "incr16,incrdisk,getdisk (disk: SET -P 16 on ext4)")
    args = parser.parse_args()
    for tool in ("redis-benchmark", "wrk", "taskset"):
        if shutil.which(tool) is None:
            sys.exit(f"ab.py: {tool} not found (apt-get install redis-tools wrk util-linux)")
    disk_dir = tempfile.mkdtemp(prefix="ab-", dir=os.path.join(ROOT, "target"))
    cases = [("SET", 1, "/dev/shm"), ("SET", 16, "/dev/shm"), ("GET", 1, "/dev/shm"), ("GET", 16, "/dev/shm"),
             ("SET", 16, disk_dir), ("WAL POST", 0, "/dev/shm"), ("INCR", 16, "/dev/shm"), ("INCR", 16, disk_dir),
             ("GET", 16, disk_dir)]
    names = ["set1", "set16", "get1", "get16", "disk", "wal", "incr16", "incrdisk", "getdisk"]
    if args.only:
        wanted = set(args.only.split(","))
        cases = [case for name, case in zip(names, cases) if name in wanted]
    samples = {}
    port = PORT_BASE
    for round_index in range(args.rounds):
        for name, pipeline, pool_dir in cases:
            # Odd rounds run B first: neither build always follows the other.
            order = (("A", args.a), ("B", args.b)) if round_index % 2 == 0 else (("B", args.b), ("A", args.a))
            for label, binary in order:
                port += 2
                if name == "WAL POST":
                    result = wal_run(binary, pool_dir, port, args.seconds)
                else:
                    result = kv_run(binary, pool_dir, port, name.lower(), pipeline, args.requests)
                samples.setdefault((name, pipeline, pool_dir, label), []).append(result)
                print(f"round {round_index}: {name} P{pipeline} {pool_dir} {label}: {result[0]:.0f}/s, "
                      f"{result[1]:.2f} us CPU/request", file=sys.stderr, flush=True)
    shutil.rmtree(disk_dir, ignore_errors=True)
    lines = [f"A: `{args.a}`, B: `{args.b}`; {args.rounds} rounds alternated (A B, B A, ...), medians; "
             f"server on CPU 1, load on CPU 0.", "",
             "| request | pipeline | pool | A req/s | B req/s | B/A | A CPU us/req | B CPU us/req |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for name, pipeline, pool_dir in cases:
        a = samples[(name, pipeline, pool_dir, "A")]
        b = samples[(name, pipeline, pool_dir, "B")]
        rate_a, rate_b = statistics.median(r for r, _ in a), statistics.median(r for r, _ in b)
        cpu_a, cpu_b = statistics.median(c for _, c in a), statistics.median(c for _, c in b)
        where = "tmpfs" if pool_dir == "/dev/shm" else "disk (ext4)"
        depth = "wrk -c 32" if name == "WAL POST" else str(pipeline)
        lines.append(f"| {name} 1 KiB | {depth} | {where} | {rate_a:.0f} | {rate_b:.0f} | {rate_b / rate_a:.2f}x "
                     f"| {cpu_a:.2f} | {cpu_b:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
