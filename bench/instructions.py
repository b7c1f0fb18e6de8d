"""Instructions per request on the request path, counted by callgrind: the
A/B measure that does not drift (issue 36).

This VM's speed drifts by up to 2x over hours, and a change worth 5-10% of
server CPU per request hides in that noise even with alternated rounds
(bench/cpu.py). Valgrind's callgrind counts the instructions the server
executes instead, which do not depend on the VM's mood: the same build and
workload count the same to within about 1%. It counts only where the
request path runs (`--toggle-collect` on the engine's `serve_dirty`, which
parses and runs every command, and on the application's `commit`), so
startup, recovery and the rate-paced background work (the scrubber, whose
share under valgrind's 50x slowdown would be inflated) stay out;
checkpoints count (they run in the commit), triggered by the log's
records only (`--checkpoint-interval 600m`), as at full speed.

Instructions are not time: a cache miss costs no instruction, and the
kernel's send and receive are not counted. A change that cuts misses (a
prefetch) shows only in bench/cpu.py; a change that cuts work shows here
first, then must hold there.

Each workload runs on a fresh server: its fill (as bench/cpu.py's), then
--requests requests of redis-benchmark (-c 20 -P 16 -r 100000); the fill is
counted too and subtracted, measured alone on another fresh server.

Usage: python3 bench/instructions.py [--builds NAME=PATH ...]
                                     [--only W,...] [--requests N]
Writes bench/results/instructions.md, or the file named by --out.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu  # noqa: E402  (WORKLOADS, fill, ping: one definition of each workload)

PORT = 16489
TOGGLES = ["*Engine*serve_dirty*", "*App for*KvServer*::commit"]
DEFAULT_ONLY = "set-16b,get-16b,incr,lpush,sadd,hset,hget,zadd-new,zrange,mset,xadd"


def collected(out_file):
    """The instructions callgrind counted (its `summary:` or `totals:`)."""
    with open(out_file) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"instructions.py: no total in {out_file}")


def run_server(binary, workload, requests, measured):
    """Runs `binary` under callgrind through the workload's fill and, if
    `measured`, the workload; returns the instructions counted."""
    data = tempfile.mkdtemp(prefix="instructions-", dir="/dev/shm")
    out = os.path.join(data, "callgrind.out")
    toggles = [f"--toggle-collect={t}" for t in TOGGLES]
    # One core: a server of one shard (shards default to the cores this
    # process may use; a build older than shards ignores the mask).
    cmd = ["taskset", "-c", "1", "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + toggles + [
        binary, "serve", "--pool", os.path.join(data, "kv.pool"), "--pool-size", "1GiB",
        "--resp", f"127.0.0.1:{PORT}", "--http", f"127.0.0.1:{PORT + 1}",
        # Checkpoints by the log's records only, as at full speed (where
        # the 1 s timer seldom fires first); under valgrind's slowdown the
        # timer would add checkpoints a real run does not make.
        "--checkpoint-interval", "600m"]
    log = open(os.path.join(data, "server.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=log, cwd=data, env=dict(os.environ, PACKETSTORE_LOG="warn"))
    try:
        deadline = time.time() + 120
        while not cpu.ping(PORT):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"server did not start: {open(log.name).read()[-500:]}")
            time.sleep(0.2)
        fill_kind, args = cpu.WORKLOADS[workload]
        if fill_kind:
            cpu.fill(fill_kind, requests)
        if measured:
            bench = ["redis-benchmark", "-p", str(PORT), "-c", "20", "-P", "16", "-n", str(requests), "-q"]
            if "-r" not in args:
                bench += ["-r", str(cpu.KEYS)]
            subprocess.run(bench + args, check=True, capture_output=True, timeout=1800)
        proc.send_signal(2)  # SIGINT: callgrind writes its counts at exit
        proc.wait(timeout=600)
        return collected(out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(data, ignore_errors=True)


def per_request(binary, workload, requests):
    total = run_server(binary, workload, requests, measured=True)
    fill = run_server(binary, workload, requests, measured=False) if cpu.WORKLOADS[workload][0] else 0
    return (total - fill) / requests


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", nargs="+", default=[f"this={cpu.PS_BIN}"], help="NAME=PATH of a packetstore binary")
    parser.add_argument("--only", default=DEFAULT_ONLY)
    parser.add_argument("--requests", type=int, default=100000)
    parser.add_argument("--out", default=os.path.join(cpu.RESULTS, "instructions.md"))
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("instructions.py: needs valgrind (apt-get install valgrind)")
    cpu.PORT = PORT  # cpu.fill and cpu.ping talk to this port
    builds = [b.split("=", 1) for b in args.builds]
    workloads = args.only.split(",")
    rows = {}
    for workload in workloads:
        for name, path in builds:
            rows[(workload, name)] = per_request(path, workload, args.requests)
            print(f"{workload:10} {name:12} {rows[(workload, name)]:9.0f} instructions/request", flush=True)
    names = [name for name, _ in builds]
    lines = ["# Instructions per request on the request path (callgrind)", "",
             f"`python3 bench/instructions.py {' '.join(sys.argv[1:])}` ({args.requests} requests of each workload, "
             "redis-benchmark -c 20 -P 16 -r 100000, the fill subtracted; see the script's docstring for what is "
             "counted). Builds: " + ", ".join(f"`{n}` = `{p}`" for n, p in builds) + ".", "",
             "| workload | " + " | ".join(names) + (" | " + " | ".join(f"{n} / {names[0]}" for n in names[1:])
                                                     if len(names) > 1 else "") + " |",
             "|---|" + "---:|" * (2 * len(names) - 1)]
    for workload in workloads:
        cells = [f"{rows[(workload, n)]:,.0f}" for n in names]
        ratios = [f"{rows[(workload, n)] / rows[(workload, names[0])]:.2f}x" for n in names[1:]]
        lines.append(f"| {workload} | " + " | ".join(cells + ratios) + " |")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
