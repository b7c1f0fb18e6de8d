#!/usr/bin/env python3
"""How long a killed server's listening sockets outlive it (issue 15).

A process killed with SIGKILL can keep its listening sockets for a moment
after it has been reaped: its io_uring holds references to them (a
multishot accept in flight) and is torn down afterwards by a kernel worker.
A supervisor that restarts it at once on the same port then gets
EADDRINUSE, which is why the servers retry their bind (`--bind-timeout`).

For each of N kills: `packetstore serve` (or `wal`) is started on fixed
ports, loaded (serve: redis-benchmark SETs of 1 KiB from 50 connections,
pipelined 16 deep; wal: 8 connections POSTing 1 KiB bodies, 16 in flight),
killed with SIGKILL after a random 0.3-1.0 s, and reaped (waitpid). From
the moment waitpid returns this script measures, for each listening port,
the time until bind() on it succeeds (a socket with SO_REUSEADDR, as the
server binds; tried every 0.1 ms or so), and separately the time until
`ss -Hltn` no longer lists it (polled in another thread: the start of the
first ss run that lists none; each run takes a few milliseconds, which is
this column's resolution).

Raw rows go to bench/results/linger-<server>-<storage>.txt, with the
distribution (min, median, p90, p99, max) at the end.

Usage: python3 bench/linger.py [--kills 100] [--server serve|wal]
                               [--storage shm|disk] [--binary PATH]
"""

import argparse
import os
import random
import socket
import statistics
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
PORTS = {"serve": [18095, 16395], "wal": [18096]}
# The longest this script waits for a port, per kill.
WAIT_MAX_S = 30.0


def default_binary():
    for build in ["release", "debug"]:
        path = os.path.join(ROOT, "target", build, "packetstore")
        if os.path.exists(path):
            return path
    raise SystemExit("build packetstore first (cargo build --release)")


def server_args(args, pool):
    if args.server == "serve":
        http, resp = PORTS["serve"]
        return [args.binary, "serve", "--pool", pool, "--pool-size", "1GiB",
                "--http", f"127.0.0.1:{http}", "--resp", f"127.0.0.1:{resp}", "--bind-timeout", "60s"]
    return [args.binary, "wal", "--pool", pool, "--pool-size", "1GiB", "--threads", "2",
            "--listen", f"127.0.0.1:{PORTS['wal'][0]}", "--bind-timeout", "60s"]


def start_server(args, pool):
    proc = subprocess.Popen(server_args(args, pool), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        if line.startswith("listening"):
            break
    else:
        raise RuntimeError("the server did not start")
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return proc


def start_load(args, stop):
    """The load: a redis-benchmark process (serve) or POSTing threads (wal)."""
    if args.server == "serve":
        return subprocess.Popen(
            ["redis-benchmark", "-p", str(PORTS["serve"][1]), "-t", "set", "-d", "1024", "-r", "100000",
             "-c", "50", "-P", "16", "-n", "1000000000", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    threads = [threading.Thread(target=post_loop, args=(stop,), daemon=True) for _ in range(8)]
    for thread in threads:
        thread.start()
    return threads


def post_loop(stop):
    request = b"POST /wal HTTP/1.1\r\nContent-Length: 1024\r\n\r\n" + b"x" * 1024
    try:
        with socket.create_connection(("127.0.0.1", PORTS["wal"][0]), timeout=5) as conn:
            conn.sendall(request * 16)
            while not stop.is_set():
                if not conn.recv(65536):
                    return
                conn.sendall(request)
    except OSError:
        return


def stop_load(load, stop):
    stop.set()
    if isinstance(load, subprocess.Popen):
        load.kill()
        load.wait()
    else:
        for thread in load:
            thread.join(timeout=10)


def bind_free_ms(ports, t0):
    """Per port: milliseconds from t0 until bind() succeeds."""
    done = {}
    while len(done) < len(ports) and time.monotonic() - t0 < WAIT_MAX_S:
        for port in ports:
            if port in done:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                    done[port] = (time.monotonic() - t0) * 1e3
                except OSError:
                    pass
        time.sleep(0.0001)
    return [done.get(port, float("nan")) for port in ports]


def ss_gone_ms(ports, t0, out):
    """Milliseconds from t0 until `ss -Hltn` lists none of the ports: the
    moment the first ss run that lists none was started (the socket was
    gone by then; the run before, which still listed one, started at most
    one ss run's time earlier)."""
    needles = [f":{port} " for port in ports]
    while time.monotonic() - t0 < WAIT_MAX_S:
        run_started = time.monotonic()
        listed = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True).stdout
        if not any(needle in listed for needle in needles):
            out.append((run_started - t0) * 1e3)
            return
    out.append(float("nan"))


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def distribution(name, values):
    return (f"{name}: min {min(values):.2f} ms, median {statistics.median(values):.2f}, "
            f"p90 {percentile(values, 0.9):.2f}, p99 {percentile(values, 0.99):.2f}, max {max(values):.2f}; "
            f"{sum(v > 0.5 for v in values)} of {len(values)} over 0.5 ms")


def one_kill(args, pool, rng):
    server = start_server(args, pool)
    stop = threading.Event()
    load = start_load(args, stop)
    time.sleep(rng.uniform(0.3, 1.0))
    server.kill()
    server.wait()  # waitpid: reaped
    t0 = time.monotonic()
    ports = PORTS[args.server]
    ss = []
    watcher = threading.Thread(target=ss_gone_ms, args=(ports, t0, ss))
    watcher.start()
    bind = bind_free_ms(ports, t0)
    watcher.join()
    stop_load(load, stop)
    return bind, ss[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--server", choices=["serve", "wal"], default="serve")
    parser.add_argument("--storage", choices=["shm", "disk"], default="shm")
    parser.add_argument("--binary", default=None)
    args = parser.parse_args()
    args.binary = args.binary or default_binary()
    directory = "/dev/shm" if args.storage == "shm" else os.path.join(ROOT, "target", "tmp")
    os.makedirs(directory, exist_ok=True)
    pool = os.path.join(directory, f"packetstore-bench-linger-{args.server}.pool")
    if os.path.exists(pool):
        os.remove(pool)
    rng = random.Random(15)
    ports = PORTS[args.server]
    header = "kill " + " ".join(f"bind_{port}_ms" for port in ports) + " ss_gone_ms"
    rows, binds, gones = [header], [], []
    started = time.monotonic()
    for kill in range(args.kills):
        bind, gone = one_kill(args, pool, rng)
        rows.append(f"{kill} " + " ".join(f"{ms:.3f}" for ms in bind) + f" {gone:.3f}")
        print(rows[-1], flush=True)
        binds.append(max(bind))
        gones.append(gone)
    os.remove(pool)
    summary = [
        f"# python3 bench/linger.py --kills {args.kills} --server {args.server} --storage {args.storage}",
        f"# binary {args.binary}, kernel {os.uname().release}, {time.monotonic() - started:.0f} s",
        "# " + distribution("until bind() succeeds on every port", binds),
        "# " + distribution("until ss -ltn lists no port", gones),
    ]
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"linger-{args.server}-{args.storage}.txt")
    with open(path, "w") as f:
        f.write("\n".join(summary[:2] + rows + summary[2:]) + "\n")
    print("\n".join(summary))
    print(f"written: {path}")


if __name__ == "__main__":
    main()
