#!/usr/bin/python3
"""Lock/unlock pairs per second of redis-py's Lock (Debian python3-redis), for comparison with
`sqlock bench` in docs/backends/redis.md. Same shape as `sqlock bench`: each thread has its own
client; with --contended every thread uses the same lock name, otherwise one name per thread.

  /usr/bin/python3 tests/backends/redis/redispy_lock_bench.py --port 26379 --threads 4 --contended
"""
import argparse
import json
import os
import threading
import time

import redis


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--lease", type=float, default=30.0)
    ap.add_argument("--sleep", type=float, default=0.1, help="redis-py's wait between tries")
    ap.add_argument("--contended", action="store_true")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    a = ap.parse_args()

    tag = os.urandom(4).hex()
    stop = time.monotonic() + a.duration
    latencies = [[] for _ in range(a.threads)]

    def worker(i):
        r = redis.Redis(host=a.host, port=a.port)
        name = f"redispy-bench:{tag}:" + ("shared" if a.contended else str(i))
        lat = latencies[i]
        while time.monotonic() < stop:
            lock = r.lock(name, timeout=a.lease, sleep=a.sleep)
            t0 = time.perf_counter()
            if not lock.acquire(blocking=True, blocking_timeout=10):
                continue
            lock.release()
            lat.append(time.perf_counter() - t0)

    start = time.monotonic()
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    took = time.monotonic() - start
    allv = sorted(x for l in latencies for x in l)
    n = len(allv)
    if n == 0:
        print("redis-py Lock: no pairs completed")
        return
    p50 = allv[n // 2] * 1e6
    p99 = allv[min(n - 1, int(n * 0.99))] * 1e6
    if a.json:
        print(json.dumps({"impl": "redis-py Lock " + redis.__version__, "threads": a.threads,
                          "contended": a.contended, "pairs_per_sec": n / took,
                          "latency_us": {"p50": p50, "p99": p99}}))
        return
    print(f"redis-py Lock {redis.__version__}: {a.threads} thread(s), "
          f"{'contended' if a.contended else 'uncontended'}")
    print(f"pairs/s {n / took:.0f}  latency p50 {p50:.1f}us  p99 {p99:.1f}us")


if __name__ == "__main__":
    main()
