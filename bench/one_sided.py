#!/usr/bin/env python3
"""Tables and plot of bench/one_sided.sh's run: GET one-sided (from the
server's pool, packetstore::reader) against GET over the Redis protocol and
over HTTP, per value size, read-only and under YCSB-B.

Prints markdown: the medians over the rounds per size, mix and mode, then
the issue's ratios (one-sided p50 against RESP's: target >= 10x lower;
reads per second on one reader core against RESP's: target >= 5x; the share
of one-sided reads that fell back under YCSB-B: target < 1%), and draws
p50 and throughput per size.

Usage: python3 bench/one_sided.py [CSV] [--png PNG]
"""
import argparse
import csv
import os
import statistics

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "results")
FIELDS = ["reads_per_s", "p50_us", "p99_us", "fallback_pct", "server_cpu_us_per_op", "retries", "reads"]
MODES = ["one-sided", "resp", "http"]


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for field in FIELDS:
            r[field] = float(r[field])
        r["size"] = int(r["size"])
    return rows


def medians(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["size"], r["mix"], r["mode"]), []).append(r)
    return {key: {f: statistics.median(r[f] for r in rs) for f in FIELDS} | {"n": len(rs)}
            for key, rs in groups.items()}


def size_name(size):
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} B"


def report(m):
    sizes = sorted({k[0] for k in m})
    mixes = [x for x in ["read-only", "ycsb-b", "writer"] if any(k[1] == x for k in m)]
    print("| value | mix | mode | reads/s (one core) | p50 us | p99 us | fell back | server CPU us/op | rounds |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        for mix in mixes:
            for mode in MODES:
                v = m.get((size, mix, mode))
                if v:
                    print(f"| {size_name(size)} | {mix} | {mode} | {v['reads_per_s']:,.0f} | {v['p50_us']:.2f} | "
                          f"{v['p99_us']:.2f} | {v['fallback_pct']:.3f}% | {v['server_cpu_us_per_op']:.2f} | {v['n']} |")
    print()
    print("| value | mix | p50: RESP / one-sided (target >= 10) | reads/s: one-sided / RESP (target >= 5) "
          "| p50: HTTP / one-sided | one-sided fell back (target < 1% under YCSB-B) |")
    print("|---|---|---:|---:|---:|---:|")
    for size in sizes:
        for mix in mixes:
            o, r, h = (m.get((size, mix, mode)) for mode in MODES)
            if o and r and h:
                print(f"| {size_name(size)} | {mix} | {r['p50_us'] / o['p50_us']:.1f}x | "
                      f"{o['reads_per_s'] / r['reads_per_s']:.1f}x | {h['p50_us'] / o['p50_us']:.1f}x | "
                      f"{o['fallback_pct']:.3f}% |")


def plot(m, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib missing: no plot)")
        return
    sizes = sorted({k[0] for k in m})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for mix, style in [("read-only", "-"), ("ycsb-b", "--"), ("writer", ":")]:
        for mode, color in zip(MODES, ["tab:green", "tab:blue", "tab:orange"]):
            points = [(s, m[(s, mix, mode)]) for s in sizes if (s, mix, mode) in m]
            if not points:
                continue
            xs = [size_name(s) for s, _ in points]
            axes[0].plot(xs, [v["p50_us"] for _, v in points], style, color=color, marker="o", label=f"{mode}, {mix}")
            axes[1].plot(xs, [v["reads_per_s"] for _, v in points], style, color=color, marker="o",
                         label=f"{mode}, {mix}")
    axes[0].set_ylabel("GET p50 (us)")
    axes[0].set_yscale("log")
    axes[1].set_ylabel("GETs per second, one reader core")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xlabel("value size")
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.suptitle("One-sided reads vs RESP and HTTP GET (packetstore, /dev/shm, reader on CPU 0, server on CPU 1)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv", nargs="?", default=os.path.join(RESULTS, "one-sided.csv"))
    parser.add_argument("--png", default=os.path.join(RESULTS, "one-sided.png"))
    args = parser.parse_args()
    m = medians(load(args.csv))
    report(m)
    plot(m, args.png)


if __name__ == "__main__":
    main()
