#!/usr/bin/env python3
"""Issue 17's command benchmark: packetstore against Redis 7 and kevy on
every command family redis-benchmark knows, side by side.

For each storage (tmpfs --shm-dir, emulated persistent memory; the ext4
disk, --disk-dir) and pipeline depth (1 and 16), runs

  redis-benchmark -t <test> -d 1024 -c 50 -r 100000 -n N -P depth --csv

for the tests set, get, incr, lpush, rpush, lpop, rpop, sadd, hset, spop,
zadd, zpopmin, lrange_100, mset (in that order, against one server
started fresh per round) on these systems:

  packetstore       packetstore serve (zero copy): every write durable
                    before its reply
  redis-always      redis-server 7, appendonly yes, appendfsync always
  redis-no          redis-server 7, no persistence (an upper bound)
  kevy-always       kevy 3.17.3 (Rust, io_uring), --threads 1, AOF with
                    appendfsync = "always"

The systems alternate within each round (A B C D, B C D A, ...), medians
over the rounds are reported. The server runs on CPU 1 and
redis-benchmark on CPU 0; the server's CPU time per request (utime +
stime from /proc) is measured around each test. Writes
bench/results/commands.md, commands.csv and commands.png.

Usage: bench/commands.sh [--rounds N] [--requests N] [--quick]
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kv  # noqa: E402  (the helpers of the key-value benchmark)

TESTS = ["set", "get", "incr", "lpush", "rpush", "lpop", "rpop", "sadd", "hset", "spop", "zadd", "zpopmin",
         "lrange_100", "mset"]
WRITES = {"set", "incr", "lpush", "rpush", "lpop", "rpop", "sadd", "hset", "spop", "zadd", "zpopmin", "mset"}
SYSTEMS = ["packetstore", "redis-always", "redis-no", "kevy-always"]
KEVY = os.environ.get("KEVY_BIN", os.path.expanduser("~/.cargo/bin/kevy"))
RESULTS = kv.RESULTS


def start(system, storage_dir):
    """Starts `system` with a fresh data directory on CPU 1."""
    if system != "kevy-always":
        name = {"redis-always": "redis-always", "redis-no": "redis-no"}.get(system, system)
        return kv.start(name, storage_dir)
    data = os.path.join(storage_dir, "cmdbench-kevy")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    kv.wait_port_free(kv.PORT)
    config = os.path.join(data, "kevy.toml")
    with open(config, "w") as f:
        f.write('[persistence]\naof = true\nappendfsync = "always"\n')
    cmd = [KEVY, "--config", config, "--threads", "1", "--port", str(kv.PORT), "--dir", data]
    proc = subprocess.Popen(["taskset", "-c", "1"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    kv.wait_ready(kv.PORT, proc)
    return proc, data


def benchmark(proc, test, requests, pipeline):
    """One test: rps, p50/p99 (ms), server CPU per request (us)."""
    cmd = ["taskset", "-c", "0", "redis-benchmark", "-p", str(kv.PORT), "-t", test, "-d", "1024", "-c", "50",
           "-r", "100000", "-n", str(requests), "-P", str(pipeline), "--csv"]
    cpu0 = kv.cpu_seconds(proc.pid)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    cpu = kv.cpu_seconds(proc.pid) - cpu0
    # The last row is the test's own (lrange_100 first pushes with LPUSH).
    row = [line for line in out.splitlines() if line.startswith('"') and not line.startswith('"test"')][-1]
    fields = [f.strip('"') for f in row.split(",")]
    # CPU of the whole run, prefill included, over the test's requests.
    return {"rps": float(fields[1]), "p50_ms": float(fields[4]), "p99_ms": float(fields[6]),
            "server_us_per_req": cpu / requests * 1e6}


def run(args):
    storages = [("shm", args.shm_dir), ("disk", args.disk_dir)]
    samples = []
    for storage, directory in storages:
        if storage not in args.storages:
            continue
        for pipeline in args.pipelines:
            requests = args.requests * (4 if pipeline > 1 else 1)
            for rnd in range(args.rounds):
                order = SYSTEMS[rnd % len(SYSTEMS):] + SYSTEMS[:rnd % len(SYSTEMS)]
                for system in order:
                    proc, data = start(system, directory)
                    try:
                        for test in TESTS:
                            result = benchmark(proc, test, requests, pipeline)
                            result.update(storage=storage, pipeline=pipeline, round=rnd, system=system, test=test)
                            samples.append(result)
                            print(f"{storage} P{pipeline} r{rnd} {system:13} {test:11} {result['rps']:>10.0f} rps "
                                  f"p99 {result['p99_ms']:.2f} ms  {result['server_us_per_req']:.2f} us/req",
                                  flush=True)
                    finally:
                        kv.stop(proc, data)
    return samples


def medians(samples):
    groups = {}
    for s in samples:
        groups.setdefault((s["storage"], s["pipeline"], s["test"], s["system"]), []).append(s)
    return {key: {f: statistics.median(r[f] for r in rows) for f in ("rps", "p99_ms", "server_us_per_req")}
            for key, rows in groups.items()}


def write(samples, args):
    with open(os.path.join(RESULTS, "commands.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(samples[0].keys()))
        w.writeheader()
        w.writerows(samples)
    m = medians(samples)
    lines = ["# Commands: packetstore against Redis 7 and kevy", "",
             f"`bash bench/commands.sh --rounds {args.rounds} --requests {args.requests}` (bench/commands.py): "
             "redis-benchmark -t TEST -d 1024 -c 50 -r 100000, server on CPU 1, client on CPU 0, systems "
             "alternating within each round, medians over the rounds. `x always` is packetstore's rate over "
             "Redis's with appendfsync always; `cpu` the server's CPU time per request (us).", ""]
    for storage in ("shm", "disk"):
        for pipeline in args.pipelines:
            if (storage, pipeline, "set", "packetstore") not in m:
                continue
            lines += [f"## {storage}, -P {pipeline}", "",
                      "| test | packetstore rps | p99 ms | cpu | Redis always rps | p99 ms | cpu | x always | "
                      "Redis no-persist rps | kevy always rps | p99 ms |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for test in TESTS:
                p = m[(storage, pipeline, test, "packetstore")]
                r = m[(storage, pipeline, test, "redis-always")]
                n = m[(storage, pipeline, test, "redis-no")]
                k = m.get((storage, pipeline, test, "kevy-always"), {"rps": 0, "p99_ms": 0})
                lines.append(f"| {test} | {p['rps']:.0f} | {p['p99_ms']:.2f} | {p['server_us_per_req']:.2f} | "
                             f"{r['rps']:.0f} | {r['p99_ms']:.2f} | {r['server_us_per_req']:.2f} | "
                             f"{p['rps'] / r['rps']:.2f} | {n['rps']:.0f} | {k['rps']:.0f} | {k['p99_ms']:.2f} |")
            lines.append("")
    with open(os.path.join(RESULTS, "commands.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(m, args)


def plot(m, args):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("commands.py: no matplotlib: no plot", file=sys.stderr)
        return
    panels = [(s, p) for s in ("shm", "disk") for p in args.pipelines if (s, p, "set", "packetstore") in m]
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 3.2 * len(panels)), squeeze=False)
    for ax, (storage, pipeline) in zip(axes[:, 0], panels):
        width = 0.8 / len(SYSTEMS)
        for i, system in enumerate(SYSTEMS):
            ratios = [m.get((storage, pipeline, t, system), {"rps": 0})["rps"] /
                      m[(storage, pipeline, t, "redis-always")]["rps"] for t in TESTS]
            ax.bar([x + i * width for x in range(len(TESTS))], ratios, width, label=system)
        ax.axhline(1.0, color="black", linewidth=0.5)
        ax.set_xticks([x + 1.5 * width for x in range(len(TESTS))])
        ax.set_xticklabels(TESTS, rotation=30)
        ax.set_ylabel("rps / Redis always")
        ax.set_title(f"{storage}, -P {pipeline}")
        ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "commands.png"), dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100000, help="requests per unpipelined run (x4 pipelined)")
    parser.add_argument("--pipelines", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--storages", nargs="+", default=["shm", "disk"])
    parser.add_argument("--shm-dir", default="/dev/shm")
    parser.add_argument("--disk-dir", default=os.path.join(kv.ROOT, "target", "bench-disk"))
    parser.add_argument("--quick", action="store_true", help="1 round of 20,000 requests")
    parser.add_argument("--replot", nargs="+", metavar="CSV",
                        help="no run: tables and plot from these CSVs of earlier runs (e.g. one per storage)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.requests = 1, 20000
    if args.replot:
        samples = []
        for path in args.replot:
            with open(path) as f:
                for row in csv.DictReader(f):
                    for field in ("rps", "p50_ms", "p99_ms", "server_us_per_req"):
                        row[field] = float(row[field])
                    row["pipeline"], row["round"] = int(row["pipeline"]), int(row["round"])
                    samples.append(row)
        write(samples, args)
        return
    os.makedirs(args.disk_dir, exist_ok=True)
    samples = run(args)
    write(samples, args)


if __name__ == "__main__":
    main()
