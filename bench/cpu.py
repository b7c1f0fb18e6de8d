#!/usr/bin/env python3
"""Issue 36's table: server CPU per request, packetstore against Redis 7
without persistence (the in-memory ceiling), Redis 7 with appendfsync
always, and kevy 3.17 with one shard, for every command family of the
issue, on tmpfs and on ext4, unpipelined and at -P 16.

Workloads (redis-benchmark -c 50 -r 100000 unless said; values 1 KiB
unless said; keys, fields and members are redis-benchmark's
`__rand_int__`, 12 digits):

  set-1k set-16b     SET key:N (-d 1024 / -d 16)
  get-1k get-16b     GET key:N, every key present (filled first)
  incr               INCR counter:N
  lpush rpop         LPUSH mylist, then RPOP mylist as many times
  sadd spop          SADD myset element:N, then SPOP myset (the set is
                     filled first with more members than there are pops)
  hset hget          HSET myhash element:N; HGET of a filled hash
  zadd-new           ZADD znew N member:N, -r 10^9 (new members)
  zadd-old           ZADD zold N member:N over a filled zold (new scores)
  zrange             ZRANGE zold 0 9
  mset mget          MSET / MGET of 10 keys key:N
  xadd               XADD mystream * field N

Systems (--systems): packetstore (every write durable before its reply),
packetstore-none (`--domain none`: what the flushes cost), redis-no (no
persistence), redis-always (appendonly yes, appendfsync always),
kevy (3.17.3, --threads 1, aof with appendfsync = "always"), and
`packetstore@PATH` / `packetstore@PATH@ARGS` for another build or flags
(A/B comparisons; ARGS split on commas).

Each (storage, pipeline, round) starts every system fresh, in an order
that rotates each round (A B C, B C A, ...); one server runs all the
workloads in order. The server runs on --server-cpu, redis-benchmark on
--client-cpu; server CPU (its threads' run time from /proc/PID/task/*/schedstat) is read around each
workload alone, fills excluded. Medians over the rounds.

Writes bench/results/cpu.md (ratios to Redis without persistence and to
kevy, p99 unpipelined against Redis always), cpu.csv and cpu.png, or the
files named by --out.

Usage: bash bench/cpu.sh [--rounds N] [--requests N] [--only W,...]
       [--systems S,...] [--storages shm disk] [--pipelines 1 16]
       python3 bench/cpu.py --replot bench/results/cpu.csv
       python3 bench/cpu.py --memory      (bytes per key, 1M keys of 100 B)
"""
import argparse
import csv
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
TICKS = os.sysconf("SC_CLK_TCK")
PORT = 16479
PS_BIN = os.environ.get("PACKETSTORE_BIN", os.path.join(ROOT, "target", "release", "packetstore"))
REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")
REDIS_BENCHMARK = os.environ.get("REDIS_BENCHMARK", "redis-benchmark")
KEVY = os.environ.get("KEVY_BIN", shutil.which("kevy") or os.path.expanduser("~/.cargo/bin/kevy"))
KEYS = 100000

TEN_KEYS = ["key:__rand_int__"] * 10
# name -> (fill, redis-benchmark arguments after the common ones)
WORKLOADS = {
    "set-1k": (None, ["-t", "set", "-d", "1024"]),
    "set-16b": (None, ["-t", "set", "-d", "16"]),
    "get-1k": ("keys-1k", ["-t", "get"]),
    "get-16b": ("keys-16b", ["-t", "get"]),
    "incr": (None, ["-t", "incr"]),
    "lpush": (None, ["-t", "lpush", "-d", "1024"]),
    "rpop": (None, ["-t", "rpop"]),
    "sadd": (None, ["-t", "sadd"]),
    "spop": ("set", ["-t", "spop"]),
    "hset": (None, ["-t", "hset", "-d", "1024"]),
    "hget": ("hash", ["HGET", "myhash", "element:__rand_int__"]),
    "zadd-new": (None, ["-r", "1000000000", "ZADD", "znew", "__rand_int__", "member:__rand_int__"]),
    "zadd-old": ("zset", ["ZADD", "zold", "__rand_int__", "member:__rand_int__"]),
    "zrange": ("zset", ["ZRANGE", "zold", "0", "9"]),
    "mset": (None, ["-t", "mset", "-d", "1024"]),
    "mget": ("keys-1k", ["MGET"] + TEN_KEYS),
    "xadd": (None, ["XADD", "mystream", "*", "field", "__rand_int__"]),
}
# The plot's ratio axis stops here; a bar beyond it is labelled with its value.
PLOT_CAP = 7.0
BASE_SYSTEMS = ["packetstore", "packetstore-none", "redis-no", "redis-always", "kevy"]


def cpu_seconds(pid):
    """The server's CPU time: the sum of its threads' run time from
    /proc/PID/task/*/schedstat (nanoseconds; utime + stime in /proc/PID/stat
    count 10 ms ticks, 10% of a 40,000-request workload), or the ticks
    where schedstat is missing."""
    total_ns = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total_ns += int(f.read().split()[0])
        return total_ns / 1e9
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS


def ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), 0.5) as s:
            s.settimeout(2)
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def wait_port_free(port, timeout_s=20):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", port))
                return
        except OSError:
            time.sleep(0.2)


def command_for(system, data, port):
    """The command line that starts `system` with its data under `data`."""
    if system.startswith("packetstore"):
        binary, extra = PS_BIN, []
        if "@" in system:
            parts = system.split("@")
            binary = parts[1]
            extra = parts[2].split(",") if len(parts) > 2 and parts[2] else []
        cmd = [binary, "serve", "--pool", os.path.join(data, "kv.pool"), "--pool-size", "4GiB",
               "--resp", f"127.0.0.1:{port}", "--http", f"127.0.0.1:{port + 1}"] + extra
        return cmd + (["--domain", "none"] if system == "packetstore-none" else [])
    if system.startswith("redis"):
        persist = ["--appendonly", "no"] if system == "redis-no" else ["--appendonly", "yes", "--appendfsync",
                                                                        "always"]
        return [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", data, "--save", "",
                "--daemonize", "no", "--loglevel", "warning"] + persist
    if system == "kevy":
        config = os.path.join(data, "kevy.toml")
        with open(config, "w") as f:
            f.write('[persistence]\naof = true\nappendfsync = "always"\n')
        return [KEVY, "--config", config, "--threads", "1", "--port", str(port), "--dir", data]
    raise SystemExit(f"cpu.py: unknown system {system}")


def start(system, storage_dir, server_cpu):
    data = os.path.join(storage_dir, "cpubench-" + system.replace("/", "_").replace("@", "_")[-40:])
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    wait_port_free(PORT)
    wait_port_free(PORT + 1)
    log = open(os.path.join(data, "server.log"), "w")
    proc = subprocess.Popen(["taskset", "-c", server_cpu] + command_for(system, data, PORT), stdout=log,
                            stderr=log, cwd=data, env=dict(os.environ, PACKETSTORE_LOG="warn"))
    deadline = time.time() + 60
    while not ping(PORT):
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise RuntimeError(f"{system} did not start: {open(log.name).read()[-500:]}")
        time.sleep(0.05)
    return proc, data


def stop(proc, data):
    proc.kill()
    proc.wait()
    shutil.rmtree(data, ignore_errors=True)


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def send_all(commands):
    """Sends commands pipelined 1,000 at a time; fails on any error reply."""
    with socket.create_connection(("127.0.0.1", PORT)) as s:
        for i in range(0, len(commands), 1000):
            batch = commands[i:i + 1000]
            s.sendall(b"".join(batch))
            pending, buf = len(batch), b""
            while pending:
                chunk = s.recv(1 << 20)
                if not chunk:
                    raise RuntimeError("fill: connection closed")
                buf += chunk
                # Fill replies are one line each (+OK, :n).
                lines = buf.split(b"\r\n")
                buf = lines.pop()
                for line in lines:
                    if line.startswith(b"-"):
                        raise RuntimeError(f"fill: {line.decode()}")
                    pending -= 1


def fill(kind, requests):
    n = f"{{:012d}}".format
    if kind in ("keys-1k", "keys-16b"):
        value = b"v" * (1024 if kind == "keys-1k" else 16)
        send_all([resp("SET", f"key:{n(i)}", value) for i in range(KEYS)])
    elif kind == "set":  # more members than SPOPs
        send_all([resp("SADD", "myset", f"fill:{i}") for i in range(requests + 1000)])
    elif kind == "hash":
        value = b"v" * 1024
        send_all([resp("HSET", "myhash", f"element:{n(i)}", value) for i in range(KEYS)])
    elif kind == "zset":
        send_all([resp("ZADD", "zold", i, f"member:{n(i)}") for i in range(KEYS)])


def benchmark(proc, workload, requests, pipeline, client_cpu, client_threads):
    args = WORKLOADS[workload][1]
    cmd = ["taskset", "-c", client_cpu, REDIS_BENCHMARK, "-p", str(PORT), "-c", "50", "-n", str(requests),
           "-P", str(pipeline), "--csv"]
    if "-r" not in args:
        cmd += ["-r", str(KEYS)]
    if client_threads > 1:
        cmd += ["--threads", str(client_threads)]
    cpu0, t0 = cpu_seconds(proc.pid), time.time()
    out = subprocess.run(cmd + args, capture_output=True, text=True, check=True, timeout=600).stdout
    wall, cpu = time.time() - t0, cpu_seconds(proc.pid) - cpu0
    row = [line for line in out.splitlines() if line.startswith('"') and not line.startswith('"test"')][-1]
    fields = [f.strip('"') for f in row.split(",")]
    return {"rps": float(fields[1]), "p50_ms": float(fields[4]), "p99_ms": float(fields[6]),
            "server_us_per_req": cpu / requests * 1e6, "wall_s": wall}


def run(args):
    samples = []
    for storage, directory in (("shm", args.shm_dir), ("disk", args.disk_dir)):
        if storage not in args.storages:
            continue
        os.makedirs(directory, exist_ok=True)
        for pipeline in args.pipelines:
            requests = args.requests * (6 if pipeline > 1 else 1)
            for rnd in range(args.rounds):
                k = rnd % len(args.systems)
                for system in args.systems[k:] + args.systems[:k]:
                    proc, data = start(system, directory, args.server_cpu)
                    filled = set()
                    try:
                        for workload in args.only:
                            kind = WORKLOADS[workload][0]
                            if kind and kind not in filled:
                                fill(kind, requests)
                                filled = {kind} | (filled - {"keys-1k", "keys-16b"} if kind.startswith("keys")
                                                   else filled)
                            r = benchmark(proc, workload, requests, pipeline, args.client_cpu, args.client_threads)
                            r.update(storage=storage, pipeline=pipeline, round=rnd, system=system, workload=workload)
                            samples.append(r)
                            print(f"{storage} P{pipeline} r{rnd} {system[:30]:30} {workload:9} {r['rps']:>9.0f}/s "
                                  f"p99 {r['p99_ms']:6.2f} ms {r['server_us_per_req']:6.2f} us/req", flush=True)
                    finally:
                        stop(proc, data)
    return samples


def medians(samples):
    groups = {}
    for s in samples:
        groups.setdefault((s["storage"], int(s["pipeline"]), s["workload"], s["system"]), []).append(s)
    return {key: {f: statistics.median(float(r[f]) for r in rows) for f in ("rps", "p99_ms", "server_us_per_req")}
            for key, rows in groups.items()}


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def table(m, systems, workloads, storage, pipeline):
    ours = [s for s in systems if s.startswith("packetstore") and s != "packetstore-none"]
    head = "| workload | " + " | ".join(f"{s[-24:]} K/s (us)" for s in systems)
    head += "".join(f" | {s[-24:]} cpu / redis-no | {s[-24:]} cpu / kevy" for s in ours)
    if pipeline == 1:
        head += "".join(f" | {s[-24:]} p99 / redis-always p99" for s in ours)
    lines = [head + " |", "|---" * (head.count("|")) + "|"]
    for w in workloads:
        cells = []
        for s in systems:
            v = m.get((storage, pipeline, w, s))
            cells.append(f"{v['rps'] / 1000:.0f}K ({v['server_us_per_req']:.2f})" if v else "-")
        for s in ours:
            v = m.get((storage, pipeline, w, s), {}).get("server_us_per_req", 0)
            no = m.get((storage, pipeline, w, "redis-no"), {}).get("server_us_per_req", 0)
            kevy = m.get((storage, pipeline, w, "kevy"), {}).get("server_us_per_req", 0)
            cells += [ratio(v, no), ratio(v, kevy)]
        if pipeline == 1:
            for s in ours:
                p = m.get((storage, pipeline, w, s), {}).get("p99_ms", 0)
                a = m.get((storage, pipeline, w, "redis-always"), {}).get("p99_ms", 0)
                cells.append(f"{p:.2f} / {a:.2f} ms")
        lines.append(f"| {w} | " + " | ".join(cells) + " |")
    return lines


def write(samples, args):
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(samples[0].keys()))
        w.writeheader()
        w.writerows(samples)
    m = medians(samples)
    systems = list(dict.fromkeys(s["system"] for s in samples))
    workloads = [w for w in WORKLOADS if any(s["workload"] == w for s in samples)]
    rounds = len({s["round"] for s in samples})
    lines = ["# Server CPU per request against Redis without persistence (issue 36)", "",
             f"`{args.command}` (bench/cpu.py; {rounds} rounds, medians). Each cell: thousands of requests/s "
             "and, in brackets, the server's CPU time per request in us (its threads' run time from /proc/PID/task/*/schedstat around the "
             "workload alone). `cpu / redis-no` is the issue's measure (target <= 1.00x), `cpu / kevy` its second "
             "(target <= 1.00x); unpipelined, p99 against Redis always's (target: lower).", ""]
    for storage in ("shm", "disk"):
        for pipeline in sorted({int(s["pipeline"]) for s in samples}):
            if not any(k[0] == storage and k[1] == pipeline for k in m):
                continue
            where = "tmpfs (cache-line domain, emulated)" if storage == "shm" else "ext4 (page domain)"
            lines += [f"## {where}, -P {pipeline}", ""] + table(m, systems, workloads, storage, pipeline) + [""]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(m, systems, workloads, args.out + ".png")
    print("\n".join(lines))


def plot(m, systems, workloads, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("cpu.py: no matplotlib: no plot", file=sys.stderr)
        return
    panels = sorted({(k[0], k[1]) for k in m}, key=lambda p: (p[0] != "shm", p[1]))
    fig, axes = plt.subplots(len(panels), 1, figsize=(13, 3.3 * len(panels)), squeeze=False)
    for ax, (storage, pipeline) in zip(axes[:, 0], panels):
        width = 0.8 / len(systems)
        for i, system in enumerate(systems):
            ys = []
            for w in workloads:
                v = m.get((storage, pipeline, w, system), {}).get("server_us_per_req", 0)
                no = m.get((storage, pipeline, w, "redis-no"), {}).get("server_us_per_req", 0)
                ys.append(v / no if v and no else 0)
            xs = [x + i * width for x in range(len(workloads))]
            ax.bar(xs, [min(y, PLOT_CAP) for y in ys], width, label=system[-30:])
            for x, y in zip(xs, ys):
                if y > PLOT_CAP:  # a bar past the axis: its value, written at the top
                    ax.text(x, PLOT_CAP * 0.98, f"{y:.0f}x", rotation=90, ha="center", va="top", fontsize=6)
        ax.set_ylim(0, PLOT_CAP)
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(workloads))])
        ax.set_xticklabels(workloads, rotation=30)
        ax.set_ylabel("server CPU / Redis no-persist")
        ax.set_title(f"{'tmpfs' if storage == 'shm' else 'ext4'}, -P {pipeline}")
        ax.legend(fontsize=7, ncol=len(systems))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def memory(args):
    """Bytes per key for 1M keys of 100 B: packetstore (pool bytes in use + RSS) against Redis (RSS)."""
    lines = ["| system | keys | RSS MiB (not the pool) | pool buffers in use MiB | bytes per key |",
             "|---|---:|---:|---:|---:|"]
    for system in ("redis-no", "packetstore"):
        proc, data = start(system, args.shm_dir, args.server_cpu)
        try:
            rss0 = rss_bytes(proc.pid)
            for base in range(0, 1_000_000, 100_000):
                send_all([resp("SET", f"key:{i:012d}", b"v" * 100) for i in range(base, base + 100_000)])
            time.sleep(1.5)
            rss = rss_bytes(proc.pid) - rss0
            pool = pool_used_bytes(data) if system.startswith("packetstore") else 0
            lines.append(f"| {system} | 1,000,000 | {rss / 2**20:.0f} | {pool / 2**20:.0f} | "
                         f"{(rss + pool) / 1e6:.0f} |")
        finally:
            stop(proc, data)
    text = "\n".join(lines)
    print(text)
    return text


def rss_bytes(pid):
    """Resident memory not backed by the pool file (anonymous + other files)."""
    total = 0
    with open(f"/proc/{pid}/smaps") as f:
        mapping = ""
        for line in f:
            if not line[0].isupper() or ":" not in line.split()[0]:
                mapping = line
            elif line.startswith("Rss:") and "kv.pool" not in mapping:
                total += int(line.split()[1]) * 1024
    return total


def pool_used_bytes(data):
    """Pool bytes holding data: buffers in use (tree nodes and values) and
    the log's live bytes, from INFO memory (the rest of the pool file is
    reserved but free)."""
    info = {}
    with socket.create_connection(("127.0.0.1", PORT)) as s:
        s.sendall(resp("INFO", "memory"))
        buf = b""
        while b"\r\n" not in buf:
            buf += s.recv(65536)
        length = int(buf[1:buf.index(b"\r\n")])  # a bulk string: $N
        while len(buf) < buf.index(b"\r\n") + 2 + length:
            buf += s.recv(65536)
        for line in buf.decode().splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                info[k] = v
    used = (int(info["pool_buffers"]) - int(info["pool_free_buffers"])) * int(info["buffer_size"])
    return used


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=50000, help="per unpipelined workload (x6 at -P 16)")
    parser.add_argument("--pipelines", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--storages", nargs="+", default=["shm", "disk"])
    parser.add_argument("--systems", default=",".join(BASE_SYSTEMS))
    parser.add_argument("--only", default=",".join(WORKLOADS), help="workloads, comma-separated")
    parser.add_argument("--shm-dir", default="/dev/shm")
    parser.add_argument("--disk-dir", default=os.path.join(ROOT, "target", "bench-disk"))
    parser.add_argument("--server-cpu", default="1")
    parser.add_argument("--client-cpu", default="0")
    parser.add_argument("--client-threads", type=int, default=1)
    parser.add_argument("--out", default=os.path.join(RESULTS, "cpu"), help="path prefix of .md, .csv, .png")
    parser.add_argument("--replot", metavar="CSV")
    parser.add_argument("--memory", action="store_true")
    args = parser.parse_args()
    args.systems = args.systems.split(",")
    args.only = args.only.split(",")
    unknown = [w for w in args.only if w not in WORKLOADS]
    if unknown:
        raise SystemExit(f"cpu.py: unknown workloads {unknown}; known: {', '.join(WORKLOADS)}")
    args.command = "bash bench/cpu.sh " + " ".join(sys.argv[1:])
    if args.memory:
        text = memory(args)
        with open(args.out + "-memory.md", "w") as f:
            f.write(f"# Memory per key (issue 36)\n\n`python3 bench/cpu.py --memory`: 1,000,000 SETs of "
                    "100-byte values (keys key:N, 16 bytes), pool on tmpfs.\n\n" + text + "\n")
        return
    if args.replot:
        with open(args.replot) as f:
            samples = list(csv.DictReader(f))
        write(samples, args)
        return
    write(run(args), args)


if __name__ == "__main__":
    main()
