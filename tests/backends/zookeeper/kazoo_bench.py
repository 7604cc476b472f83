#!/usr/bin/python3
"""The comparison point for `sqlock bench` on zookeeper://: kazoo's Lock recipe (Debian
python3-kazoo) doing lock/unlock pairs against the same server.

  /usr/bin/python3 kazoo_bench.py --hosts 127.0.0.1:22181 [--threads N] [--duration 5] [--contended] [--json]

Each worker is a separate process with its own KazooClient (no GIL between workers), like each
`sqlock bench` thread has its own client. Uncontended: one lock path per worker; contended: all
workers share one. Prints pairs/s and the p50/p99 latency of one acquire+release pair."""
import argparse
import json
import multiprocessing as mp
import os
import time
import uuid


def worker(hosts, path, duration, start_at, out):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=hosts, timeout=10.0)
    zk.start()
    lock = zk.Lock(path, "bench-%d" % os.getpid())
    lat = []
    while time.time() < start_at:
        time.sleep(0.001)
    end = time.monotonic() + duration
    while time.monotonic() < end:
        t0 = time.perf_counter()
        lock.acquire()
        lock.release()
        lat.append(time.perf_counter() - t0)
    zk.stop()
    zk.close()
    out.put(lat)


def pct(xs, p):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", default="127.0.0.1:22181")
    ap.add_argument("--root", default="/kazoo-bench")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--contended", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    run = uuid.uuid4().hex[:8]
    out = mp.Queue()
    start_at = time.time() + 1.5  # let every client connect first
    procs = []
    for i in range(a.threads):
        path = "%s/%s/%s" % (a.root, run, "shared" if a.contended else "lock-%d" % i)
        p = mp.Process(target=worker, args=(a.hosts, path, a.duration, start_at, out))
        p.start()
        procs.append(p)
    lat = []
    for _ in procs:
        try:
            lat.extend(out.get(timeout=a.duration + 60))
        except Exception:
            raise SystemExit("kazoo_bench: a worker failed (is python3-kazoo installed for "
                             "/usr/bin/python3?)")
    for p in procs:
        p.join()
    res = {
        "tool": "kazoo Lock",
        "threads": a.threads,
        "contended": a.contended,
        "pairs": len(lat),
        "pairs_per_sec": len(lat) / a.duration,
        "latency_us": {"p50": pct(lat, 50) * 1e6, "p99": pct(lat, 99) * 1e6},
    }
    if a.json:
        print(json.dumps(res))
    else:
        print("kazoo Lock, %d worker(s)%s" % (a.threads, ", contended" if a.contended else ""))
        print("pairs/s %.0f  latency p50 %.1fus  p99 %.1fus"
              % (res["pairs_per_sec"], res["latency_us"]["p50"], res["latency_us"]["p99"]))


if __name__ == "__main__":
    main()
