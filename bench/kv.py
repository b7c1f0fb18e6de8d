#!/usr/bin/env python3
"""The key-value server against Redis 7, side by side (PASTE, NSDI 2018,
section 5.1.2, with redis-benchmark instead of the paper's client).

For each storage (tmpfs, --shm-dir: emulated persistent memory for packetstore and a
tmpfs AOF for Redis; the ext4 disk: packetstore's page domain and a disk
AOF) and each pipeline depth (1 and 16), runs redis-benchmark
`-t set` and `-t get` (`-d 1024 -c 50 -r 100000`) against:
  packetstore serve (zero copy), and redis-server with appendonly yes +
  appendfsync always, appendfsync everysec, and appendonly no.
The systems alternate within each round (A B C D, A B C D, ...); medians
are reported. Each server runs on CPU 1 and redis-benchmark on CPU 0; the
server's CPU time per request (utime + stime from /proc over the run) is
reported for every row, since the client's core may saturate first.
CPU steal over the run is recorded too.

Also runs wrk against the HTTP port with YCSB-like mixes (50% and 5%
writes, Zipf 0.99 over 1,000 keys, 1 KiB values: the paper's Figure 8)
for packetstore zero copy, copy and epoll.

Writes bench/results/kv.md, kv.csv, kv-ycsb.csv, kv-compaction.csv and their plots
(kv.png, kv-ycsb.png, kv-compaction.png).
Usage: bench/kv.sh [--rounds N] [--requests N] [--quick]
"""

import argparse
import csv
import io
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.environ.get("PACKETSTORE_BIN", os.path.join(ROOT, "target", "release", "packetstore"))
RESULTS = os.path.join(ROOT, "bench", "results")
YCSB_LUA = os.path.join(ROOT, "bench", "ycsb.lua")
TICKS = os.sysconf("SC_CLK_TCK")
PORT = 16379


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def steal_ticks():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[7], sum(fields)


def wait_ready(port, proc, timeout_s=30):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        r = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True)
        if r.stdout.strip() == "PONG":
            return
        time.sleep(0.1)
    raise RuntimeError("server did not answer PING")


def wait_port_free(port, timeout_s=20):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        r = subprocess.run(["ss", "-ltn", f"sport = :{port}"], capture_output=True, text=True)
        if str(port) not in r.stdout:
            return
        time.sleep(0.2)


def start(system, storage_dir):
    """Starts `system` with a fresh data directory; returns the process."""
    data = os.path.join(storage_dir, f"kvbench-{system}")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    wait_port_free(PORT)
    wait_port_free(PORT + 1)
    if system.startswith("packetstore"):
        cmd = [BINARY, "serve", "--pool", os.path.join(data, "kv.pool"), "--pool-size", "4GiB",
               "--resp", f"127.0.0.1:{PORT}", "--http", f"127.0.0.1:{PORT + 1}"]
        cmd += {
            "packetstore": ["--persist", "zerocopy"],
            "packetstore-copy": ["--persist", "copy"],
            "packetstore-epoll": ["--io", "epoll", "--persist", "copy", "--commit", "per-turn"],
            # Replies sent from the pool always, or always copied.
            "packetstore-zc-always": ["--zero-copy-min", "0"],
            "packetstore-zc-never": ["--zero-copy-min", "1TiB"],
            # Compaction relocating all the time, and never.
            "packetstore-compaction-on": ["--compact-waste", "0"],
            "packetstore-compaction-off": ["--compact-waste", "2"],
        }[system]
    else:
        fsync = system.split("-", 1)[1]
        cmd = ["redis-server", "--port", str(PORT), "--dir", data, "--save", "", "--daemonize", "no",
               "--appendonly", "no" if fsync == "no" else "yes",
               "--appendfsync", "always" if fsync == "no" else fsync, "--loglevel", "warning"]
    proc = subprocess.Popen(["taskset", "-c", "1"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_ready(PORT, proc)
    return proc, data


def stop(proc, data):
    proc.kill()
    proc.wait()
    shutil.rmtree(data, ignore_errors=True)


def redis_benchmark(test, requests, pipeline):
    cmd = ["taskset", "-c", "0", "redis-benchmark", "-p", str(PORT), "-t", test, "-d", "1024", "-c", "50",
           "-r", "100000", "-n", str(requests), "-P", str(pipeline), "--csv"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    row = [line for line in out.splitlines() if line.startswith(f'"{test.upper()}"')][-1]
    fields = [f.strip('"') for f in row.split(",")]
    return {"rps": float(fields[1]), "p50_ms": float(fields[4]), "p99_ms": float(fields[6])}


class KvMdSection:
    """Collects one "## " section of kv.md and writes it in place of an
    earlier copy of the same section (running one section again replaces
    it), or at the end when there is none."""

    def __enter__(self):
        self.text = io.StringIO()
        return self.text

    def __exit__(self, kind, value, traceback):
        if kind is not None:
            return False
        text = self.text.getvalue()
        path = os.path.join(RESULTS, "kv.md")
        old = open(path).read() if os.path.exists(path) else ""
        title = "\n" + text.lstrip("\n").split("\n", 1)[0] + "\n"
        at = old.find(title)
        if at < 0:
            new = old + text
        else:
            end = old.find("\n## ", at + 1)
            new = old[:at] + text + (old[end:] if end >= 0 else "")
        with open(path, "w") as f:
            f.write(new)
        return False


def measured_benchmark(proc, test, requests, pipeline):
    """One redis-benchmark run with the server's CPU time per request and
    the CPU steal over it."""
    steal0 = steal_ticks()
    cpu0 = cpu_seconds(proc.pid)
    result = redis_benchmark(test, requests, pipeline)
    cpu = cpu_seconds(proc.pid) - cpu0
    steal1 = steal_ticks()
    result["server_us_per_req"] = cpu / requests * 1e6
    result["steal_pct"] = 100 * (steal1[0] - steal0[0]) / max(1, steal1[1] - steal0[1])
    return result


def run_redis_rows(args, storages):
    systems = ["packetstore", "redis-always", "redis-everysec", "redis-no"]
    samples = {}
    for storage, directory in storages:
        for pipeline in args.pipelines:
            for rnd in range(args.rounds):
                for system in systems:
                    proc, data = start(system, directory)
                    try:
                        # Fill the key space so GETs find values.
                        for test in ["set", "get"]:
                            n = args.requests * (4 if pipeline > 1 else 1)
                            result = measured_benchmark(proc, test, n, pipeline)
                            key = (storage, pipeline, test, system)
                            samples.setdefault(key, []).append(result)
                            print(f"{storage} P{pipeline} {test} {system} round {rnd}: "
                                  f"{result['rps']:.0f}/s p99 {result['p99_ms']:.2f} ms "
                                  f"server {result['server_us_per_req']:.2f} us/req steal {result['steal_pct']:.0f}%",
                                  flush=True)
                    finally:
                        stop(proc, data)
                write_redis_tables(samples)
    return samples


def median(rows, field):
    return statistics.median(r[field] for r in rows)


def write_redis_tables(samples):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "kv.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["storage", "pipeline", "test", "system", "rounds", "rps", "p50_ms", "p99_ms",
                    "server_us_per_req", "steal_pct"])
        for (storage, pipeline, test, system), rows in sorted(samples.items()):
            w.writerow([storage, pipeline, test, system, len(rows), f"{median(rows, 'rps'):.0f}",
                        f"{median(rows, 'p50_ms'):.3f}", f"{median(rows, 'p99_ms'):.3f}",
                        f"{median(rows, 'server_us_per_req'):.2f}", f"{median(rows, 'steal_pct'):.1f}"])
    lines = ["# packetstore serve vs redis-server 7 (redis-benchmark)", "",
             "`bench/kv.sh` — redis-benchmark -d 1024 -c 50 -r 100000, server on CPU 1, client on CPU 0; "
             "medians of alternated rounds. `vs always` compares with Redis appendfsync always on the same "
             "storage: throughput ratio, and the ratio of Redis's server CPU per request to packetstore's "
             "(higher is better for packetstore).", "",
             "| storage | pipeline | test | system | req/s | p50 ms | p99 ms | server us/req | steal % | "
             "req/s vs always | CPU/req advantage vs always |",
             "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (storage, pipeline, test, system), rows in sorted(samples.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3] != "packetstore", kv[0][3])):
        base = samples.get((storage, pipeline, test, "redis-always"))
        ratio = cpu_ratio = ""
        if base:
            ratio = f"{median(rows, 'rps') / median(base, 'rps'):.2f}x"
            cpu_ratio = f"{median(base, 'server_us_per_req') / median(rows, 'server_us_per_req'):.2f}x"
        lines.append(f"| {storage} | {pipeline} | {test.upper()} | {system} | {median(rows, 'rps'):,.0f} | "
                     f"{median(rows, 'p50_ms'):.3f} | {median(rows, 'p99_ms'):.3f} | "
                     f"{median(rows, 'server_us_per_req'):.2f} | {median(rows, 'steal_pct'):.0f} | {ratio} | {cpu_ratio} |")
    with open(os.path.join(RESULTS, "kv.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def parse_wrk(text):
    m = re.search(r"^\s*99%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    p99 = float(m.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[m.group(2)] if m else float("nan")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    requests = int(re.search(r"(\d+) requests in", text).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {"rps": rate, "p99_ms": p99, "requests": requests, "non2xx": int(non2xx.group(1)) if non2xx else 0}


def run_ycsb(args, storage, directory):
    systems = ["packetstore", "packetstore-copy", "packetstore-epoll"]
    samples = {}
    for write_pct in [50, 5]:
        for rnd in range(args.rounds):
            for system in systems:
                proc, data = start(system, directory)
                try:
                    env = dict(os.environ, YCSB_WRITE_PCT=str(write_pct))
                    # Load every key once, then the measured mix.
                    subprocess.run(["taskset", "-c", "0", "wrk", "-t1", "-c10", "-d1s", "-s", YCSB_LUA,
                                    f"http://127.0.0.1:{PORT + 1}"], env=dict(env, YCSB_WRITE_PCT="100"),
                                   capture_output=True, check=True)
                    cpu0 = cpu_seconds(proc.pid)
                    out = subprocess.run(["taskset", "-c", "0", "wrk", "-t1", "-c50", f"-d{args.seconds}s",
                                          "--latency", "-s", YCSB_LUA, f"http://127.0.0.1:{PORT + 1}"],
                                         env=env, capture_output=True, text=True, check=True).stdout
                    cpu = cpu_seconds(proc.pid) - cpu0
                    result = parse_wrk(out)
                    result["server_us_per_req"] = cpu / max(1, result["requests"]) * 1e6
                    samples.setdefault((storage, write_pct, system), []).append(result)
                    print(f"ycsb {storage} {write_pct}% writes {system} round {rnd}: {result['rps']:.0f}/s "
                          f"p99 {result['p99_ms']:.2f} ms server {result['server_us_per_req']:.2f} us/req "
                          f"non-2xx {result['non2xx']}", flush=True)
                finally:
                    stop(proc, data)
    write_section_csv("kv-ycsb.csv", ["storage", "write_pct", "system"], samples, lambda key: list(key))
    with KvMdSection() as f:
        f.write("\n## YCSB-like mixes over HTTP (wrk, Zipf 0.99 over 1,000 keys, 1 KiB values)\n\n")
        f.write("| storage | writes | system | req/s | p99 ms | server us/req |\n|---|---:|---|---:|---:|---:|\n")
        for (st, pct, system), rows in sorted(samples.items()):
            f.write(f"| {st} | {pct}% | {system} | {median(rows, 'rps'):,.0f} | {median(rows, 'p99_ms'):.3f} | "
                    f"{median(rows, 'server_us_per_req'):.2f} |\n")
    return samples


def info_field(name):
    out = subprocess.run(["redis-cli", "-p", str(PORT), "info", "persistence"], capture_output=True, text=True).stdout
    m = re.search(rf"^{name}:(\S+)", out, re.M)
    return float(m.group(1)) if m else float("nan")


def run_compaction(args, storage, directory):
    """SETs over 100,000 keys overwrite values at random, so buffers keep
    a few live bytes: compaction relocating all the time vs never."""
    systems = ["packetstore-compaction-on", "packetstore-compaction-off"]
    samples = {}
    for pipeline in args.pipelines:
        for rnd in range(args.rounds):
            for system in systems:
                proc, data = start(system, directory)
                try:
                    result = measured_benchmark(proc, "set", args.requests * (4 if pipeline > 1 else 1), pipeline)
                    result["relocated"] = info_field("compaction_relocated_values")
                    result["waste_pct"] = info_field("compaction_waste_pct")
                    samples.setdefault((storage, pipeline, system), []).append(result)
                    print(f"compaction {storage} P{pipeline} {system} round {rnd}: {result['rps']:.0f}/s "
                          f"p99 {result['p99_ms']:.2f} ms server {result['server_us_per_req']:.2f} us/req "
                          f"relocated {result['relocated']:.0f} waste {result['waste_pct']:.0f}% "
                          f"steal {result['steal_pct']:.0f}%", flush=True)
                finally:
                    stop(proc, data)
    write_section_csv("kv-compaction.csv", ["storage", "pipeline", "compaction"], samples,
                      lambda key: [key[0], key[1], key[2].rsplit("-", 1)[1]])
    with KvMdSection() as f:
        f.write("\n## Compaction running (relocating continuously) vs off\n\n"
                "redis-benchmark -t set -d 1024 -c 50 -r 100000; `--compact-waste 0` vs `--compact-waste 2`.\n\n"
                "| storage | pipeline | compaction | req/s | p99 ms | server us/req | values relocated | waste % at end | "
                "steal % | req/s vs off |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
        for (st, pipeline, system), rows in sorted(samples.items()):
            base = samples[(st, pipeline, "packetstore-compaction-off")]
            f.write(f"| {st} | {pipeline} | {system.rsplit('-', 1)[1]} | {median(rows, 'rps'):,.0f} | "
                    f"{median(rows, 'p99_ms'):.3f} | {median(rows, 'server_us_per_req'):.2f} | "
                    f"{median(rows, 'relocated'):,.0f} | {median(rows, 'waste_pct'):.0f} | "
                    f"{median(rows, 'steal_pct'):.0f} | {median(rows, 'rps') / median(base, 'rps'):.2f}x |\n")
    return samples


def run_zero_copy_reads(args, storage, directory):
    """GETs of values of several sizes, sent from the pool buffers holding
    them (sendmsg over their extents) or copied into the reply: where the
    default `--zero-copy-min` comes from."""
    systems = ["packetstore-zc-always", "packetstore-zc-never"]
    samples = {}
    for size in args.read_sizes:
        for rnd in range(args.rounds):
            for system in systems:
                proc, data = start(system, directory)
                try:
                    n = args.requests * 4
                    subprocess.run(["taskset", "-c", "0", "redis-benchmark", "-p", str(PORT), "-t", "set", "-d",
                                    str(size), "-c", "50", "-r", "10000", "-n", "40000", "-P", "16", "-q"],
                                   capture_output=True, check=True)
                    cpu0 = cpu_seconds(proc.pid)
                    cmd = ["taskset", "-c", "0", "redis-benchmark", "-p", str(PORT), "-t", "get", "-d", str(size),
                           "-c", "50", "-r", "10000", "-n", str(n), "-P", "16", "--csv"]
                    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                    row = [line for line in out.splitlines() if line.startswith('"GET"')][-1]
                    fields = [f.strip('"') for f in row.split(",")]
                    result = {"rps": float(fields[1]), "p99_ms": float(fields[6]),
                              "server_us_per_req": (cpu_seconds(proc.pid) - cpu0) / n * 1e6}
                    samples.setdefault((size, system), []).append(result)
                    print(f"reads {size} B {system} round {rnd}: {result['rps']:.0f}/s "
                          f"server {result['server_us_per_req']:.2f} us/req", flush=True)
                finally:
                    stop(proc, data)
    with KvMdSection() as f:
        f.write("\n## GET replies: from the pool (zero copy) vs copied\n\n"
                "redis-benchmark -t get -c 50 -r 10000 -P 16 after loading the keys; `--zero-copy-min 0` vs "
                "`--zero-copy-min 1TiB`.\n\n"
                "| value bytes | replies | req/s | p99 ms | server us/req | zero copy vs copy (server CPU) |\n"
                "|---:|---|---:|---:|---:|---:|\n")
        for (size, system), rows in sorted(samples.items()):
            copy = samples[(size, "packetstore-zc-never")]
            f.write(f"| {size} | {'pool' if system.endswith('always') else 'copied'} | {median(rows, 'rps'):,.0f} | "
                    f"{median(rows, 'p99_ms'):.3f} | {median(rows, 'server_us_per_req'):.2f} | "
                    f"{median(copy, 'server_us_per_req') / median(rows, 'server_us_per_req'):.2f}x |\n")
    return samples


def run_page_sizes(args):
    """The emulated persistent memory's page size: packetstore with its pool
    on /dev/shm (4 KiB pages) vs on the huge-page tmpfs (2 MiB pages), SET
    and GET, alternated. Only when --shm-dir is another tmpfs than /dev/shm
    (kv.sh mounts one with huge=within_size)."""
    dirs = [("4KiB", "/dev/shm"), ("2MiB", args.shm_dir)]
    samples = {}
    for pipeline in args.pipelines:
        for rnd in range(args.rounds):
            for pages, directory in dirs:
                proc, data = start("packetstore", directory)
                try:
                    for test in ["set", "get"]:
                        result = measured_benchmark(proc, test, args.requests * (4 if pipeline > 1 else 1), pipeline)
                        samples.setdefault((pipeline, test, pages), []).append(result)
                        print(f"pages P{pipeline} {test} {pages} round {rnd}: {result['rps']:.0f}/s "
                              f"p99 {result['p99_ms']:.2f} ms server {result['server_us_per_req']:.2f} us/req "
                              f"steal {result['steal_pct']:.0f}%", flush=True)
                finally:
                    stop(proc, data)
    with KvMdSection() as f:
        f.write("\n## Emulated persistent memory: 4 KiB pages (/dev/shm) vs 2 MiB pages (tmpfs huge=within_size)\n\n"
                "redis-benchmark -d 1024 -c 50 -r 100000, packetstore only, the pool on each tmpfs in turn.\n\n"
                "| pipeline | test | pages | req/s | p99 ms | server us/req | steal % | req/s vs 4 KiB | "
                "CPU/req advantage |\n|---:|---|---|---:|---:|---:|---:|---:|---:|\n")
        for (pipeline, test, pages), rows in sorted(samples.items()):
            base = samples[(pipeline, test, "4KiB")]
            f.write(f"| {pipeline} | {test.upper()} | {pages} | {median(rows, 'rps'):,.0f} | "
                    f"{median(rows, 'p99_ms'):.3f} | {median(rows, 'server_us_per_req'):.2f} | "
                    f"{median(rows, 'steal_pct'):.0f} | {median(rows, 'rps') / median(base, 'rps'):.2f}x | "
                    f"{median(base, 'server_us_per_req') / median(rows, 'server_us_per_req'):.2f}x |\n")
    return samples


def write_section_csv(name, key_columns, samples, key_cells):
    """A section's medians, one row per sample key, then its plot."""
    with open(os.path.join(RESULTS, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(key_columns + ["rounds", "rps", "p99_ms", "server_us_per_req"])
        for key, rows in sorted(samples.items()):
            w.writerow(key_cells(key) + [len(rows), f"{median(rows, 'rps'):.0f}", f"{median(rows, 'p99_ms'):.3f}",
                                         f"{median(rows, 'server_us_per_req'):.2f}"])
    plot_sections()


def plot_sections():
    """kv-compaction.png and kv-ycsb.png from their CSV files (the latest
    run of each section): throughput and p99 side by side."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return
    specs = [("kv-compaction", ("storage", "pipeline"), "compaction", "P{pipeline}",
              "SET with compaction relocating all the time vs off (redis-benchmark -d 1024 -c 50 -r 100000)"),
             ("kv-ycsb", ("storage", "write_pct"), "system", "{write_pct}% writes",
              "YCSB-like mixes over HTTP (wrk -c 50, Zipf 0.99, 1 KiB values)")]
    for name, group_keys, series_key, label, title in specs:
        path = os.path.join(RESULTS, name + ".csv")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            rows = list(csv.DictReader(f))
        groups = sorted({tuple(r[k] for k in group_keys) for r in rows}, key=lambda g: (g[0], -int(g[1])))
        series = sorted({r[series_key] for r in rows})
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        width = 0.8 / len(series)
        for i, s in enumerate(series):
            xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
            pick = [next((r for r in rows if tuple(r[k] for k in group_keys) == g and r[series_key] == s), None)
                    for g in groups]
            axes[0].bar(xs, [float(r["rps"]) / 1e3 if r else 0 for r in pick], width, label=s)
            axes[1].bar(xs, [float(r["p99_ms"]) if r else 0 for r in pick], width, label=s)
        labels = [g[0] + "\n" + label.format(**dict(zip(group_keys, g))) for g in groups]
        for ax, sub in [(axes[0], "throughput (thousand req/s)"), (axes[1], "p99 latency (ms)")]:
            ax.set_xticks(range(len(groups)))
            ax.set_xticklabels(labels, fontsize=8)
            ax.set_title(sub)
            ax.legend(fontsize=8)
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        fig.savefig(os.path.join(RESULTS, name + ".png"), dpi=110)
        plt.close(fig)


def plot(samples):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return
    groups = sorted({(s, p, t) for (s, p, t, _) in samples})
    systems = ["packetstore", "redis-always", "redis-everysec", "redis-no"]
    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    width = 0.2
    for i, system in enumerate(systems):
        xs = [g + (i - 1.5) * width for g in range(len(groups))]
        rps = [median(samples[(s, p, t, system)], "rps") / 1e3 if (s, p, t, system) in samples else 0
               for (s, p, t) in groups]
        us = [median(samples[(s, p, t, system)], "server_us_per_req") if (s, p, t, system) in samples else 0
              for (s, p, t) in groups]
        axes[0].bar(xs, rps, width, label=system)
        axes[1].bar(xs, us, width, label=system)
    labels = [f"{s}\nP{p} {t.upper()}" for (s, p, t) in groups]
    for ax, title in [(axes[0], "throughput (thousand req/s)"), (axes[1], "server CPU per request (us)")]:
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.suptitle("packetstore serve vs redis-server 7 (redis-benchmark -d 1024 -c 50)")
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "kv.png"), dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200_000, help="requests per unpipelined run (x4 pipelined)")
    parser.add_argument("--seconds", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--pipelines", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--shm-dir", default="/dev/shm")
    parser.add_argument("--disk-dir", default=os.path.join(ROOT, "target"))
    parser.add_argument("--storages", nargs="+", default=["shm", "ext4"])
    parser.add_argument("--skip-ycsb", action="store_true")
    parser.add_argument("--sections", nargs="+", default=["redis", "pages", "compaction", "zero-copy", "ycsb"],
                        help="which comparisons to run (results of the others are left as they are)")
    parser.add_argument("--read-sizes", type=int, nargs="+", default=[1024, 4096, 16384, 65536])
    parser.add_argument("--quick", action="store_true", help="one round, fewer requests")
    parser.add_argument("--replot", action="store_true", help="only redraw the section plots from their CSV files")
    args = parser.parse_args()
    if args.replot:
        plot_sections()
        return
    if args.quick:
        args.rounds, args.requests, args.seconds = 1, 50_000, 3
    storages = [(s, args.shm_dir if s == "shm" else args.disk_dir) for s in args.storages]
    if "redis" in args.sections:
        samples = run_redis_rows(args, storages)
        plot(samples)
    if "pages" in args.sections and os.path.realpath(args.shm_dir) != "/dev/shm":
        run_page_sizes(args)
    if "compaction" in args.sections:
        run_compaction(args, "shm", args.shm_dir)
    if "zero-copy" in args.sections:
        run_zero_copy_reads(args, "shm", args.shm_dir)
    if "ycsb" in args.sections and not args.skip_ycsb:
        run_ycsb(args, "shm", args.shm_dir)


if __name__ == "__main__":
    main()
