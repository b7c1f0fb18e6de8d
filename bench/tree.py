"""Plots bench/results/tree.csv and tree-node-size.csv (written by
bench/tree.sh): the tree against the DRAM BTreeMap per domain, reopening
against log replay, and the node-size sweep."""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main(out):
    out = Path(out)
    data = rows(out / "tree.csv")
    labels = [f"{r['domain'].split(' (')[0]}\n{r['value']}" for r in data]
    extra = out / "tree-page-extent.csv"
    if extra.exists() and not any(r["domain"].startswith("page") and "KiB" in r["value"] for r in data):
        # The page-domain 1 KiB cell, measured apart with fewer keys.
        for r in rows(extra):
            data.append(r)
            labels.append(f"{r['domain'].split(' (')[0]}\n{r['value']}\n(200K keys)")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 5))
    width = 0.2
    series = [
        ("insert, batch 64", lambda r: float(r["tree_insert64"]) / float(r["dram_insert"])),
        ("insert, batch 1", lambda r: float(r["tree_insert1"]) / float(r["dram_insert"])),
        ("get", lambda r: float(r["tree_get"]) / float(r["dram_get"])),
        ("scan", lambda r: float(r["tree_scan"]) / float(r["dram_scan"])),
    ]
    for i, (name, f) in enumerate(series):
        xs = [x + (i - 1.5) * width for x in range(len(data))]
        ax1.bar(xs, [f(r) for r in data], width, label=name)
    ax1.axhline(1.0, color="black", linewidth=0.8)
    ax1.axhline(0.25, color="red", linestyle="--", linewidth=0.8, label="target: batched insert 0.25x")
    ax1.set_yscale("log")
    ax1.set_xticks(range(len(data)), labels, fontsize=8)
    ax1.set_ylabel("persistent tree / DRAM BTreeMap (log scale)")
    ax1.set_title("1M random 8-byte keys: tree vs DRAM BTreeMap")
    ax1.legend(fontsize=8)
    xs = range(len(data))
    ax2.bar([x - 0.3 for x in xs], [float(r["open_first_get_ms"]) for r in data], 0.3, label="tree: open + first get")
    ax2.bar([x for x in xs], [float(r["walk_ms"]) for r in data], 0.3, label="tree: reclamation walk (background)")
    ax2.bar([x + 0.3 for x in xs], [float(r["replay_ms"]) for r in data], 0.3, label="log replay into BTreeMap")
    ax2.set_yscale("log")
    ax2.set_xticks(list(xs), labels, fontsize=8)
    ax2.set_ylabel("milliseconds (log scale)")
    ax2.set_title("Restart: open the tree vs replay a log")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "tree.png", dpi=120)
    sweep_path = out / "tree-node-size.csv"
    if sweep_path.exists():
        sweep = rows(sweep_path)
        fig, ax = plt.subplots(figsize=(8, 5))
        for value in sorted({r["value"] for r in sweep}):
            part = [r for r in sweep if r["value"] == value]
            sizes = [int(r["node_size"]) for r in part]
            for key, style, name in [
                ("tree_insert64", "-o", "insert batch 64"),
                ("tree_get", "-s", "get"),
            ]:
                ax.plot(sizes, [float(r[key]) for r in part], style, label=f"{value}: {name}")
        ax.set_xscale("log", base=2)
        ax.set_xticks([512, 1024, 2048, 4096], ["512", "1024", "2048", "4096"])
        ax.set_xlabel("node size, bytes")
        ax.set_ylabel("operations per second")
        ax.set_title("Node size sweep (emulated PM, 1M keys)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "tree-node-size.png", dpi=120)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
