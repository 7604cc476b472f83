#!/usr/bin/python3
"""The Redis benchmark run of docs/backends/redis.md: redis-benchmark (the raw ceiling; a
lock/unlock pair costs two round trips), `sqlock bench` on redis:// and redlock://, and redis-py's
Lock, single thread and contended, interleaved over several rounds in one run (the machine is
shared, so single measurements are noisy); prints every measurement and the medians.

  /usr/bin/python3 tests/backends/redis/bench_compare.py --build build [--rounds 3] [--seconds 3]
Servers: scripts/servers.sh start redis; URLs from SQLOCK_TEST_REDIS_URL / SQLOCK_TEST_REDLOCK_URL.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ACQUIRE_LUA = os.path.join(HERE, "..", "..", "..", "src", "backends", "redis", "lua", "acquire.lua")


def redis_benchmark(port, n, *cmd):
    out = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", "1", "-n",
                          str(n), "-q", "-r", "1000000", *cmd],
                         capture_output=True, text=True, check=True).stdout
    m = re.findall(r"([0-9.]+) requests per second", out.replace("\r", "\n"))
    return float(m[-1])


def sqlock_bench(binary, url, secs, threads, contended):
    cmd = [binary, "bench", "--url", url, "--duration", f"{secs}s", "--threads", str(threads), "--json"]
    if contended:
        cmd.append("--contended")
    j = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    return j


def redispy(port, secs, threads, contended):
    cmd = ["/usr/bin/python3", os.path.join(HERE, "redispy_lock_bench.py"), "--port", str(port),
           "--duration", str(secs), "--threads", str(threads), "--json"]
    if contended:
        cmd.append("--contended")
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4, help="threads of the contended runs")
    a = ap.parse_args()
    single = os.environ.get("SQLOCK_TEST_REDIS_URL", "redis://127.0.0.1:26379")
    redlock = os.environ.get("SQLOCK_TEST_REDLOCK_URL", "redlock://" + ",".join(
        f"127.0.0.1:{p}" for p in range(26380, 26385)))
    port = int(re.search(r":(\d+)", single.split("@")[-1]).group(1))
    binary = os.path.join(a.build, "src", "cli", "sqlock")
    with open(ACQUIRE_LUA, "rb") as f:
        sha = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "-x", "script", "load"],
                             input=f.read(), capture_output=True, check=True).stdout.decode().strip()
    n = a.seconds * 8000
    t = a.threads
    results = {}

    def add(key, value):
        results.setdefault(key, []).append(value)
        print(f"  {key}: {value}", flush=True)

    with open("/proc/loadavg") as f:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}  {os.cpu_count()} cores  "
              f"load {' '.join(f.read().split()[:3])}")
    for r in range(a.rounds):
        print(f"round {r + 1}", flush=True)
        add("redis-benchmark PING rps", redis_benchmark(port, n, "-t", "ping_mbulk"))
        add("redis-benchmark SET NX PX rps",
            redis_benchmark(port, n, "SET", "bench:{__rand_int__}:owner", "v", "NX", "PX", "30000"))
        add("redis-benchmark EVALSHA acquire.lua rps",
            redis_benchmark(port, n, "EVALSHA", sha, "3", "bench:{__rand_int__}:owner",
                            "bench:{__rand_int__}:fence", "bench:{__rand_int__}:info", "owner", "30000",
                            "holder"))
        for label, url in (("redis://", single), ("redlock:// 5 masters", redlock)):
            j = sqlock_bench(binary, url, a.seconds, 1, False)
            add(f"sqlock {label} 1 thread pairs/s", round(j["pairs_per_sec"]))
            add(f"sqlock {label} 1 thread p50 us", j["latency_us"]["p50"])
            j = sqlock_bench(binary, url, a.seconds, t, True)
            add(f"sqlock {label} {t} threads contended pairs/s", round(j["pairs_per_sec"]))
            add(f"sqlock {label} {t} threads contended handoff p50 us", j["handoff_us"]["p50"])
            add(f"sqlock {label} {t} threads contended handoff p99 us", j["handoff_us"]["p99"])
        j = redispy(port, a.seconds, 1, False)
        add("redis-py Lock 1 thread pairs/s", round(j["pairs_per_sec"]))
        add("redis-py Lock 1 thread p50 us", round(j["latency_us"]["p50"], 1))
        j = redispy(port, a.seconds, t, True)
        add(f"redis-py Lock {t} threads contended pairs/s", round(j["pairs_per_sec"]))
        add(f"redis-py Lock {t} threads contended p50 us", round(j["latency_us"]["p50"], 1))
    subprocess.run(f"redis-cli -h 127.0.0.1 -p {port} --scan --pattern 'bench:{{*' | "
                   f"xargs -r -n 1000 redis-cli -h 127.0.0.1 -p {port} del >/dev/null", shell=True)
    print("\n| measurement | median | rounds |\n|---|---|---|")
    for k, v in results.items():
        print(f"| {k} | {statistics.median(v):.0f} | {', '.join(f'{x:.0f}' for x in v)} |")


if __name__ == "__main__":
    sys.exit(main())
