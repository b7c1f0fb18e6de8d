#!/usr/bin/env python3
"""Peers on a 16-core machine, one run: packetstore vs Redis 7 / Valkey 8 (appendfsync always, and Redis without
persistence) vs kevy, single-core parity, multi-core scale, real-disk page domain, and a 3-node group.
Binaries from .dev/bin (and .dev/kevy/bin), libraries from .dev/lib. Results as CSV lines on stdout and in $OUT.
usage: device_bench.py PHASE... (env, parity, disk, scale, group, shards)

This is ../shared/bench-device/device_bench.py with the phase `shards` (issue 37): packetstore --shards S and kevy
--threads S on cores 0..S-1, both through Redis Cluster routing (redis-benchmark --cluster against the shards' own
ports), and through their main ports too (where commands for another shard's keys hop to it). SHARDS=1,2,4,8 and SHARD_TESTS=set,get,... override what it runs."""
import os, shutil, signal, socket, statistics as st, subprocess as sp, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = f"{ROOT}/.dev/bin"
KEVY = f"{ROOT}/.dev/kevy/bin/kevy"
OUT = os.environ.get("OUT", "/tmp")
os.environ["LD_LIBRARY_PATH"] = f"{ROOT}/.dev/lib"
LOG = open(f"{OUT}/results.csv", "a")
PS_EXTRA = os.environ.get("PS_EXTRA", "").split()

def emit(*f):
    line = ",".join(str(x) for x in f); print(line, flush=True); LOG.write(line + "\n"); LOG.flush()

def C(spec):  # a core list; on a small machine (a smoke test) everything shares what there is
    return spec if (os.cpu_count() or 1) >= 16 else f"0-{(os.cpu_count() or 1) - 1}"

AFF = "import os,sys; os.sched_setaffinity(0, {int(c) for r in sys.argv[1].split(',') for c in (range(int(r.split('-')[0]), int(r.split('-')[-1]) + 1))}); os.execvp(sys.argv[2], sys.argv[2:])"

def T(spec):  # pin a command to cores: taskset where there is one
    return ["taskset", "-c", C(spec)] if shutil.which("taskset") else [sys.executable, "-c", AFF, C(spec)]

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def wait_port(p, t=60):
    end = time.time() + t
    while time.time() < end:
        try:
            c = socket.create_connection(("127.0.0.1", p), 0.5); c.settimeout(2); c.sendall(b"PING\r\n")
            if c.recv(10).startswith(b"+PONG"): c.close(); return True
            c.close()
        except OSError: pass
        time.sleep(0.05)
    return False

def cpu_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])

def cmd_for(system, d, port, threads):
    if system == "packetstore-none":  # persistence off: what the flushes cost
        return cmd_for("packetstore", d, port, threads) + ["--domain", "none"]
    if system == "packetstore":
        return [f"{BIN}/packetstore", "serve", "--pool", f"{d}/kv.pool", "--pool-size", "2GiB", "--resp",
                f"127.0.0.1:{port}", "--http", f"127.0.0.1:{free_port()}"] + PS_EXTRA
    if system in ("redis", "valkey", "redis-nopersist"):
        exe = f"{BIN}/valkey-server" if system == "valkey" else f"{BIN}/redis-server"
        c = [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--save", "", "--protected-mode", "no"]
        c += ["--appendonly", "no"] if system == "redis-nopersist" else ["--appendonly", "yes", "--appendfsync", "always"]
        if threads > 1: c += ["--io-threads", str(threads), "--io-threads-do-reads", "yes"]
        return c
    if system == "kevy":
        open(f"{d}/kevy.toml", "w").write('[persistence]\naof = true\nappendfsync = "always"\n')
        return [KEVY, "--config", f"{d}/kevy.toml", "--port", str(port), "--threads", str(threads), "--dir", d]
    raise SystemExit(system)

def start(system, base, cores, threads=1):
    d = tempfile.mkdtemp(prefix=f"b-{system}-", dir=base); port = free_port()
    p = sp.Popen(T(cores) + cmd_for(system, d, port, threads), stdout=(lf := open(f"{d}/server.log", "w")),
                 stderr=lf, cwd=d)
    if not wait_port(port):
        p.kill(); p.wait()
        emit("error", system, "did not start", open(f"{d}/server.log").read()[-300:].replace("\n", " | ").replace(",", ";"))
        shutil.rmtree(d, ignore_errors=True); return None
    return p, d, port

def stop(h):
    p, d, _ = h
    p.send_signal(signal.SIGTERM)
    try: p.wait(20)
    except sp.TimeoutExpired: p.kill(); p.wait()
    shutil.rmtree(d, ignore_errors=True)

SCALE = float(os.environ.get("SCALE", "1"))
BENCH_EXACT = False

def bench(port, tests, pipe, n, clients, threads, cores, size=1024, keys=100000, cluster=False):
    n = n if n % 1000 == 7 else max(1000, int(n * SCALE))
    cmd = T(cores) + [f"{BIN}/redis-benchmark", "-p", str(port), "-t", ",".join(tests), "-n", str(n),
           "-c", str(clients), "-d", str(size), "-r", str(keys), "-P", str(pipe), "-q", "--csv"]
    if cluster: cmd += ["--cluster"]
    if threads > 1: cmd += ["--threads", str(threads)]
    try: out = sp.run(cmd, capture_output=True, text=True, timeout=120).stdout
    except sp.TimeoutExpired: return {}
    res = {}
    for line in out.splitlines():
        f = [x.strip('"') for x in line.split(",")]
        if len(f) >= 7 and f[0] != "test":
            try: res[f[0].split()[0].lower()] = (float(f[1]), float(f[6]))
            except ValueError: pass
    return res

def run_case(phase, storage, system, h, tests, pipe, n, clients, cthreads, ccores, rnd):
    c0 = cpu_ticks(h[0].pid); t0 = time.time()
    res = bench(h[2], tests, pipe, n, clients, cthreads, ccores)
    wall = time.time() - t0; cpu = (cpu_ticks(h[0].pid) - c0) / os.sysconf("SC_CLK_TCK")
    reqs = sum(r for r, _ in res.values()) and max(1000, int(n * SCALE)) * len(res)
    for t, (rps, p99) in res.items():
        emit(phase, storage, system, t, f"P{pipe}", f"c{clients}", rnd, int(rps), p99, round(1e6 * cpu / reqs, 2) if reqs else 0)

def phase_env():
    emit("env", "uname", os.uname().release); emit("env", "nproc", os.cpu_count())
    emit("env", "cpu", sp.run("grep -m1 'model name' /proc/cpuinfo", shell=True, capture_output=True, text=True).stdout.strip().replace(",", ";"))
    emit("env", "df", sp.run("df -T / /dev/shm /var/tmp | tail -n +2 | awk '{print $1\":\"$2\":\"$7}' | tr '\\n' ' '",
                             shell=True, capture_output=True, text=True).stdout)
    h = start("packetstore", "/dev/shm", "1")
    if h:
        time.sleep(0.5); emit("env", "packetstore-start", open(f"{h[1]}/server.log").read()[-600:].replace("\n", " | ").replace(",", ";"))
        stop(h)

TYPES = ["set", "get", "incr", "lpush", "sadd", "hset", "zadd"]

def phase_parity(rounds=2):
    """One server core (2), clients on 8-15: every durable peer and the no-persistence ceiling, tmpfs."""
    for rnd in range(rounds):
        for system in ["packetstore", "packetstore-huge", "redis", "valkey", "redis-nopersist", "kevy"]:
            base = "/dev/shm"
            if system == "packetstore-huge":
                os.makedirs("/mnt/hugeshm", exist_ok=True)
                if not os.path.ismount("/mnt/hugeshm") and sp.run(["mount", "-t", "tmpfs", "-o", "huge=within_size,size=8g", "tmpfs", "/mnt/hugeshm"]).returncode:
                    continue
                base = "/mnt/hugeshm"
            h = start(system.replace("-huge", ""), base, "2")
            if not h: continue
            for pipe in (1, 16):
                run_case("parity", "shm", system, h, TYPES, pipe, 100000 if pipe == 1 else 200000, 50, 4, "8-15", rnd)
            stop(h)

def phase_disk(rounds=2):
    """The page domain on this machine's disk: SET unpipelined and pipelined, every durable peer."""
    os.makedirs("/var/tmp/dbench", exist_ok=True)
    for rnd in range(rounds):
        for system in ["packetstore", "redis", "valkey", "kevy"]:
            h = start(system, "/var/tmp/dbench", "2")
            if not h: continue
            for pipe in (1, 16):
                run_case("disk", "disk", system, h, ["set"], pipe, 50000 if pipe == 1 else 200000, 50, 4, "8-15", rnd)
            stop(h)

def phase_scale(rounds=2):
    """Many clients, many cores (servers on 0-7, clients on 8-15): multi-threaded peers against one loop."""
    for rnd in range(rounds):
        for system, threads in [("packetstore", 1), ("redis", 4), ("valkey", 8), ("kevy", 8), ("redis-nopersist", 4)]:
            h = start(system, "/dev/shm", "0-7", threads)
            if not h: continue
            run_case("scale", "shm", f"{system}-t{threads}", h, ["set", "get"], 16, 2000000, 400, 8, "8-15", rnd)
            stop(h)

def role(port):
    try:
        c = socket.create_connection(("127.0.0.1", port), 2); c.settimeout(2); c.sendall(b"ROLE\r\n")
        data = c.recv(200); c.close(); return b"master" in data or b"leader" in data
    except OSError: return False

def phase_group(rounds=2):
    """A 3-node group on three cores (1, 2, 3), pools on tmpfs, against one node alone."""
    for rnd in range(rounds):
        h = start("packetstore", "/dev/shm", "2")
        if h:
            for pipe in (1, 16):
                run_case("group", "shm", "single", h, ["set"], pipe, 100000, 50, 4, "8-15", rnd)
            stop(h)
        base = tempfile.mkdtemp(dir="/dev/shm"); ports = [free_port() for _ in range(3)]
        peers = ",".join(f"{i + 1}=127.0.0.1:{free_port()}" for i in range(3)); procs = []
        for i in range(3):
            procs.append(sp.Popen(T(str(i + 1)) + [f"{BIN}/packetstore", "serve", "--pool", f"{base}/n{i}.pool",
                                   "--pool-size", "2GiB", "--resp", f"127.0.0.1:{ports[i]}", "--http", f"127.0.0.1:{free_port()}",
                                   "--node-id", str(i + 1), "--peers", peers], stdout=sp.DEVNULL,
                                  stderr=open(f"{base}/n{i}.log", "w")))
        leader = None; end = time.time() + 30
        while leader is None and time.time() < end:
            leader = next((p for p in ports if role(p)), None); time.sleep(0.2)
        if leader is None: emit("error", "group", "no leader", open(f"{base}/n0.log").read()[-300:].replace("\n", " | ").replace(",", ";"))
        else:
            time.sleep(1)
            for pipe in (1, 16):
                fake = (procs[ports.index(leader)], base, leader)
                c0 = sum(cpu_ticks(p.pid) for p in procs); t0 = time.time()
                res = bench(leader, ["set"], pipe, 100000, 50, 4, "8-15")
                cpu = (sum(cpu_ticks(p.pid) for p in procs) - c0) / os.sysconf("SC_CLK_TCK")
                for t, (rps, p99) in res.items():
                    emit("group", "shm", "group3", t, f"P{pipe}", "c50", rnd, int(rps), p99, round(1e6 * cpu / max(1000, int(100000 * SCALE)), 2))
        for p in procs: p.send_signal(signal.SIGTERM)
        for p in procs:
            try: p.wait(20)
            except sp.TimeoutExpired: p.kill(); p.wait()
        shutil.rmtree(base, ignore_errors=True)

def phase_cpu():
    """Each write type alone at -P 16 on one server core: throughput from wall time and server CPU per request."""
    for system in ["packetstore", "packetstore-huge", "packetstore-none", "redis", "kevy", "redis-nopersist"]:
        base = "/dev/shm"
        if system == "packetstore-huge":
            os.makedirs("/mnt/hugeshm", exist_ok=True)
            if not os.path.ismount("/mnt/hugeshm"):
                sp.run(["mount", "-t", "tmpfs", "-o", "huge=within_size,size=8g", "tmpfs", "/mnt/hugeshm"])
            base = "/mnt/hugeshm"
        h = start(system.replace("-huge", ""), base, "2")
        if not h: continue
        for test in TYPES:
            n = max(2000, int(600000 * SCALE)) // 1000 * 1000 + 7; c0 = cpu_ticks(h[0].pid); t0 = time.time()
            res = bench(h[2], [test], 16, n, 50, 2, "8-15")
            wall = time.time() - t0; cpu = (cpu_ticks(h[0].pid) - c0) / os.sysconf("SC_CLK_TCK")
            for t, (rps, p99) in res.items():
                emit("cpu", "shm", system, t, "P16", "c50", 0, int(n / wall), p99, round(1e6 * cpu / n, 2))
        stop(h)

def start_sharded(system, shards, cores):
    """packetstore --shards S --cluster-ports P (cluster port of shard 0: P), or kevy --threads S --cluster
    (shard i on port+1+i); returns (handle, cluster port of a shard)."""
    d = tempfile.mkdtemp(prefix=f"b-{system}-", dir="/dev/shm"); port = free_port()
    while system == "kevy" and (port + 1 + shards > 65535 or not all(port_free(port + 1 + i) for i in range(shards))):
        port = free_port()
    if system == "packetstore":
        cport = free_port()
        while cport + shards > 65535 or any(not port_free(cport + i) for i in range(shards)): cport = free_port()
        # LPUSH and HSET through the main port put every element in one shard (one key): room for 3M of 1 KiB.
        c = [f"{BIN}/packetstore", "serve", "--pool", f"{d}/kv.pool", "--pool-size", os.environ.get("SHARD_POOL", "4GiB"), "--resp",
             f"127.0.0.1:{port}", "--http", f"127.0.0.1:{free_port()}", "--shards", str(shards),
             "--cluster-ports", str(cport)] + PS_EXTRA
    else:
        open(f"{d}/kevy.toml", "w").write('[persistence]\naof = true\nappendfsync = "always"\n')
        c = [KEVY, "--config", f"{d}/kevy.toml", "--port", str(port), "--threads", str(shards), "--dir", d, "--cluster"]
        cport = port + 1
    p = sp.Popen(T(cores) + c, stdout=(lf := open(f"{d}/server.log", "w")), stderr=lf, cwd=d)
    if not wait_port(port) or not wait_port(cport):
        p.kill(); p.wait()
        emit("error", system, shards, "did not start", open(f"{d}/server.log").read()[-300:].replace("\n", " | ").replace(",", ";"))
        shutil.rmtree(d, ignore_errors=True); return None, None
    return (p, d, port), cport

def port_free(p):
    s = socket.socket()
    try: s.bind(("127.0.0.1", p)); return True
    except OSError: return False
    finally: s.close()

def phase_shards(rounds=int(os.environ.get("ROUNDS", "2"))):
    """Shard per core: packetstore --shards S against kevy --threads S (AOF always), servers on cores 0..S-1,
    400 clients (redis-benchmark --threads 8 on cores 8-15), -P 16, 1 KiB values, tmpfs; through Redis Cluster
    routing (each command to its shard's port) and through the main port (a command for another shard's keys is
    relayed there: the cost of a hop)."""
    counts = [int(x) for x in os.environ.get("SHARDS", "1,2,4,8").split(",")]
    tests = os.environ.get("SHARD_TESTS", "set,get,incr,lpush,hset").split(",")
    for rnd in range(rounds):
        for shards in counts:
            cores = "0" if shards == 1 else f"0-{shards - 1}"
            for system in ["packetstore", "kevy"]:
                h, cport = start_sharded(system, shards, cores)
                if not h: continue
                n = int(os.environ.get("SHARD_REQUESTS", "300000")) * shards
                # redis-benchmark --cluster wants 2 nodes or more: one shard is served on its main port (every
                # command is its own there), under the same name.
                routes = [("cluster", cport, True) if shards > 1 else ("cluster", h[2], False)]
                # Both relay between shards on their main port: the cost of a hop.
                routes += [("main", h[2], False)] if shards > 1 else []
                for (route, port, cluster), test in [(r, t) for r in routes for t in tests]:
                    c0 = cpu_ticks(h[0].pid)
                    res = bench(port, [test], 16, n, 400, 8, "8-15", cluster=cluster)
                    cpu = (cpu_ticks(h[0].pid) - c0) / os.sysconf("SC_CLK_TCK")
                    reqs = max(1000, int(n * SCALE))
                    for t, (rps, p99) in res.items():
                        emit("shards", "shm", f"{system}-{route}-s{shards}", t, "P16", "c400", rnd, int(rps), p99,
                             round(1e6 * cpu / reqs, 2))
                stop(h)

if __name__ == "__main__":
    emit("phase", "storage", "system", "test", "pipe", "clients", "round", "rps", "p99_ms", "server_cpu_us_per_req")
    for ph in sys.argv[1:]:
        t = time.time(); globals()[f"phase_{ph}"](); emit("timing", ph, round(time.time() - t, 1))
