#!/usr/bin/env python3
"""The write cache (issue 21, packetstore-preload): unmodified programs'
synchronous writes, side by side in one run, alternated rounds.

Systems:
  ext4          plain: the files on the project's ext4 disk, every fsync real
  cache-tmpfs   the preload library, pool on /dev/shm (EMULATED persistent
                memory: fast, not power-safe), files on ext4
  cache-ext4    the preload library, pool on the same ext4 disk (page domain:
                one fdatasync of the pool per write)
  tmpfs         the files on /dev/shm, no sync reaches a disk (the ceiling)

Workloads (each in every round, systems alternated):
  sqlite-WAL, sqlite-DELETE   sqlite3 inserting one row per transaction,
                              PRAGMA synchronous=FULL (transactions/s)
  fio-randwrite               fio 4 KiB random writes, psync, fsync=1 (IOPS,
                              p99 of write+fsync)
  fio-randread                fio 4 KiB random reads of a laid-out file
                              (IOPS, p99: reads are not cached; the thesis's
                              Fig. 3.9 found reads equal across systems)
Once after the rounds, a timeline (the thesis's Fig. 3.10): fio random
writes over a 2 GiB file for 20 s, IOPS per 500 ms, plain ext4 against the
cache with a 64 MiB and a 1 GiB pool (when the pool's buffers fill, writes
wait for the write-back: the disk-bound phase).

The cache runs with PACKETSTORE_CACHE_DIRSYNC=log (directory syncs the log
covers answered by the cache; without it sqlite3's DELETE mode makes one
real directory sync per transaction).
The program runs on CPU 0; the cache's write-back thread on CPU 1
(PACKETSTORE_CACHE_WRITEBACK_CPU, as a server beside its load). fio runs
with --invalidate=0 for every system (otherwise it drops the file's page
cache each pass over it, a cost unrelated to syncing). CPU per op is the
program's user+system time (its write-back thread included) per operation.

Writes bench/results/write-cache.csv, write-cache-timeline.csv,
write-cache.md and write-cache.png.

  python3 bench/write_cache.py [--rounds N] [--transactions N] [--fio-seconds S]
  python3 bench/write_cache.py --report     (tables and plot from the CSVs)
  python3 bench/write_cache.py --durability (sqlite3 WAL with the pool on
      ext4: durable at write vs durable at fsync vs plain ext4, alternated;
      prints only)
"""
import argparse
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "results")
LIB = os.path.join(ROOT, "target/release/libpacketstore_preload.so")
SYSTEMS = ["ext4", "cache-tmpfs", "cache-ext4", "tmpfs"]
WORKLOADS = ["sqlite-WAL", "sqlite-DELETE", "fio-randwrite", "fio-randread"]
LOAD_CPU, WRITE_BACK_CPU = "0", "1"


class Place:
    """Scratch directories: one on the project's disk, one on /dev/shm."""

    def __init__(self):
        self.disk = tempfile.mkdtemp(prefix="wcbench.", dir=os.path.join(ROOT, "target"))
        self.shm = tempfile.mkdtemp(prefix="wcbench.", dir="/dev/shm")

    def prepare(self, system, pool_size="256MiB"):
        """A fresh work directory for `system` and the environment to run in."""
        work = os.path.join(self.shm if system == "tmpfs" else self.disk, "work")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        env = dict(os.environ)
        if system.startswith("cache-"):
            pool = os.path.join(self.shm if system == "cache-tmpfs" else self.disk, "pool")
            if os.path.exists(pool):
                os.remove(pool)
            env.update(LD_PRELOAD=LIB, PACKETSTORE_CACHE_POOL=pool, PACKETSTORE_CACHE_PATHS=work + "/",
                       PACKETSTORE_CACHE_QUIET="1", PACKETSTORE_CACHE_WRITEBACK_CPU=WRITE_BACK_CPU,
                       PACKETSTORE_CACHE_DIRSYNC="log",
                       PACKETSTORE_CACHE_SIZE=pool_size)
        return work, env

    def remove(self):
        shutil.rmtree(self.disk, ignore_errors=True)
        shutil.rmtree(self.shm, ignore_errors=True)


def timed(command, env, stdin=None):
    """Runs `command`; (wall seconds, child CPU seconds, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(command, env=env, input=stdin, capture_output=True, check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def sqlite(place, system, mode, transactions):
    work, env = place.prepare(system)
    db = os.path.join(work, "db")
    # The schema, and the pool made, before the clock starts.
    subprocess.run(["sqlite3", db, f"PRAGMA journal_mode={mode}; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);"],
                   env=env, capture_output=True, check=True)
    sql = f"PRAGMA journal_mode={mode};\nPRAGMA synchronous=FULL;\n" + "".join(
        f"INSERT INTO t(v) VALUES('value number {i}');\n" for i in range(transactions))
    wall, cpu, _ = timed(["taskset", "-c", LOAD_CPU, "sqlite3", db], env, sql.encode())
    check = subprocess.run(["sqlite3", db, "PRAGMA integrity_check; SELECT count(*) FROM t;"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert check == ["ok", str(transactions)], f"sqlite3 {system} {mode}: {check}"
    return {"value": transactions / wall, "p99_us": "", "cpu_us_per_op": cpu / transactions * 1e6}


def fio(place, system, rw, seconds, size="64m", pool_size="256MiB", extra=()):
    work, env = place.prepare(system, pool_size)
    command = ["taskset", "-c", LOAD_CPU, "fio", "--name=w", "--thread", f"--directory={work}", "--ioengine=psync",
               f"--rw={rw}", "--bs=4k", f"--size={size}", "--fsync=1", "--invalidate=0", f"--runtime={seconds}",
               "--time_based", "--output-format=json", *extra]
    if rw == "randread":
        # Laid out (written) first, through the same system.
        subprocess.run(command[3:5] + [f"--directory={work}", "--rw=write", "--bs=1m", f"--size={size}",
                                        "--output-format=terse"], env=env, capture_output=True, check=True)
    wall, cpu, out = timed(command, env)
    job = json.loads(out)["jobs"][0]
    side = job["read" if rw == "randread" else "write"]
    return {"value": side["iops"], "p99_us": side["clat_ns"]["percentile"]["99.000000"] / 1000,
            "cpu_us_per_op": cpu / max(side["total_ios"], 1) * 1e6}


def durability(args):
    """sqlite3 WAL, pool on ext4: each write durable vs durable at fsync."""
    place = Place()
    try:
        for round_ in range(1, args.rounds + 1):
            for mode in ["write", "fsync", "plain ext4"]:
                work, env = place.prepare("ext4" if mode == "plain ext4" else "cache-ext4")
                if mode != "plain ext4":
                    env["PACKETSTORE_CACHE_DURABILITY"] = mode
                db = os.path.join(work, "db")
                subprocess.run(["sqlite3", db, "PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);"],
                               env=env, capture_output=True, check=True)
                sql = "PRAGMA journal_mode=WAL;\nPRAGMA synchronous=FULL;\n" + "".join(
                    f"INSERT INTO t(v) VALUES('v{i}');\n" for i in range(args.transactions))
                wall, _, _ = timed(["taskset", "-c", LOAD_CPU, "sqlite3", db], env, sql.encode())
                print(f"round {round_} {mode:11} {args.transactions / wall:,.0f} transactions/s", flush=True)
    finally:
        place.remove()


def steal_ticks():
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def run(args):
    os.makedirs(OUT, exist_ok=True)
    place = Place()
    path = os.path.join(OUT, "write-cache.csv")
    fields = ["round", "system", "workload", "value", "p99_us", "cpu_us_per_op", "steal_pct"]
    try:
        with open(path, "w", newline="") as f:
            out = csv.DictWriter(f, fields)
            out.writeheader()
            for round_ in range(1, args.rounds + 1):
                for workload in WORKLOADS:
                    for system in SYSTEMS:
                        steal, start = steal_ticks(), time.monotonic()
                        if workload.startswith("sqlite-"):
                            row = sqlite(place, system, workload.split("-")[1], args.transactions)
                        else:
                            row = fio(place, system, workload.split("-")[1], args.fio_seconds)
                        ticks = (steal_ticks() - steal) / os.sysconf("SC_CLK_TCK")
                        row.update(round=round_, system=system, workload=workload,
                                   steal_pct=round(100 * ticks / (2 * (time.monotonic() - start)), 2))
                        out.writerow(row)
                        f.flush()
                        print(f"round {round_} {workload:14} {system:12} {row['value']:>12,.0f}"
                              f"  cpu {row['cpu_us_per_op']:.1f} us/op", flush=True)
        timeline(place, args.timeline_seconds)
    finally:
        place.remove()


def timeline(place, seconds):
    rows = []
    for label, system, pool in [("ext4", "ext4", None), ("cache-tmpfs, 64 MiB pool", "cache-tmpfs", "64MiB"),
                                ("cache-tmpfs, 1 GiB pool", "cache-tmpfs", "1GiB")]:
        log = os.path.join(place.disk, "tl")
        fio(place, system, "randwrite", seconds, size="2g", pool_size=pool or "256MiB",
            extra=[f"--write_iops_log={log}", "--log_avg_msec=500"])
        with open(log + "_iops.1.log") as f:
            for line in f:
                ms, iops = line.split(",")[:2]
                rows.append({"system": label, "ms": int(ms), "iops": int(iops)})
        os.remove(log + "_iops.1.log")
        print(f"timeline {label}: done", flush=True)
    with open(os.path.join(OUT, "write-cache-timeline.csv"), "w", newline="") as f:
        out = csv.DictWriter(f, ["system", "ms", "iops"])
        out.writeheader()
        out.writerows(rows)


def report():
    with open(os.path.join(OUT, "write-cache.csv")) as f:
        rows = list(csv.DictReader(f))
    m, cpu, p99, steal = {}, {}, {}, []
    for r in rows:
        key = (r["workload"], r["system"])
        m.setdefault(key, []).append(float(r["value"]))
        cpu.setdefault(key, []).append(float(r["cpu_us_per_op"]))
        if r["p99_us"]:
            p99.setdefault(key, []).append(float(r["p99_us"]))
        steal.append(float(r["steal_pct"]))
    med = {k: statistics.median(v) for k, v in m.items()}
    rounds = max(int(r["round"]) for r in rows)
    lines = [f"Medians of {rounds} alternated rounds (`python3 bench/write_cache.py`); host CPU steal "
             f"{statistics.median(steal):.1f}% median, {max(steal):.1f}% max.", "",
             "| workload | unit | " + " | ".join(SYSTEMS) + " | cache-tmpfs / ext4 | cache-tmpfs / tmpfs | cache-ext4 / ext4 |",
             "|---|---|" + "---:|" * (len(SYSTEMS) + 3)]
    for w in WORKLOADS:
        v = {s: med.get((w, s)) for s in SYSTEMS}
        if None in v.values():
            continue
        unit = "transactions/s" if w.startswith("sqlite") else "IOPS"
        lines.append(f"| {w} | {unit} | " + " | ".join(f"{v[s]:,.0f}" for s in SYSTEMS) +
                     f" | {v['cache-tmpfs'] / v['ext4']:.2f}x | {v['cache-tmpfs'] / v['tmpfs']:.2f}x"
                     f" | {v['cache-ext4'] / v['ext4']:.2f}x |")
    lines += ["", "CPU per operation (us, the program's user+system time, write-back thread included), and fio's p99 (us):",
              "", "| workload | " + " | ".join(SYSTEMS) + " |", "|---|" + "---:|" * len(SYSTEMS)]
    for w in WORKLOADS:
        lines.append(f"| {w} CPU | " + " | ".join(
            f"{statistics.median(cpu[(w, s)]):.1f}" if (w, s) in cpu else "" for s in SYSTEMS) + " |")
        if any((w, s) in p99 for s in SYSTEMS):
            lines.append(f"| {w} p99 | " + " | ".join(
                f"{statistics.median(p99[(w, s)]):.1f}" if (w, s) in p99 else "" for s in SYSTEMS) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(OUT, "write-cache.md"), "w") as f:
        f.write("# Write cache (issue 21): generated by bench/write_cache.py\n\n" + text)
    plot(med)


def plot(med):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)")
        return
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    ax = axes[0]
    width = 0.2
    for i, s in enumerate(SYSTEMS):
        values = [med.get((w, s), 0) / max(med.get((w, "ext4"), 1), 1) for w in WORKLOADS]
        ax.bar([x + (i - 1.5) * width for x in range(len(WORKLOADS))], values, width,
               label=s + (" (EMULATED PM)" if s == "cache-tmpfs" else ""))
    ax.set_xticks(range(len(WORKLOADS)))
    ax.set_xticklabels(WORKLOADS)
    ax.set_yscale("log")
    ax.set_ylabel("throughput relative to plain ext4 (log scale)")
    ax.set_title("medians of alternated rounds")
    ax.legend(fontsize=8)
    path = os.path.join(OUT, "write-cache-timeline.csv")
    if os.path.exists(path):
        with open(path) as f:
            rows = list(csv.DictReader(f))
        ax = axes[1]
        for label in dict.fromkeys(r["system"] for r in rows):
            pts = [(int(r["ms"]) / 1000, int(r["iops"])) for r in rows if r["system"] == label]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label)
        ax.set_xlabel("seconds")
        ax.set_ylabel("fio 4 KiB random write + fsync, IOPS per 500 ms")
        ax.set_title("2 GiB file: cache phase, then disk-bound when the pool fills")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "write-cache.png"), dpi=110)
    print("wrote bench/results/write-cache.png")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transactions", type=int, default=10000)
    parser.add_argument("--fio-seconds", type=int, default=5)
    parser.add_argument("--timeline-seconds", type=int, default=20)
    parser.add_argument("--report", action="store_true", help="only the tables and plot, from the CSVs")
    parser.add_argument("--durability", action="store_true", help="durable at write vs at fsync (prints only)")
    args = parser.parse_args()
    if args.durability:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "packetstore-preload"], cwd=ROOT, check=True)
        return durability(args)
    if not args.report:
        for tool in ["sqlite3", "fio", "taskset"]:
            if shutil.which(tool) is None:
                raise SystemExit(f"needs {tool} (apt-get install sqlite3 fio)")
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "packetstore-preload"], cwd=ROOT, check=True)
        run(args)
    report()


if __name__ == "__main__":
    main()
