#!/usr/bin/env python3
"""The paper's WAL benchmark (PASTE, NSDI 2018, Figure 5), side by side.

Runs `packetstore wal` pinned to one CPU and wrk pinned to the other, for
each persistence mode, body size and connection count, alternating the
modes (A B C D, A B C D, ...) and reporting medians. For every run it also
reports the server's CPU time per request (utime + stime from /proc over
the run, divided by requests), because one wrk core saturates before the
server does. Writes bench/results/wal.md, wal.csv and PNG plots.

Usage: bench/wal.sh [--quick]   (see --help)
"""

import argparse
import csv
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "packetstore")
LUA = os.path.join(ROOT, "bench", "post.lua")
RESULTS = os.path.join(ROOT, "bench", "results")
TICKS = os.sysconf("SC_CLK_TCK")

MODES = {
    "off": ["--io", "uring", "--persist", "off"],
    "zerocopy": ["--io", "uring", "--persist", "zerocopy"],
    "zerocopy whole-buffers": ["--io", "uring", "--persist", "zerocopy", "--whole-buffers"],
    "uring+copy": ["--io", "uring", "--persist", "copy"],
    "epoll+copy": ["--io", "epoll", "--persist", "copy", "--commit", "per-request"],
    "epoll+copy per-turn": ["--io", "epoll", "--persist", "copy", "--commit", "per-turn"],
}


def server_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def cpu_steal_ticks():
    """(steal, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[7], sum(fields)


def parse_wrk(text):
    def latency_us(label):
        m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if not m:
            return float("nan")
        scale = {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
        value = float(m.group(1)) * scale
        # wrk prints 0 for high percentiles of pipelined runs (a wrk bug).
        return value if value > 0 else float("nan")

    requests = int(re.search(r"(\d+) requests in", text).group(1))
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errors = re.search(r"Socket errors: (.*)", text)
    return {
        "requests": requests,
        "rps": rate,
        "p50_us": latency_us("50"),
        "p99_us": latency_us("99"),
        "non2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": errors.group(1).strip() if errors else "",
    }


def wait_for_free_port(port, timeout_s=20):
    """A killed io_uring server's listening socket outlives the process for a
    moment (the kernel tears the ring down asynchronously): wait it out."""
    import socket
    deadline = time.time() + timeout_s
    while True:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
        finally:
            probe.close()


def run_one(mode, size, conns, args, pool_dir, extra=(), pipeline=1):
    wait_for_free_port(args.port)
    pool = os.path.join(pool_dir, f"bench-{os.getpid()}.pool")
    if os.path.exists(pool):
        os.remove(pool)
    command = ["taskset", "-c", "1", BINARY, "wal", "--pool", pool, "--pool-size", args.pool_size,
               "--log-size", "1GiB", "--listen", f"127.0.0.1:{args.port}"] + MODES[mode] + list(extra)
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = []
        for line in server.stdout:
            seen.append(line)
            if line.startswith("listening on"):
                break
        else:
            raise RuntimeError(f"server did not start: {' '.join(command)}\n{''.join(seen)}")
        env = dict(os.environ, BODY_SIZE=str(size), PIPELINE=str(pipeline))
        threads = min(conns, 1) if conns else 1
        cpu_before = server_cpu_seconds(server.pid)
        steal_before, total_before = cpu_steal_ticks()
        wrk = subprocess.run(
            ["taskset", "-c", "0", "wrk", f"-t{threads}", f"-c{conns}", f"-d{args.seconds}s", "--latency",
             "-s", LUA, f"http://127.0.0.1:{args.port}/"],
            env=env, capture_output=True, text=True, timeout=args.seconds + 60)
        cpu = server_cpu_seconds(server.pid) - cpu_before
        steal_after, total_after = cpu_steal_ticks()
        result = parse_wrk(wrk.stdout)
        result["steal_pct"] = 100.0 * (steal_after - steal_before) / max(total_after - total_before, 1)
        # wrk parses and counts every response, pipelined or not.
        result["server_us_per_req"] = cpu * 1e6 / max(result["requests"], 1)
        return result
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
        if os.path.exists(pool):
            os.remove(pool)


def series(name, modes, sizes, conns_list, args, pool_dir, extra=(), pipeline=1):
    """Alternates the modes for each (size, conns); returns rows of medians."""
    rows = []
    for size in sizes:
        for conns in conns_list:
            samples = {mode: [] for mode in modes}
            for _ in range(args.rounds):
                for mode in modes:
                    samples[mode].append(run_one(mode, size, conns, args, pool_dir, extra, pipeline))
            for mode in modes:
                runs = samples[mode]
                row = {
                    "series": name, "mode": mode, "body": size, "conns": conns, "pipeline": pipeline,
                    "rps": statistics.median(r["rps"] for r in runs),
                    "p50_us": statistics.median(r["p50_us"] for r in runs),
                    "p99_us": statistics.median(r["p99_us"] for r in runs),
                    "server_us_per_req": statistics.median(r["server_us_per_req"] for r in runs),
                    "non2xx": sum(r["non2xx"] for r in runs),
                    "steal_pct": statistics.median(r["steal_pct"] for r in runs),
                    "rounds": len(runs),
                }
                rows.append(row)
                print(f"{name:<14} {mode:<20} body {size:>5} conns {conns:>3}: {row['rps']:>10.0f} req/s "
                      f"p50 {row['p50_us']:>8.1f} us p99 {row['p99_us']:>8.1f} us "
                      f"server {row['server_us_per_req']:.2f} us/req non-2xx {row['non2xx']} steal {row['steal_pct']:.0f}%",
                      flush=True)
    return rows


def find(rows, series_name, mode, body, conns):
    for row in rows:
        if (row["series"], row["mode"], row["body"], row["conns"]) == (series_name, mode, body, conns):
            return row
    return None


def targets(rows):
    """The issue's targets, as ratios from this run (1 KiB, 50 connections)."""
    out = []

    def check(label, value, want, text):
        if value is None:
            out.append(f"| {label} | not measured | {want} | |")
        else:
            out.append(f"| {label} | {value:.2f} | {want} | {'met' if text(value) else 'MISSED'} |")

    zc, off, copy = (find(rows, "pm", m, 1024, 50) for m in ("zerocopy", "off", "uring+copy"))
    check("zerocopy / off throughput", zc and off and zc["rps"] / off["rps"], ">= 0.95", lambda v: v >= 0.95)
    if zc and off and copy:
        zc_cost = zc["server_us_per_req"] - off["server_us_per_req"]
        copy_cost = copy["server_us_per_req"] - off["server_us_per_req"]
        check("zerocopy persistence cost / copy's (server us/req above off)",
              zc_cost / copy_cost if copy_cost > 0 else None, "<= 0.33", lambda v: v <= 1 / 3)
    zc, ep = (find(rows, "pm pipelined", m, 1024, 50) for m in ("zerocopy", "epoll+copy"))
    check("pipelined: zerocopy / epoll+copy", zc and ep and zc["rps"] / ep["rps"], ">= 1.5", lambda v: v >= 1.5)
    zc, ep = (find(rows, "pm 10us", m, 1024, 50) for m in ("zerocopy", "epoll+copy"))
    check("10 us fence: zerocopy / epoll+copy", zc and ep and zc["rps"] / ep["rps"], ">= 5", lambda v: v >= 5)
    zc, ep = (find(rows, "pm 10us pipelined", m, 1024, 50) for m in ("zerocopy", "epoll+copy"))
    check("10 us fence, pipelined: zerocopy / epoll+copy", zc and ep and zc["rps"] / ep["rps"], ">= 5",
          lambda v: v >= 5)
    zc, ep = (find(rows, "ext4", m, 1024, 50) for m in ("zerocopy", "epoll+copy per-turn"))
    check("ext4: zerocopy / epoll+copy per-turn", zc and ep and zc["rps"] / ep["rps"], ">= 1.3", lambda v: v >= 1.3)
    return out


def plot(rows, path_prefix):
    try:
        import matplotlib
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "matplotlib"], check=True)
        import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for series_name in sorted({r["series"] for r in rows}):
        mine = [r for r in rows if r["series"] == series_name]
        bodies = sorted({r["body"] for r in mine})
        fig, axes = plt.subplots(2, len(bodies), figsize=(4.5 * len(bodies), 7), squeeze=False)
        for column, body in enumerate(bodies):
            for mode in dict.fromkeys(r["mode"] for r in mine):
                points = sorted((r["conns"], r) for r in mine if r["mode"] == mode and r["body"] == body)
                if not points:
                    continue
                xs = [c for c, _ in points]
                axes[0][column].plot(xs, [r["rps"] / 1e3 for _, r in points], marker="o", label=mode)
                axes[1][column].plot(xs, [r["p99_us"] for _, r in points], marker="o", label=mode)
            axes[0][column].set_title(f"{series_name}: {body} B body")
            axes[0][column].set_ylabel("throughput (K req/s)")
            axes[1][column].set_ylabel("p99 latency (us)")
            for row_axes in axes:
                row_axes[column].set_xlabel("concurrent connections")
                row_axes[column].grid(alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        name = f"{path_prefix}-{series_name.replace(' ', '-')}.png"
        fig.savefig(name, dpi=90)
        plt.close(fig)
        print(f"wrote {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 round of 2 s, fewer cells (a smoke run)")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18090)
    parser.add_argument("--pool-size", default="6GiB")
    parser.add_argument("--disk-dir", default=os.path.join(ROOT, "packetstore-data", "bench"))
    parser.add_argument("--only", default="", help="comma-separated series: pm,pm-10us,ext4,pipelined")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install wrk")
    sizes, conns = [64, 1024, 2560], [1, 10, 50, 100]
    if args.quick:
        args.seconds, args.rounds, sizes, conns = 2, 1, [1024], [1, 50]
    os.makedirs(args.disk_dir, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    want = lambda name: not only or name in only
    started = time.time()
    rows = []
    four = ["off", "zerocopy", "uring+copy", "epoll+copy"]
    if want("pm"):
        rows += series("pm", four, sizes, conns, args, "/dev/shm")
    if want("pipelined"):
        rows += series("pm pipelined", four, [1024], [50], args, "/dev/shm", pipeline=16)
    if want("pm-10us"):
        rows += series("pm 10us", four, [1024], conns, args, "/dev/shm", extra=["--fence-delay-ns", "10000"])
        rows += series("pm 10us pipelined", four, [1024], [50], args, "/dev/shm",
                       extra=["--fence-delay-ns", "10000"], pipeline=16)
    if want("ext4"):
        rows += series("ext4", ["zerocopy", "zerocopy whole-buffers", "epoll+copy per-turn", "epoll+copy"], [1024],
                       conns, args, args.disk_dir)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "wal.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        "# WAL server benchmark",
        "",
        f"Command: `bench/wal.sh {' '.join(sys.argv[1:])}` ({time.time() - started:.0f} s). "
        f"Server pinned to CPU 1, wrk (1 thread) to CPU 0; {args.rounds} round(s) of {args.seconds} s per cell, "
        "modes alternated within each round; medians. `server us/req` is the server's utime+stime over the "
        "run divided by requests. Pools: /dev/shm (emulated PM, cache-line domain) unless the series is ext4 "
        "(page domain, fdatasync). Pipelined: 16 requests per write.",
        "",
        "| series | mode | body B | conns | req/s | p50 us | p99 us | server us/req | non-2xx | steal % |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['series']} | {r['mode']} | {r['body']} | {r['conns']} | {r['rps']:.0f} | "
                     f"{r['p50_us']:.1f} | {r['p99_us']:.1f} | {r['server_us_per_req']:.2f} | {r['non2xx']} | "
                     f"{r['steal_pct']:.0f} |")
    lines += ["", "## Targets (1 KiB body, 50 connections)", "", "| ratio | measured | target | |", "|---|---:|---|---|"]
    lines += targets(rows)
    with open(os.path.join(RESULTS, "wal.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    plot(rows, os.path.join(RESULTS, "wal"))


if __name__ == "__main__":
    main()
