#!/usr/bin/env python3
"""Tables and plot of bench/replication.sh's run (replicated durable SET:
a 3-node packetstore group, one packetstore node, Valkey 8 with a primary,
two replicas and WAITAOF 1 1).

Reads the run's CSV (one row per measurement), prints markdown: every row,
then the medians over the rounds per system and pipeline depth with the
issue's ratios (group throughput over Valkey's, p99 of each, the group's
server CPU per request over one node's), and draws a plot of throughput,
p99 and server CPU per request per system (the medians).

Usage: python3 bench/replication.py [CSV] [--png PNG]
  (defaults: bench/results/replication.csv, bench/results/replication.png)
"""
import argparse
import csv
import os
import statistics
import sys

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "results")
SYSTEMS = ["group", "single", "valkey", "valkey-pairs"]
LABELS = {
    "group": "packetstore, 3 nodes",
    "single": "packetstore, 1 node",
    "valkey": "Valkey 8, 1+2, SET then WAITAOF 1 1",
    "valkey-pairs": "Valkey 8, 1+2, SET+WAITAOF in one write",
}
FIELDS = ["requests_per_s", "p50_ms", "p99_ms", "max_ms", "failures", "server_cpu_us_per_req", "steal_pct"]


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for field in FIELDS:
            r[field] = float(r[field])
        r["pipeline"] = int(r["pipeline"])
    return rows


def medians(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["pipeline"], r["system"]), []).append(r)
    return {key: {f: statistics.median(r[f] for r in rs) for f in FIELDS} | {"n": len(rs)}
            for key, rs in groups.items()}


def tables(rows, m):
    out = ["| round | system | -P | requests/s | p50 ms | p99 ms | max ms | failures | server CPU us/request "
           "| steal % |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['round']} | {r['system']} | {r['pipeline']} | {r['requests_per_s']:.0f} | "
                   f"{r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['max_ms']:.1f} | {r['failures']:.0f} | "
                   f"{r['server_cpu_us_per_req']:.2f} | {r['steal_pct']:.1f} |")
    out += ["", "Medians over the rounds:", "",
            "| -P | system | requests/s | p50 ms | p99 ms | max ms | failures | server CPU us/request | rounds |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in sorted({p for p, _ in m}):
        for s in SYSTEMS:
            if (p, s) in m:
                x = m[(p, s)]
                out.append(f"| {p} | {s} | {x['requests_per_s']:.0f} | {x['p50_ms']:.3f} | {x['p99_ms']:.3f} | "
                           f"{x['max_ms']:.1f} | {x['failures']:.0f} | {x['server_cpu_us_per_req']:.2f} | {x['n']} |")
    out += ["", "Against the targets (medians): group throughput over Valkey's (>= 1.5 with a lower p99), "
            "group server CPU per request over one node's (<= 2):", "",
            "| -P | Valkey variant | group / Valkey req/s | p99 ms group vs Valkey | group / single CPU per request |",
            "|---:|---|---:|---|---:|"]
    for p in sorted({p for p, _ in m}):
        g, s = m.get((p, "group")), m.get((p, "single"))
        for v in ("valkey", "valkey-pairs"):
            if g and (p, v) in m:
                x = m[(p, v)]
                cpu = f"{g['server_cpu_us_per_req'] / s['server_cpu_us_per_req']:.2f}" if s else "-"
                out.append(f"| {p} | {v} | {g['requests_per_s'] / x['requests_per_s']:.2f} | "
                           f"{g['p99_ms']:.2f} vs {x['p99_ms']:.2f} | {cpu} |")
    return "\n".join(out)


def plot(m, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("replication.py: no matplotlib: no plot", file=sys.stderr)
        return
    pipelines = sorted({p for p, _ in m})
    systems = [s for s in SYSTEMS if any((p, s) in m for p in pipelines)]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    width = 0.8 / len(systems)
    panels = [("requests_per_s", 1e-3, "throughput (thousand durable SET/s)"),
              ("p99_ms", 1, "p99 latency (ms, log scale)"),
              ("server_cpu_us_per_req", 1, "server CPU per request (us, all processes)")]
    for ax, (field, scale, title) in zip(axes, panels):
        for i, s in enumerate(systems):
            xs = [g + (i - (len(systems) - 1) / 2) * width for g in range(len(pipelines))]
            ax.bar(xs, [m[(p, s)][field] * scale if (p, s) in m else 0 for p in pipelines], width, label=LABELS[s])
        ax.set_xticks(range(len(pipelines)))
        ax.set_xticklabels([f"-P {p}" for p in pipelines])
        ax.set_title(title, fontsize=10)
        if field == "p99_ms":
            ax.set_yscale("log")  # Valkey's 1 s replica acks would flatten the rest
    axes[0].legend(fontsize=7)
    fig.suptitle("Replicated durable SET (durable_set -c 50 -d 300 -r 100000; servers on CPU 1, client on CPU 0, "
                 "medians)", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="?", default=os.path.join(RESULTS, "replication.csv"))
    parser.add_argument("--png", default=os.path.join(RESULTS, "replication.png"))
    args = parser.parse_args()
    rows = load(args.csv)
    m = medians(rows)
    print(tables(rows, m))
    plot(m, args.png)


if __name__ == "__main__":
    main()
