#!/usr/bin/python3
"""The raw primitive pair beside `sqlock bench --locks N` on Redis (Debian python3-redis): one
thread takes and gives back N different names in a row, each with SET NX PX (acquire) and an
EVALSHA of a compare-and-delete script (release), as redis-py's Lock does. --pipelined sends each
release in one round trip with the next name's SET (the one-round-trip-per-pair limit).

  /usr/bin/python3 tests/backends/redis/redispy_raw_pair.py --port 26379 --locks 100 --json
"""
import argparse
import json
import os
import time

import redis

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--locks", type=int, default=100)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--pipelined", action="store_true")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    a = ap.parse_args()

    r = redis.Redis(host=a.host, port=a.port)
    sha = r.script_load(RELEASE)
    tag = os.urandom(4).hex()
    names = [f"raw-pair:{tag}:{i}" for i in range(a.locks)]
    pairs = 0
    stop = time.monotonic() + a.duration
    t0 = time.monotonic()
    pending = None  # (name, token) whose release goes out with the next SET
    while time.monotonic() < stop:
        for name in names:
            token = os.urandom(16).hex()
            if a.pipelined and pending:
                p = r.pipeline(transaction=False)
                p.evalsha(sha, 1, pending[0], pending[1])
                p.set(name, token, nx=True, px=30000)
                ok = p.execute()[1]
            else:
                ok = r.set(name, token, nx=True, px=30000)
            if not ok:
                raise SystemExit(f"{name} was busy")
            if a.pipelined:
                pending = (name, token)
            else:
                r.evalsha(sha, 1, name, token)
            pairs += 1
    if pending:
        r.evalsha(sha, 1, pending[0], pending[1])
    secs = time.monotonic() - t0
    out = {"peer": "redis-py raw SET NX PX + EVALSHA del" + (" (pipelined)" if a.pipelined else ""),
           "locks": a.locks, "pairs": pairs, "seconds": round(secs, 3),
           "pairs_per_second": round(pairs / secs, 1)}
    print(json.dumps(out) if a.json else f"{out['pairs_per_second']} pairs/s")


if __name__ == "__main__":
    main()
