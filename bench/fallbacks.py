#!/usr/bin/env python3
"""What each io_uring fallback costs (issue 15): packetstore serve with its
default engine, with whole receive buffers (PACKETSTORE_URING_DISABLE=
incremental: a kernel before 6.12) and with a plain ring
(PACKETSTORE_URING_DISABLE=defer-taskrun: before 6.1), alternated within
each of 3 rounds, medians; redis-benchmark 1 KiB values, 50 clients, on a
fresh /dev/shm pool (GETs are misses); server on CPU 1, client on CPU 0.
Prints a markdown table. Usage: python3 bench/fallbacks.py (after cargo
build --release).
"""
import os
import statistics
import subprocess

B = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target", "release", "packetstore")
def run(env_extra, test, pipeline, port):
    pool=f"/dev/shm/fb-{port}.pool"
    if os.path.exists(pool): os.remove(pool)
    env=dict(os.environ, PACKETSTORE_LOG="warn", **env_extra)
    p=subprocess.Popen(["taskset","-c","1",B,"serve","--pool",pool,"--pool-size","2GiB","--resp",f"127.0.0.1:{port}","--http",f"127.0.0.1:{port+1}"],stdout=subprocess.PIPE,stderr=subprocess.DEVNULL,env=env,text=True)
    for line in p.stdout:
        if line.startswith("listening"): break
    out=subprocess.run(["taskset","-c","0","redis-benchmark","-p",str(port),"-t",test,"-d","1024","-c","50","-r","100000","-n","200000","-P",str(pipeline),"--csv"],capture_output=True,text=True).stdout
    p.terminate(); p.wait(); os.remove(pool)
    row=[l for l in out.splitlines() if l.startswith(f'"{test.upper()}"')][-1]
    return float(row.split(",")[1].strip('"'))
modes={"default":{}, "incremental off":{"PACKETSTORE_URING_DISABLE":"incremental"}, "defer-taskrun off":{"PACKETSTORE_URING_DISABLE":"defer-taskrun"}}
res={}
port=18100
for r in range(3):
    for test,pl in [("set",1),("set",16),("get",16)]:
        for name,env in modes.items():
            port+=2
            v=run(env,test,pl,port)
            res.setdefault((test,pl,name),[]).append(v)
            print(r,test,pl,name,v,flush=True)
print()
print("| request | pipeline | default | whole buffers (incremental off) | ratio | plain ring (defer-taskrun off) | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
for test,pl in [("set",1),("set",16),("get",16)]:
    d=statistics.median(res[(test,pl,"default")]); i=statistics.median(res[(test,pl,"incremental off")]); t=statistics.median(res[(test,pl,"defer-taskrun off")])
    print(f"| {test.upper()} 1 KiB | {pl} | {d:.0f}/s | {i:.0f}/s | {i/d:.2f}x | {t:.0f}/s | {t/d:.2f}x |")
