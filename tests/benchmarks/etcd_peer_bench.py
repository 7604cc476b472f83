#!/usr/bin/env python3
"""etcd lock pairs/s by python3-etcd3 (gRPC), the peer and raw ceilings beside `sqlock bench`.

  lock  python3-etcd3's Lock: acquire() + release() (its own txn on a lease)
  raw   the same etcd operations sqlock's try_lock makes, issued directly over gRPC:
        lease grant, txn (put the key if no key exists under the lock's prefix), lease revoke

Usage: etcd_peer_bench.py HOST:PORT {lock|raw} SECONDS
"""
import sys
import time

import etcd3


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    what, seconds = sys.argv[2], float(sys.argv[3])
    c = etcd3.client(host=host, port=int(port))
    name = "bench-peer-%d" % time.monotonic_ns()
    pairs = 0
    lat = []
    end = time.monotonic() + seconds
    if what == "lock":
        lock = c.lock(name, ttl=30)
        while time.monotonic() < end:
            t = time.monotonic()
            assert lock.acquire(timeout=10)
            lock.release()
            lat.append(time.monotonic() - t)
            pairs += 1
    else:
        prefix = "/bench-raw/" + name + "/"
        while time.monotonic() < end:
            t = time.monotonic()
            lease = c.lease(30)
            key = prefix + "%x" % lease.id
            ok, _ = c.transaction(
                compare=[c.transactions.create(key) == 0],
                success=[c.transactions.put(key, "", lease)],
                failure=[],
            )
            assert ok
            lease.revoke()
            lat.append(time.monotonic() - t)
            pairs += 1
    lat.sort()
    p50 = lat[len(lat) // 2] * 1e6 if lat else 0
    print("python3-etcd3 %s: pairs/s %.0f  latency p50 %.1fus" % (what, pairs / seconds, p50))


if __name__ == "__main__":
    main()
