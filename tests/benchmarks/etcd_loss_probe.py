#!/usr/bin/env python3
"""How soon a hold hears that its key was deleted right after it was taken.

Starts `sqlock hold --url URL NAME`, waits for the fence line (held), deletes every key of the
lock at once through etcd's JSON gateway (as `sqlock release --force` or a revoked lease would),
and times until `sqlock hold` exits with 70 (lease lost). The figure includes the process's own
exit; what differs between backends is when the deletion reaches the hold.

Usage: etcd_loss_probe.py SQLOCK etcd://HOST:PORT/PREFIX RUNS
"""
import base64
import http.client
import json
import subprocess
import sys
import time
from urllib.parse import urlparse


def b64(s):
    return base64.b64encode(s.encode()).decode()


def main():
    sqlock, url, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    u = urlparse(url)
    name = "loss-probe-%d" % time.monotonic_ns()
    pfx = u.path.strip("/") + "/" + name + "/"
    end = pfx[:-1] + chr(ord(pfx[-1]) + 1)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    conn.connect()
    out = []
    for _ in range(runs):
        p = subprocess.Popen([sqlock, "hold", "--url", url, name], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        p.stdout.readline()  # the fence: it holds
        t = time.monotonic()
        conn.request("POST", "/v3/kv/deleterange",
                     json.dumps({"key": b64(pfx), "range_end": b64(end)}))
        conn.getresponse().read()
        rc = p.wait(timeout=20)
        out.append((time.monotonic() - t) * 1000)
        if rc != 70:
            sys.exit("sqlock hold exited %d, not 70 (lost)" % rc)
    out.sort()
    print("deleted right after the fence -> sqlock hold exits 70: p50 %.1f ms  p90 %.1f ms  "
          "max %.1f ms  (%d runs)" % (out[len(out) // 2], out[int(len(out) * 0.9)], out[-1], runs))


if __name__ == "__main__":
    main()
