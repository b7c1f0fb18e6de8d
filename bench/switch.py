#!/usr/bin/env python3
"""The packet-logging switch through veth (issue 22; PASTE Fig. 11).

Two hosts in network namespaces, each wired by a veth pair to a port of
`packetstore switch` (AF_XDP copy mode: one kernel copy per frame stands in
for a NIC's DMA). For each frame size (64 B, 1500 B) and each logging mode
(off, swap: logged in the buffer it landed in, copy: copied and flushed
into the log, the paper's baseline), in alternated rounds:

- throughput: `packetstore bench switch-load` sends FRAMES raw frames as
  fast as it can from h1 to h2; frames per second at the receiver, loss,
  and the switch's CPU time per frame (/proc, utime + stime);
- latency under bursts: bursts of 1, 8, 32 and 64 back-to-back frames, one
  burst at a time; median and p99 one-way latency (send to receive,
  CLOCK_MONOTONIC, shared by the namespaces).

And the engine alone (`packetstore bench switch-engine`): the switch's
loop over in-memory ports on one core (a frame is copied into its buffer
as a NIC's DMA would; no kernel network path), 64-frame batches, the same
three modes: frames per second and ns per frame, where the logging cost
is not hidden behind the kernel's.

The switch runs on CPU 1 (`taskset -c 1`; it sleeps in poll(2) when idle
for the throughput runs, whose CPU time per frame is then its work, and
busy-polls, `--busy-poll`, for the latency runs, so that no wake-up is in
them), the generator on CPU 0. Writes
bench/results/switch.{csv,md,png} and switch-engine.csv. Needs root.

    python3 bench/switch.py [--rounds 3] [--frames 100000]
"""
import argparse
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/packetstore")
RESULTS = os.path.join(ROOT, "bench/results")
PREFIX = "psbench"
POOL = "/dev/shm/packetstore-bench-switch.pool"
MODES = ["off", "swap", "copy"]
SIZES = [64, 1500]
BURSTS = [1, 8, 32, 64]


def sh(*args, check=True, capture=False):
    result = subprocess.run(args, check=check, text=True, capture_output=capture)
    return result.stdout if capture else None


def ns(name):
    return f"{PREFIX}-{name}"


def net_up():
    net_down()
    sh("ip", "netns", "add", ns("sw"))
    for n in (1, 2):
        host = ns(f"h{n}")
        sh("ip", "netns", "add", host)
        sh("ip", "link", "add", f"p{n}", "netns", ns("sw"), "type", "veth", "peer", "name", "eth0", "netns", host)
        sh("ip", "-n", host, "addr", "add", f"10.12.0.{n}/24", "dev", "eth0")
        sh("ip", "-n", host, "link", "set", "eth0", "up")
        sh("ip", "-n", ns("sw"), "link", "set", f"p{n}", "up")
        sh("ip", "netns", "exec", host, "ethtool", "-K", "eth0", "tx", "off", capture=True)
        sh("ip", "netns", "exec", host, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")


def net_down():
    for name in ("sw", "h1", "h2"):
        sh("ip", "netns", "del", ns(name), check=False, capture=True)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_switch(mode, busy_poll):
    if os.path.exists(POOL):
        os.remove(POOL)
    process = subprocess.Popen(
        ["ip", "netns", "exec", ns("sw"), "taskset", "-c", "1", BIN, "switch", "--pool", POOL,
         "--port", "p1", "--port", "p2", "--datapath", "xdp", "--log", mode,
         "--pool-size", "1GiB", "--log-size", "64MiB"] + (["--busy-poll"] if busy_poll else []),
        stdout=subprocess.PIPE, text=True)
    banner = process.stdout.readline()
    if not banner.startswith("switch on"):
        raise SystemExit(f"the switch did not start: {banner!r}")
    # `ip netns exec` and taskset exec: the pid is the switch's.
    sh("ip", "netns", "exec", ns("h2"), "ping", "-c", "1", "-W", "1", "10.12.0.1", capture=True)
    return process, banner


def stop_switch(process):
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=10)


def load(run, size, frames, burst, mac):
    out = sh("taskset", "-c", "0", BIN, "bench", "switch-load", "--run", run, "--tx-netns", ns("h1"),
             "--rx-netns", ns("h2"), "--destination", mac, "--size", str(size), "--frames", str(frames),
             "--burst", str(burst), capture=True)
    return json.loads(out.strip().splitlines()[-1])


def one_round(mode, size, frames, bursts, mac):
    process, banner = start_switch(mode, busy_poll=False)
    try:
        before = cpu_seconds(process.pid)
        result = load("throughput", size, frames, 0, mac)
        cpu = cpu_seconds(process.pid) - before
        rows = [{
            "mode": mode, "size": size, "run": "throughput", "burst": 0, "fps": result["fps"],
            "loss": 1 - result["received"] / result["sent"],
            "cpu_us_per_frame": cpu * 1e6 / max(result["received"], 1),
            "p50_us": result["latency_p50_us"], "p99_us": result["latency_p99_us"],
        }]
    finally:
        stop_switch(process)
    process, banner = start_switch(mode, busy_poll=True)
    try:
        for burst in BURSTS:
            result = load("bursts", size, bursts, burst, mac)
            rows.append({
                "mode": mode, "size": size, "run": "bursts", "burst": burst, "fps": 0,
                "loss": 1 - result["received"] / result["sent"], "cpu_us_per_frame": 0,
                "p50_us": result["latency_p50_us"], "p99_us": result["latency_p99_us"],
            })
        return rows, banner
    finally:
        stop_switch(process)


def engine_round(mode, size, frames):
    out = sh("taskset", "-c", "1", BIN, "bench", "switch-engine", "--log", mode, "--size", str(size),
             "--frames", str(frames), capture=True)
    result = json.loads(out.strip().splitlines()[-1])
    return {"mode": mode, "size": size, "fps": result["fps"], "ns_per_frame": result["ns_per_frame"]}


def engine_report(rows, args):
    med = {}
    for row in rows:
        med.setdefault((row["mode"], row["size"]), []).append(row["fps"])
    med = {k: statistics.median(v) for k, v in med.items()}
    lines = [
        "## The engine alone (in-memory ports, one core)",
        "",
        f"`packetstore bench switch-engine --log MODE --size SIZE --frames {args.engine_frames}`, "
        f"medians of {args.rounds} alternated rounds.",
        "",
        "| size | off fps | swap fps | copy fps | swap/copy | ns/frame off | swap | copy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size in SIZES:
        f = {m: med[(m, size)] for m in MODES}
        lines.append(f"| {size} B | {f['off']:,.0f} | {f['swap']:,.0f} | {f['copy']:,.0f} | "
                     f"{f['swap'] / f['copy']:.3f} | {1e9 / f['off']:.0f} | {1e9 / f['swap']:.0f} | "
                     f"{1e9 / f['copy']:.0f} |")
    return "\n".join(lines) + "\n"


def medians(rows):
    groups = {}
    for row in rows:
        groups.setdefault((row["mode"], row["size"], row["run"], row["burst"]), []).append(row)
    out = {}
    for key, group in groups.items():
        out[key] = {k: statistics.median(r[k] for r in group) for k in ("fps", "loss", "cpu_us_per_frame", "p50_us", "p99_us")}
    return out


def report(med, args, banner):
    lines = [
        "# The packet-logging switch through veth (AF_XDP copy mode)",
        "",
        f"`python3 bench/switch.py --rounds {args.rounds} --frames {args.frames} --bursts {args.bursts}`, "
        f"{time.strftime('%Y-%m-%d')}; switch on CPU 1 (busy-polling for the latency runs), generator on CPU 0; medians of {args.rounds} "
        "alternated rounds (off, swap, copy, off, swap, copy, ...). Pool on /dev/shm (emulated persistent "
        "memory: flushes are clwb, fences sfence, on DRAM).",
        "",
        f"Switch: `{banner.strip()}`",
        "",
        "## Throughput (frames per second at the receiver) and the switch's CPU per frame",
        "",
        "| size | off fps | swap fps | copy fps | swap/copy | swap/off | CPU µs/frame off | swap | copy | loss swap | loss copy |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in SIZES:
        t = {m: med[(m, size, "throughput", 0)] for m in MODES}
        lines.append(
            f"| {size} B | {t['off']['fps']:,.0f} | {t['swap']['fps']:,.0f} | {t['copy']['fps']:,.0f} | "
            f"{t['swap']['fps'] / t['copy']['fps']:.3f} | {t['swap']['fps'] / t['off']['fps']:.3f} | "
            f"{t['off']['cpu_us_per_frame']:.2f} | {t['swap']['cpu_us_per_frame']:.2f} | "
            f"{t['copy']['cpu_us_per_frame']:.2f} | {t['swap']['loss']:.2%} | {t['copy']['loss']:.2%} |")
    lines += [
        "",
        "## One-way latency under bursts (µs, median / p99)",
        "",
        "| size | burst | off | swap | copy | swap/copy (median) |",
        "|---|---|---|---|---|---|",
    ]
    for size in SIZES:
        for burst in BURSTS:
            b = {m: med[(m, size, "bursts", burst)] for m in MODES}
            cells = " | ".join(f"{b[m]['p50_us']:.1f} / {b[m]['p99_us']:.1f}" for m in MODES)
            lines.append(f"| {size} B | {burst} | {cells} | {b['swap']['p50_us'] / b['copy']['p50_us']:.3f} |")
    return "\n".join(lines) + "\n"


def plot(med):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)")
        return
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    width = 0.25
    for i, mode in enumerate(MODES):
        axes[0].bar([s + (i - 1) * width for s in range(len(SIZES))],
                    [med[(mode, size, "throughput", 0)]["fps"] / 1e3 for size in SIZES], width, label=mode)
    axes[0].set_xticks(range(len(SIZES)), [f"{s} B" for s in SIZES])
    axes[0].set_ylabel("thousand frames/s")
    axes[0].set_title("Throughput")
    axes[0].legend()
    for k, size in enumerate(SIZES):
        for mode in MODES:
            axes[1 + k].plot(BURSTS, [med[(mode, size, "bursts", b)]["p50_us"] for b in BURSTS], marker="o", label=mode)
        axes[1 + k].set_xlabel("burst (frames)")
        axes[1 + k].set_ylabel("median one-way latency (µs)")
        axes[1 + k].set_title(f"Latency under bursts, {size} B")
        axes[1 + k].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "switch.png"), dpi=110)


def from_csv(path):
    rows = []
    with open(path) as f:
        for row in csv.DictReader(f):
            for k in ("size", "burst", "round"):
                row[k] = int(row[k])
            for k in ("fps", "loss", "cpu_us_per_frame", "p50_us", "p99_us"):
                row[k] = float(row[k])
            rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--report", action="store_true", help="redo the table and plot from switch.csv")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--bursts", type=int, default=300, help="bursts per latency run")
    parser.add_argument("--engine-frames", type=int, default=2_000_000)
    args = parser.parse_args()
    if args.report:
        med = medians(from_csv(os.path.join(RESULTS, "switch.csv")))
        plot(med)
        return
    if os.geteuid() != 0:
        raise SystemExit("bench/switch.py needs root (network namespaces, AF_XDP)")
    if not os.path.exists(BIN):
        sh("cargo", "build", "--release", "-p", "packetstore-cli")
    engine = []
    for r in range(args.rounds):
        for size in SIZES:
            for mode in MODES:
                row = engine_round(mode, size, args.engine_frames)
                row["round"] = r
                engine.append(row)
                print(f"engine round {r} {size} B {mode}: {row['fps']:,.0f} fps", flush=True)
    net_up()
    rows = []
    banner = ""
    try:
        mac = sh("ip", "netns", "exec", ns("h2"), "cat", "/sys/class/net/eth0/address", capture=True).strip()
        for r in range(args.rounds):
            for size in SIZES:
                for mode in MODES:
                    got, banner = one_round(mode, size, args.frames, args.bursts, mac)
                    for row in got:
                        row["round"] = r
                    rows.extend(got)
                    t = got[0]
                    print(f"round {r} {size} B {mode}: {t['fps']:,.0f} fps, {t['cpu_us_per_frame']:.2f} µs CPU/frame, "
                          f"burst 32 median {got[3]['p50_us']:.1f} µs", flush=True)
    finally:
        net_down()
        if os.path.exists(POOL):
            os.remove(POOL)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "switch.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    with open(os.path.join(RESULTS, "switch-engine.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(engine[0].keys()))
        writer.writeheader()
        writer.writerows(engine)
    med = medians(rows)
    text = report(med, args, banner) + "\n" + engine_report(engine, args)
    with open(os.path.join(RESULTS, "switch.md"), "w") as f:
        f.write(text)
    plot(med)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
