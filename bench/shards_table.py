#!/usr/bin/env python3
"""Tables of device_bench.py's shards phase: per system and shard count, the median requests/s and server CPU
per request of each test, and packetstore's ratios against kevy at the same shard count (both through Redis
Cluster routing) and its scaling from 1 shard.
usage: shards_table.py results.csv [title]"""
import collections, csv, statistics as st, sys

rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0] == "shards"]
cells = collections.defaultdict(list)
for r in rows:
    cells[(r[2], r[3])].append((int(r[7]), float(r[9])))
tests = list(dict.fromkeys(r[3] for r in rows))
systems = list(dict.fromkeys(r[2] for r in rows))
med = lambda s, t, i: st.median(x[i] for x in cells[(s, t)]) if cells[(s, t)] else None
print(f"## {sys.argv[2] if len(sys.argv) > 2 else 'shards'}\n")
print("Median of the rounds: requests/s (K) and server CPU µs per request.\n")
print("| system | " + " | ".join(tests) + " |")
print("|---|" + "---:|" * len(tests))
for s in systems:
    print(f"| {s} | " + " | ".join(f"{med(s, t, 0) / 1e3:.0f}K, {med(s, t, 1):.2f} µs" if cells[(s, t)] else "" for t in tests) + " |")
counts = sorted({int(s.rsplit("-s", 1)[1]) for s in systems})
print("\npacketstore / kevy, both through cluster routing (throughput: higher is better; CPU: lower is better):\n")
print("| shards | " + " | ".join(tests) + " |")
print("|---|" + "---:|" * len(tests))
for n in counts:
    a, b = f"packetstore-cluster-s{n}", f"kevy-cluster-s{n}"
    print(f"| {n} | " + " | ".join(f"{med(a, t, 0) / med(b, t, 0):.2f}x rps, {med(a, t, 1) / med(b, t, 1):.2f}x CPU"
                                    if cells[(a, t)] and cells[(b, t)] else "" for t in tests) + " |")
print("\nScaling from 1 shard (throughput at N / N x throughput at 1; 1.00 is linear), and CPU per request at N / at 1:\n")
print("| system | shards | " + " | ".join(tests) + " |")
print("|---|---|" + "---:|" * len(tests))
for sysname in ("packetstore", "kevy"):
    one = f"{sysname}-cluster-s1"
    for n in counts[1:]:
        s = f"{sysname}-cluster-s{n}"
        print(f"| {sysname} | {n} | " + " | ".join(f"{med(s, t, 0) / (n * med(one, t, 0)):.2f}, {med(s, t, 1) / med(one, t, 1):.2f}x CPU"
                                                 if cells[(s, t)] and cells[(one, t)] else "" for t in tests) + " |")
