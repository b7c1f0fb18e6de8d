#!/usr/bin/env python3
"""A well-behaved client's latency while hostile clients attack the server
(issue 6): the target is p99 within 2x of the same client's p99 alone, with
the server's memory bounded.

For each scenario, packetstore serve (pool on /dev/shm, CPU 1) is started
fresh, and redis-benchmark (CPU 0) measures SET and GET of 1 KiB values
(`-c 10 -d 1024 -r 10000`) twice: alone (A), then with the scenario's
hostile clients running (B), A B A B A B over the rounds. Reported per
scenario: the median p99 of A and of B and their ratio, the throughput
ratio, and the server's peak resident memory (VmHWM) during B.

Scenarios:
  slowloris    2,000 connections sending HTTP heads one byte per second
  idle         4,900 idle connections, then 5,100 more during the
               measurement, against --connections-max 5000 (those past the
               maximum refused and counted)
  never-reads  8 connections pipelining GETs of a 4 KiB value without
               reading a reply (--client-pause 4MiB, --client-stall-timeout 5s)
  over-limit   a loop of requests over every limit: a 1 GiB Content-Length,
               a 32 KiB head, a RESP argument over the value limit, a 100 KiB
               inline line, a multibulk count over the maximum
  resets       a loop of connections that send half of a 1 MB SET, then reset
  resets-unfair  the same, against a server without the per-turn receive
               limit (--client-receive-per-turn 0): the control row

The hostile clients run in this process on CPU 0, with redis-benchmark.
The measuring client runs at real-time priority (chrt -f 50, alone and
attacked alike), so that it stands for a client on its own machine: the
reset flood keeps a core busy sending, and a measuring client that shared
that core at normal priority waited up to a 4 ms scheduler tick for it,
which is the client machine's latency, not the server's. The attack's own
rate (bytes sent, connections made per second) is reported per row.

Writes bench/results/hostile.md, hostile.csv and hostile.png.
Usage: python3 bench/hostile.py [--rounds N] [--requests N] | --replot
"""

import argparse
import csv
import os
import selectors
import socket
import statistics
import struct
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.environ.get("PACKETSTORE_BIN", os.path.join(ROOT, "target", "release", "packetstore"))
RESULTS = os.path.join(ROOT, "bench", "results")
RESP_PORT = 16390
HTTP_PORT = 18090
POOL = "/dev/shm/packetstore-bench-hostile.pool"


def start_server(extra):
    if os.path.exists(POOL):
        os.remove(POOL)
    args = ["taskset", "-c", "1", BINARY, "serve", "--pool", POOL, "--pool-size", "1GiB",
            "--http", f"127.0.0.1:{HTTP_PORT}", "--resp", f"127.0.0.1:{RESP_PORT}"] + extra
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        if line.startswith("listening:"):
            break
    else:
        raise RuntimeError("the server did not start")
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return proc


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def info_field(name):
    out = subprocess.run(["redis-cli", "-p", str(RESP_PORT), "INFO", "everything"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith(name + ":"):
            return int(line.split(":")[1])
    return None


def benchmark(requests, before_test=None):
    """redis-benchmark's p99 (ms) and throughput for SET and GET, one run
    each (`before_test` is called before each: it opens its connections
    then)."""
    rows = {}
    for test in ("set", "get"):
        if before_test:
            before_test()
        out = subprocess.run(
            ["chrt", "-f", "50", "taskset", "-c", "0", "redis-benchmark", "-p", str(RESP_PORT), "-t", test,
             "-n", str(requests), "-c", "10", "-d", "1024", "-r", "10000", "--csv"],
            capture_output=True, text=True, check=True).stdout
        for line in out.splitlines()[1:]:
            fields = [f.strip('"') for f in line.split(",")]
            # test, rps, avg, min, p50, p95, p99, max
            rows[fields[0]] = (float(fields[1]), float(fields[6]))
    return rows


class Hostile:
    """Runs a scenario's hostile clients in a thread until stopped."""

    def __init__(self, scenario):
        self.scenario = scenario
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.sockets = []
        self.ready = threading.Event()
        # idle: the burst past the maximum runs during each redis-benchmark
        # test, and is closed before the next connects (else the measuring
        # client itself would be refused).
        self.burst = threading.Event()
        self.release = threading.Event()
        self.released = threading.Event()
        self.bursting = False
        self.sent_bytes = 0
        self.connections = 0
        self.started = 0.0
        self.seconds = 0.0

    def __enter__(self):
        os.sched_setaffinity(0, {0})
        self.started = time.time()
        self.thread.start()
        if self.scenario == "idle":
            self.ready.wait(60)
        else:
            time.sleep(2.0 if self.scenario == "slowloris" else 0.5)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.seconds = time.time() - self.started
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass

    def connect(self, port, blocking=True):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(blocking)
        return s

    def run(self):
        getattr(self, self.scenario.split("-unfair")[0].replace("-", "_"))()

    def rate(self):
        """The attack's rate: MB/s sent and connections/s."""
        return self.sent_bytes / self.seconds / 1e6, self.connections / self.seconds

    def slowloris(self):
        head = b"PUT /kv/slow HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"p" * 4000
        for _ in range(2000):
            self.sockets.append(self.connect(HTTP_PORT, blocking=False))
        at = 0
        while not self.stop.is_set():
            for s in self.sockets:
                try:
                    s.send(head[at % len(head):at % len(head) + 1])
                except OSError:
                    pass
            at += 1
            self.stop.wait(1.0)

    def before_test(self):
        """Before each redis-benchmark test (idle only): close the last
        burst, let the server reap it, and start the next one shortly after
        the measuring client has connected."""
        if self.scenario != "idle":
            return
        if self.bursting:
            self.release.set()
            self.released.wait(60)
            self.released.clear()
            deadline = time.time() + 10
            while time.time() < deadline and (info_field("connected_clients") or 0) > 4_901:
                time.sleep(0.05)
        self.bursting = True
        self.burst.set()

    def idle(self):
        # 4,900 idle connections before the measurement (the well-behaved
        # client's 10 fit under the maximum of 5,000), then during each
        # test, 0.5 s after it connected, 5,100 more: past the maximum,
        # each is refused and counted.
        for _ in range(4_900):
            self.sockets.append(self.connect(RESP_PORT, blocking=False))
        self.ready.set()
        while not self.stop.is_set():
            if not self.burst.wait(0.1):
                continue
            self.burst.clear()
            self.stop.wait(0.5)
            extras = []
            for i in range(5_100):
                try:
                    extras.append(self.connect(RESP_PORT, blocking=False))
                    self.connections += 1
                except OSError:
                    pass
                if i % 100 == 0:
                    self.stop.wait(0.01)
            while not self.stop.is_set() and not self.release.wait(0.1):
                pass
            self.release.clear()
            for s in extras:
                s.close()
            self.released.set()

    def never_reads(self):
        # A 4 KiB value, then GETs that are never read.
        s = self.connect(RESP_PORT)
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nv\r\n$4096\r\n" + b"x" * 4096 + b"\r\n")
        s.recv(16)
        s.close()
        batch = b"GET v\r\n" * 4096
        while not self.stop.is_set():
            conns = [self.connect(RESP_PORT, blocking=False) for _ in range(8)]
            self.connections += len(conns)
            self.sockets.extend(conns)
            deadline = time.time() + 8
            while time.time() < deadline and not self.stop.is_set():
                for s in conns:
                    try:
                        self.sent_bytes += s.send(batch)
                    except OSError:
                        pass
                self.stop.wait(0.01)

    def over_limit(self):
        requests = [
            (HTTP_PORT, b"PUT /kv/big HTTP/1.1\r\nContent-Length: 1073741824\r\n\r\n"),
            (HTTP_PORT, b"GET /kv/" + b"h" * 32768 + b" HTTP/1.1\r\n\r\n"),
            (RESP_PORT, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$999999999999\r\n"),
            (RESP_PORT, b"PING " + b"i" * 100_000 + b"\r\n"),
            (RESP_PORT, b"*99999999\r\n"),
        ]
        while not self.stop.is_set():
            for port, request in requests:
                try:
                    s = self.connect(port)
                    s.settimeout(2)
                    s.sendall(request)
                    s.recv(256)
                    s.close()
                    self.sent_bytes += len(request)
                    self.connections += 1
                except OSError:
                    pass

    def resets(self):
        half = b"*3\r\n$3\r\nSET\r\n$5\r\nreset\r\n$1000000\r\n" + b"r" * 500_000
        linger = struct.pack("ii", 1, 0)
        while not self.stop.is_set():
            try:
                s = self.connect(RESP_PORT)
                s.sendall(half)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                s.close()
                self.sent_bytes += len(half)
                self.connections += 1
            except OSError:
                pass


SCENARIOS = {
    "slowloris": [],
    "idle": ["--connections-max", "5000"],
    "never-reads": ["--client-pause", "4MiB", "--client-stall-timeout", "5s"],
    "over-limit": [],
    "resets": [],
    "resets-unfair": ["--client-receive-per-turn", "0"],
}


def plot():
    """hostile.png from hostile.csv: each scenario's p99, alone and
    attacked, for SET and GET, with the 2x target."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    with open(os.path.join(RESULTS, "hostile.csv")) as f:
        rows = list(csv.DictReader(f))
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, test in zip(axes, ("SET", "GET")):
        by = {r["scenario"]: r for r in rows if r["test"] == test}
        xs = range(len(scenarios))
        alone = [float(by[s]["p99_alone_ms"]) for s in scenarios]
        attacked = [float(by[s]["p99_attacked_ms"]) for s in scenarios]
        ax.bar([x - 0.2 for x in xs], alone, 0.4, label="alone")
        ax.bar([x + 0.2 for x in xs], attacked, 0.4, label="attacked")
        ax.scatter(list(xs), [2 * a for a in alone], marker="_", s=400, color="black", label="2x alone (target)")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(scenarios, rotation=25, ha="right")
        ax.set_yscale("log")
        ax.set_title(f"well-behaved client's {test} p99 (ms)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend()
    fig.suptitle("packetstore under hostile clients (bench/hostile.py; resets-unfair: without the per-turn receive limit)")
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "hostile.png"), dpi=110)
    print("wrote", os.path.join(RESULTS, "hostile.png"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--replot", action="store_true", help="redraw hostile.png from hostile.csv")
    args = parser.parse_args()
    if args.replot:
        plot()
        return
    os.makedirs(RESULTS, exist_ok=True)
    samples = {name: [] for name in SCENARIOS}
    for round_ in range(args.rounds):
        for name, extra in SCENARIOS.items():
            proc = start_server(extra)
            try:
                alone = benchmark(args.requests)
                with Hostile(name) as hostile:
                    attacked = benchmark(args.requests, hostile.before_test)
                attack = hostile.rate()
                rss = peak_rss_mib(proc.pid)
                alive = proc.poll() is None
                if name == "idle":
                    print("  rejected_connections:", info_field("rejected_connections"), flush=True)
            finally:
                proc.kill()
                proc.wait()
            samples[name].append((alone, attacked, rss, alive, attack))
            print(f"round {round_ + 1} {name}: alone {alone}, attacked {attacked}, peak RSS {rss:.0f} MiB",
                  flush=True)
    rows = []
    for name, runs in samples.items():
        for test in ("SET", "GET"):
            p99_alone = statistics.median(r[0][test][1] for r in runs)
            p99_attacked = statistics.median(r[1][test][1] for r in runs)
            rps_alone = statistics.median(r[0][test][0] for r in runs)
            rps_attacked = statistics.median(r[1][test][0] for r in runs)
            rows.append({
                "scenario": name, "test": test,
                "p99_alone_ms": p99_alone, "p99_attacked_ms": p99_attacked,
                "p99_ratio": p99_attacked / p99_alone if p99_alone else float("nan"),
                "throughput_ratio": rps_attacked / rps_alone,
                "peak_rss_mib": max(r[2] for r in runs),
                "server_alive": all(r[3] for r in runs),
                "attack_mb_s": statistics.median(r[4][0] for r in runs),
                "attack_conn_s": statistics.median(r[4][1] for r in runs),
            })
    with open(os.path.join(RESULTS, "hostile.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(os.path.join(RESULTS, "hostile.md"), "w") as f:
        f.write("# A well-behaved client under hostile clients\n\n")
        f.write(f"`python3 bench/hostile.py --rounds {args.rounds} --requests {args.requests}`: "
                "redis-benchmark SET/GET, 1 KiB values, 10 connections, alone (A) then during the "
                "scenario (B), A B per round, medians over the rounds. Server on CPU 1; the hostile "
                "clients and redis-benchmark on CPU 0, redis-benchmark at real-time priority "
                "(`chrt -f 50`) so that it stands for a client on its own machine. "
                "`resets-unfair` is the control: the same flood against a server without the per-turn "
                "receive limit (`--client-receive-per-turn 0`).\n\n")
        f.write("| scenario | test | p99 alone (ms) | p99 attacked (ms) | ratio | throughput ratio | "
                "server peak RSS (MiB) | server alive | attack (MB/s, conn/s) |\n"
                "|---|---|---:|---:|---:|---:|---:|---|---:|\n")
        for r in rows:
            attack = (f"{r['attack_mb_s']:.0f}, {r['attack_conn_s']:.0f}" if r["attack_conn_s"] else "")
            f.write(f"| {r['scenario']} | {r['test']} | {r['p99_alone_ms']:.3f} | {r['p99_attacked_ms']:.3f} | "
                    f"{r['p99_ratio']:.2f}x | {r['throughput_ratio']:.2f}x | {r['peak_rss_mib']:.0f} | "
                    f"{'yes' if r['server_alive'] else 'NO'} | {attack} |\n")
    print(open(os.path.join(RESULTS, "hostile.md")).read())
    plot()


if __name__ == "__main__":
    main()
