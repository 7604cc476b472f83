#!/usr/bin/env python3
"""The raw ceiling of an etcd lock handoff: the time from sending a key's delete to a watcher
of that key receiving the event, on one member, with nothing of sqlock in between.

  gateway  over etcd's v3 JSON gateway (what sqlock uses): one HTTP/1.1 keep-alive connection
           deletes, another holds a POST /v3/watch stream confirmed before the first delete
  busy     as gateway, while a third connection puts another key at the same moment: what a
           contended handoff meets, where the next contender queues its key as the lock passes
  grpc     over gRPC with python3-etcd3 (Debian package): delete_prefix + a watch iterator

Each sample: put the key (untimed), then time delete -> DELETE event. Prints p50/p90/p99.
Usage: etcd_handoff_ceiling.py HOST:PORT {gateway|busy|grpc} SAMPLES
"""
import base64
import http.client
import json
import sys
import threading
import time


def b64(s):
    return base64.b64encode(s.encode()).decode()


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] * 1e6


def caller(host, port):
    conn = http.client.HTTPConnection(host, port)
    conn.connect()

    def call(path, body):
        conn.request("POST", "/v3/" + path, json.dumps(body), {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError("%s: HTTP %d %s" % (path, r.status, data[:200]))
        return json.loads(data)

    return call


def gateway(host, port, samples, key, busy=False):
    call = caller(host, port)
    other = caller(host, port) if busy else None

    w = http.client.HTTPConnection(host, port)
    w.request("POST", "/v3/watch",
              json.dumps({"create_request": {"key": b64(key), "filters": ["NOPUT"]}}),
              {"Content-Type": "application/json"})
    resp = w.getresponse()
    created = json.loads(resp.readline())  # the confirmation: the watch is live from here on
    assert created["result"].get("created"), created
    got = threading.Event()

    def reader():
        while True:
            line = resp.readline()
            if not line:
                return
            if json.loads(line)["result"].get("events"):
                got.arrival = time.monotonic()
                got.set()

    threading.Thread(target=reader, daemon=True).start()
    out = []
    for _ in range(samples):
        call("kv/put", {"key": b64(key), "value": b64("x")})
        got.clear()
        if other:
            go = threading.Event()
            th = threading.Thread(target=lambda: (go.wait(), other(
                "kv/put", {"key": b64(key + "-next"), "value": b64("x")})))
            th.start()
            go.set()
        t = time.monotonic()
        call("kv/deleterange", {"key": b64(key)})
        assert got.wait(5)
        out.append(got.arrival - t)
        if other:
            th.join()
    if other:
        other("kv/deleterange", {"key": b64(key + "-next")})
    return out


def grpc(host, port, samples, key):
    import etcd3
    c = etcd3.client(host=host, port=port)
    it, cancel = c.watch(key)
    got = threading.Event()

    def reader():
        for ev in it:
            if isinstance(ev, etcd3.events.DeleteEvent):
                got.arrival = time.monotonic()
                got.set()

    threading.Thread(target=reader, daemon=True).start()
    time.sleep(0.3)  # python3-etcd3 does not expose the watch's confirmation
    out = []
    for _ in range(samples):
        c.put(key, "x")
        got.clear()
        t = time.monotonic()
        c.delete(key)
        assert got.wait(5)
        out.append(got.arrival - t)
    cancel()
    return out


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    what, samples = sys.argv[2], int(sys.argv[3])
    key = "/bench-ceiling/%d" % time.monotonic_ns()
    if what == "grpc":
        v = grpc(host, int(port), samples, key)
    else:
        v = gateway(host, int(port), samples, key, busy=what == "busy")
    print("raw delete -> event (%s, %d samples): p50 %.0fus  p90 %.0fus  p99 %.0fus"
          % (what, len(v), pct(v, 0.5), pct(v, 0.9), pct(v, 0.99)))


if __name__ == "__main__":
    main()
