#!/usr/bin/env python3
"""Measures what a Redis Sentinel failover does to a held sqlock lock (docs/backends/redis.md).

  sentinel_failover.py BUILD_DIR [TRIALS]

Private servers on loopback (never the shared ones): a master, one asynchronous replica and
three sentinels (quorum 2, down-after 1 s). Each trial - the master crashing right after the
acquire returned or 200 ms after it - a client holds lock L on the current master through
`sqlock run` (the redis backend talks to one server; it does not follow Sentinel), the master is
SIGKILLed, the sentinels promote the replica, and the script looks at the new master: is L's
owner key still there, did its fence counter survive, and can a second client take L at once
while the first still believes it holds it. The old master comes back as a replica.
Prints one line per trial and the totals."""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import servers  # noqa: E402


def cli(port, *args):
    r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
                       capture_output=True, text=True, timeout=10)
    return r.stdout.strip()


class Node:
    def __init__(self, d, port, replica_of=None):
        self.d, self.port, self.proc = d, port, None
        self.start(replica_of)

    def start(self, replica_of=None):
        args = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                "--appendonly", "no", "--dir", self.d, "--logfile",
                os.path.join(self.d, f"redis-{self.port}.log")]
        if replica_of:
            args += ["--replicaof", "127.0.0.1", str(replica_of)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        servers.wait_until(f"redis {self.port}", 20, lambda: cli(self.port, "PING") == "PONG")

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def main():
    build = sys.argv[1]
    trials = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    sqlock = os.path.join(build, "bin", "sqlock")
    d = tempfile.mkdtemp(prefix="sqlock-sentinel-")
    a, b = servers.free_port(), servers.free_port()
    nodes = {a: Node(d, a), b: None}
    nodes[b] = Node(d, b, replica_of=a)
    sentinels = []
    for i in range(3):
        port = servers.free_port()
        conf = os.path.join(d, f"sentinel-{port}.conf")
        with open(conf, "w") as f:
            f.write(f"port {port}\nbind 127.0.0.1\ndir {d}\n"
                    f"sentinel monitor m 127.0.0.1 {a} 2\n"
                    "sentinel down-after-milliseconds m 1000\n"
                    "sentinel failover-timeout m 3000\nsentinel parallel-syncs m 1\n")
        sentinels.append((port, subprocess.Popen(
            ["redis-server", conf, "--sentinel", "--logfile", conf + ".log"],
            stdout=subprocess.DEVNULL)))
    s0 = sentinels[0][0]

    def master():
        out = cli(s0, "SENTINEL", "get-master-addr-by-name", "m").split()
        return int(out[1]) if len(out) == 2 else None

    servers.wait_until("sentinel", 20, lambda: master() == a)
    time.sleep(2)  # let the sentinels discover the replica and each other
    totals = {}
    try:
        # (label, pause before the crash, replica frozen from before the acquire until the crash)
        # (A replica SIGSTOPped meanwhile is no lag: the kernel keeps the stream in its buffer.)
        for label, delay, lag in (("immediate", 0.0, False), ("after 200 ms", 0.2, False)):
            for t in range(trials):
                m = master()
                r = b if m == a else a
                servers.wait_until("replica link", 30,
                                   lambda: "master_link_status:up" in cli(r, "INFO", "replication"))
                name = f"failover-{label.replace(' ', '-')}-{t}"
                if lag:
                    nodes[r].proc.send_signal(signal.SIGSTOP)
                mark = os.path.join(d, name)
                holder = subprocess.Popen(
                    [sqlock, "run", "--url", f"redis://127.0.0.1:{m}", "--lease", "30s", name,
                     "--", "sh", "-c", f"touch {mark}; sleep 120"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                servers.wait_until("holder", 20, lambda: os.path.exists(mark))
                fence_before = int(cli(m, "GET", f"sqlock:{{{name}}}:fence") or 0)
                time.sleep(delay)
                t0 = time.monotonic()
                nodes[m].kill()
                if lag:
                    nodes[r].proc.send_signal(signal.SIGCONT)
                servers.wait_until("promotion", 60, lambda: master() == r)
                promoted = time.monotonic() - t0
                owner_kept = cli(r, "EXISTS", f"sqlock:{{{name}}}:owner") == "1"
                fence_after = int(cli(r, "GET", f"sqlock:{{{name}}}:fence") or 0)
                second = subprocess.run(
                    [sqlock, "run", "--url", f"redis://127.0.0.1:{r}", "--wait", "0",
                     "--lease", "5s", name, "--", "true"], capture_output=True, timeout=30)
                taken = second.returncode == 0
                fence_second = int(cli(r, "GET", f"sqlock:{{{name}}}:fence") or 0)
                regressed = taken and fence_second <= fence_before
                print(f"{label} trial {t}: promoted after {promoted:.1f} s, "
                      f"hold kept {owner_kept}, fence {fence_before} -> counter {fence_after}, "
                      f"second client took it {taken} (fence {fence_second})"
                      f"{', FENCE WENT BACK' if regressed else ''}", flush=True)
                k = label
                tot = totals.setdefault(k, {"trials": 0, "hold_lost": 0, "double_grant": 0,
                                            "fence_regressed": 0})
                tot["trials"] += 1
                tot["hold_lost"] += not owner_kept
                tot["double_grant"] += taken
                tot["fence_regressed"] += regressed
                holder.send_signal(signal.SIGKILL)
                holder.wait()
                nodes[m].start(replica_of=r)  # the old master returns as a replica
    finally:
        for n in nodes.values():
            if n.proc.poll() is None:
                n.kill()
        for _, p in sentinels:
            p.kill()
            p.wait()
    for k, v in totals.items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main()
