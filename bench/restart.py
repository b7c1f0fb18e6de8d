#!/usr/bin/env python3
"""Restart after a crash: time to first answer, packetstore vs Redis 7
replaying its AOF, side by side (issue 15).

Workload (the issue's): redis-benchmark -t set -n 1000000 -r 1000000 -d 16
-P 64 -c 20, then kill -9 as soon as it ends, then a restart on a new port
(the dead listener's linger is the kernel's, measured apart in
docs/operations.md). Time to first answer: from spawning the server until
a GET is answered with anything but an error (Redis answers -LOADING while
it replays). Systems alternate within each round; medians of --rounds.

Systems:
  packetstore with --replay-budget B for each B of --budgets (the default
  budget among them), and Redis with appendonly yes, appendfsync always.
The number of records packetstore's restart replayed comes from its own
recovery line. Server on CPU 1, redis-benchmark and the prober on CPU 0.

Writes bench/results/restart.md, restart.csv and restart.png (time to first
answer against records replayed). Usage: bench/restart.sh [--rounds N]
[--budgets 1000,5000,...] [--dir DIR] [--requests N]
"""

import argparse
import csv
import os
import re
import shutil
import socket
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.environ.get("PACKETSTORE_BIN", os.path.join(ROOT, "target", "release", "packetstore"))
RESULTS = os.path.join(ROOT, "bench", "results")
PORTS = iter(range(17000, 18000, 2))
GET = b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000042\r\n"


def first_answer_s(port, proc, timeout_s=120):
    """Seconds from now until a GET on `port` gets an answer that is not
    an error (polling every 0.5 ms); the server was just spawned."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout_s:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.settimeout(5)
                while True:
                    s.sendall(GET)
                    reply = s.recv(4096)
                    if reply and not reply.startswith(b"-"):
                        return time.perf_counter() - started
                    if not reply:
                        break
                    time.sleep(0.0005)
        except OSError:
            time.sleep(0.0005)
    raise RuntimeError("no answer")


def command(system, data, port):
    if system == "redis":
        return ["redis-server", "--port", str(port), "--dir", data, "--save", "", "--daemonize", "no",
                "--appendonly", "yes", "--appendfsync", "always", "--loglevel", "warning"]
    budget = system.split("-", 1)[1]
    return [BINARY, "serve", "--pool", os.path.join(data, "kv.pool"), "--pool-size", "2GiB",
            "--resp", f"127.0.0.1:{port}", "--http", f"127.0.0.1:{port + 1}", "--replay-budget", budget]


def spawn(system, data, port):
    env = dict(os.environ, PACKETSTORE_LOG="warn")
    return subprocess.Popen(["taskset", "-c", "1"] + command(system, data, port), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def data_bytes(data):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(data) for f in fs)


def one_run(system, base_dir, requests):
    """Loads `system`, kills it, restarts it: the run's figures."""
    data = os.path.join(base_dir, f"restart-{system}")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    port = next(PORTS)
    proc = spawn(system, data, port)
    first_answer_s(port, proc)
    bench = subprocess.run(["taskset", "-c", "0", "redis-benchmark", "-p", str(port), "-t", "set", "-n",
                            str(requests), "-r", "1000000", "-d", "16", "-P", "64", "-c", "20", "--csv"],
                           capture_output=True, text=True, check=True).stdout
    proc.kill()
    proc.wait()
    rps = float([line for line in bench.splitlines() if line.startswith('"SET"')][-1].split(",")[1].strip('"'))
    port = next(PORTS)
    proc = spawn(system, data, port)
    seconds = first_answer_s(port, proc)
    replayed = None
    if system != "redis":
        # The recovery line is printed before listening: it is in the pipe.
        proc.terminate()
        out, _ = proc.communicate(timeout=60)
        match = re.search(r"(\d+) log records replayed", out)
        replayed = int(match.group(1)) if match else None
    else:
        proc.kill()
        proc.wait()
    row = {"system": system, "first_answer_ms": seconds * 1e3, "records_replayed": replayed,
           "set_rps": rps, "data_mib": data_bytes(data) / 2**20}
    shutil.rmtree(data, ignore_errors=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--budgets", default="1000,5000,20000,100000,400000")
    parser.add_argument("--dir", default="/dev/shm", help="where pools and AOFs live")
    parser.add_argument("--replot", action="store_true", help="redraw restart.png from restart.csv")
    args = parser.parse_args()
    if args.replot:
        with open(os.path.join(RESULTS, "restart.csv")) as f:
            rows = [{k: (v if k == "system" else float(v) if v else None) for k, v in r.items()}
                    for r in csv.DictReader(f)]
        redis_ms = statistics.median([r["first_answer_ms"] for r in rows if r["system"] == "redis"])
        plot(rows, redis_ms)
        return
    systems = ["redis"] + [f"packetstore-{b}" for b in args.budgets.split(",")]
    rows = []
    for round_ in range(args.rounds):
        for system in systems:
            row = one_run(system, args.dir, args.requests)
            row["round"] = round_
            rows.append(row)
            print(f"round {round_} {system}: first answer {row['first_answer_ms']:.1f} ms, "
                  f"replayed {row['records_replayed']}, SET {row['set_rps']:.0f}/s", flush=True)
    write(rows, systems, args)


def write(rows, systems, args):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "restart.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    med = {s: {k: statistics.median([r[k] for r in rows if r["system"] == s and r[k] is not None] or [0])
               for k in ("first_answer_ms", "records_replayed", "set_rps", "data_mib")} for s in systems}
    redis_ms = med["redis"]["first_answer_ms"]
    with open(os.path.join(RESULTS, "restart.md"), "w") as f:
        f.write("# Restart after kill -9: time to first answer\n\n")
        f.write(f"`bash bench/restart.sh --rounds {args.rounds} --budgets {args.budgets} --dir {args.dir}`"
                f" ({time.strftime('%Y-%m-%d')}); workload `redis-benchmark -t set -n {args.requests} -r 1000000"
                " -d 16 -P 64 -c 20`, then kill -9 and a restart; medians of alternated rounds.\n\n")
        f.write("| system | first answer (ms) | vs Redis | records replayed | SET/s while loading | data (MiB) |\n")
        f.write("|---|---:|---:|---:|---:|---:|\n")
        for s in systems:
            m = med[s]
            replayed = "AOF" if s == "redis" else f"{m['records_replayed']:.0f}"
            f.write(f"| {s} | {m['first_answer_ms']:.1f} | {m['first_answer_ms'] / redis_ms:.3f} | {replayed} |"
                    f" {m['set_rps']:.0f} | {m['data_mib']:.0f} |\n")
    plot(rows, redis_ms)


def plot(rows, redis_ms):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    budgets = sorted({r["system"] for r in rows if r["system"] != "redis"}, key=lambda s: int(s.split("-")[1]))
    for system in budgets:
        ours = [r for r in rows if r["system"] == system]
        ax.scatter([r["records_replayed"] for r in ours], [r["first_answer_ms"] for r in ours],
                   label=f"packetstore, --replay-budget {int(system.split('-')[1]):,}")
    ax.axhline(redis_ms, color="tab:red", linestyle="--", label=f"Redis 7 AOF replay (median {redis_ms:.0f} ms)")
    ax.axhline(redis_ms / 10, color="tab:gray", linestyle=":", label="target: 1/10 of Redis")
    ax.set_xlabel("log records replayed (since the last checkpoint)")
    ax.set_ylabel("time to first answer (ms)")
    ax.set_xscale("symlog", linthresh=1000)
    ax.set_xlim(left=0)
    ax.set_yscale("log")
    ax.legend()
    ax.set_title("Restart after kill -9 (1M SETs of 16 B)")
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "restart.png"), dpi=120)


if __name__ == "__main__":
    main()
