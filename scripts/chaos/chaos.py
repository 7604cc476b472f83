#!/usr/bin/env python3
"""The chaos driver: runs sqlock_chaos_worker processes against one backend, injects faults,
lists what is left at the end and runs tests/chaos/check_history.py over the histories.

  chaos.py --backend postgres --build build --out /tmp/chaos-pg \
           --procs 3 --threads 4 --seconds 20 --faults kill,stop,freeze-long,restart

Backends: memory sqlite postgres mysql redis redlock zookeeper zk-ensemble etcd etcd-cluster
(3 members), and postgres-sync / postgres-async (a primary with a synchronous / asynchronous
streaming standby). Without a server fault the shared test server named by SQLOCK_TEST_*_URL is
used (exit 77 = skipped when it is unset); a server fault (freeze-short, freeze-long, restart,
minority, majority, member-kill, leader-kill, promote: crash the primary and promote the standby;
promote-lagging: the same after the primary's WAL sender was stopped for one lease) starts a
private instance (scripts/chaos/servers.py, etcd_servers.py). Network faults (blackhole, reset,
delay, lost-reply: requests reach the server, its answers are lost, then the connections that
lost them are reset) put sqlock_chaos_proxy between the workers and a single-host server. Holder faults: kill
(SIGKILL a worker; a new one takes its place), stop (SIGSTOP past the lease, then SIGCONT), skew
(workers run under libfaketime at +10 min and -10 min, monotonic clock real). Every fault is
written to OUT/faults.jsonl with CLOCK_MONOTONIC times. --param KEY=VALUE adds a URL option for
the workers (e.g. mode=advisory). --kind shared (with --writers-percent) or semaphore (with
--permits) makes the workers take a shared_mutex or a semaphore's permits instead of a mutex."""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcd_servers  # noqa: E402
import servers  # noqa: E402

HOLDER = {"kill", "stop", "skew"}
SERVER = {"freeze-short", "freeze-long", "restart", "minority", "majority", "member-kill",
          "leader-kill", "promote", "promote-lagging"}
NETWORK = {"blackhole", "reset", "delay", "lost-reply"}
SHARED_URL = {
    "postgres": ("SQLOCK_TEST_POSTGRES_APP_URL", "SQLOCK_TEST_POSTGRES_URL"),
    "mysql": ("SQLOCK_TEST_MYSQL_EXEC_URL", "SQLOCK_TEST_MYSQL_URL"),
    "redis": ("SQLOCK_TEST_REDIS_URL", None),
    "redlock": ("SQLOCK_TEST_REDLOCK_URL", None),
    "zookeeper": ("SQLOCK_TEST_ZOOKEEPER_URL", None),
    "zk-ensemble": ("SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_URL", None),
    "etcd": ("SQLOCK_TEST_ETCD_URL", None),
    "etcd-cluster": ("SQLOCK_TEST_ETCD_CLUSTER_URL", None),
    "postgres-sync": ("SQLOCK_TEST_POSTGRES_URL", None),
    "postgres-async": ("SQLOCK_TEST_POSTGRES_URL", None),
}
PRIVATE = {
    "postgres": servers.Postgres, "mysql": servers.Mysql, "redis": servers.Redis,
    "redlock": servers.Redlock, "zookeeper": servers.ZooKeeper,
    "zk-ensemble": lambda d: servers.ZooKeeper(d, members=3),
    "etcd": etcd_servers.Etcd, "etcd-cluster": lambda d: etcd_servers.Etcd(d, members=3),
    "postgres-sync": lambda d: servers.PostgresPair(d, synchronous=True),
    "postgres-async": lambda d: servers.PostgresPair(d, synchronous=False),
}
# How long a waiting writer's mark keeps new readers out after the writer died (the backends'
# documented marks: docs/backends/redis.md, engine_backend::writer_mark); none on ZooKeeper and
# etcd (a dead writer's queue entry ends with its session or lease) nor in advisory mode. A
# reader notices the mark's end at its next attempt: up to wait_policy::notify_recheck later.
WRITER_MARK_MS = {"redis": 3000, "sqlite": 5000, "postgres": 5000, "postgres-sync": 5000,
                  "postgres-async": 5000, "mysql": 5000}
NOTIFY_RECHECK_MS = 1000
# How late past a hold's lease the server itself may end it: ZooKeeper expires sessions in
# buckets of its tickTime (500 ms on the test servers, scripts/servers.d/40-zookeeper.sh), so a
# dead holder's session ends between its timeout and one tick later.
EXPIRY_SLACK_MS = {"zookeeper": 500, "zk-ensemble": 500}
# How long past its run (and its last acquire's bound) a worker may take to end before it is
# killed and the run fails as hung.
HANG_GRACE_S = 120
# The shortest pause after a fault before the next (the workers take the lock again meanwhile).
MIN_PAUSE_S = 0.5
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def mono():
    return time.monotonic_ns()


def with_param(url, key, value):
    return url + ("&" if "?" in url else "?") + f"{key}={value}"


class Run:
    def __init__(self, a):
        self.a = a
        self.worker = os.path.join(a.build, "tests", "chaos", "sqlock_chaos_worker")
        self.cli = os.path.join(a.build, "bin", "sqlock")
        self.server = None
        self.proxy = None
        self.procs = []  # [Popen]
        self.hung = 0  # workers killed for not ending (worker-timeout)
        self.history = {}  # pid -> history file
        self.spawned = 0
        self.faults = open(os.path.join(a.out, "faults.jsonl"), "w")
        self.prefix = f"chaos/{os.getpid()}-{random.getrandbits(32):08x}/"
        self.end_at = None

    # ---- setup ----
    def setup(self):
        a, faults = self.a, set(self.a.faults)
        if a.backend == "memory":
            self.url = self.admin_url = "memory:"
        elif a.backend == "sqlite":
            self.url = self.admin_url = "sqlite:" + os.path.join(a.out, "locks.sqlite")
        elif faults & SERVER or a.private:
            self.require(SHARED_URL[a.backend][0])  # the server's packages are installed
            self.server = PRIVATE[a.backend](os.path.join(a.out, "server"))
            self.url, self.admin_url = self.server.url, self.server.admin_url
        else:
            var, admin = SHARED_URL[a.backend]
            self.require(var)
            self.url = os.environ[var]
            self.admin_url = os.environ.get(admin, self.url) if admin else self.url
        if a.backend.startswith("postgres") or a.backend == "mysql":
            subprocess.run([self.cli, "migrate", "--url", self.admin_url], check=True,
                           stdout=subprocess.DEVNULL)
        if a.backend.startswith("zookeeper") or a.backend == "zk-ensemble":
            # The hold lives as long as the session: make it as long as the lease.
            self.url = with_param(self.url, "session_timeout", f"{a.lease_ms}ms")
        for kv in a.param:  # backend options for the workers, e.g. mode=advisory
            self.url = with_param(self.url, *kv.split("=", 1))
        if faults & NETWORK:
            self.start_proxy()

    @staticmethod
    def require(var):
        """Skips (exit 77) when the backend's server URL is unset; fails under REQUIRE_ALL."""
        if os.environ.get(var):
            return
        if os.environ.get("SQLOCK_TEST_REQUIRE_ALL") == "1":
            sys.exit(f"chaos: {var} is unset and SQLOCK_TEST_REQUIRE_ALL=1")
        print(f"chaos: {var} is unset; skipped")
        sys.exit(77)

    def start_proxy(self):
        u = urllib.parse.urlsplit(self.url)
        self.proxy = subprocess.Popen(
            [os.path.join(self.a.build, "tests", "chaos", "sqlock_chaos_proxy"), u.hostname,
             str(u.port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = int(self.proxy.stdout.readline().split()[1])
        netloc = u.netloc.rsplit(":", 1)[0] + f":{port}"
        self.url = urllib.parse.urlunsplit(u._replace(netloc=netloc))

    def proxy_cmd(self, cmd):
        self.proxy.stdin.write(cmd + "\n")
        self.proxy.stdin.flush()
        self.proxy.stdout.readline()

    # ---- workers ----
    def spawn(self, skew=None):
        a = self.a
        self.spawned += 1
        seconds = max(1.0, (self.end_at - mono()) / 1e9) if self.end_at else a.seconds
        cmd = [self.worker, "--url", self.url, "--prefix", self.prefix, "--names", str(a.names),
               "--threads", str(a.threads), "--clients", str(a.clients), "--cycles",
               str(a.cycles), "--seconds", str(seconds), "--lease-ms", str(a.lease_ms),
               "--hold-us", str(a.hold_us), "--acquire-timeout-ms", str(a.acquire_timeout_ms),
               "--kind", a.kind, "--permits", str(a.permits),
               "--writers-percent", str(a.writers_percent),
               "--history", os.path.join(a.out, f"h-{self.spawned:03d}.txt"),
               "--store", os.path.join(a.out, "store")]
        env = dict(os.environ)
        if skew:
            env.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME=skew, DONT_FAKE_MONOTONIC="1")
        p = subprocess.Popen(cmd, env=env, stderr=open(os.path.join(a.out, "workers.err"), "a"))
        if skew:
            self.log("skew" + skew, pid=p.pid, condition=True)
        self.procs.append(p)
        self.history[p.pid] = cmd[cmd.index("--history") + 1]
        return p

    def victim(self):
        """A live worker, preferably one whose last recorded operation left it holding."""
        live = self.live()
        holding = []
        for p in live:
            try:
                with open(self.history[p.pid], "rb") as f:
                    f.seek(0, os.SEEK_END)
                    f.seek(max(0, f.tell() - 300))
                    last = f.read().splitlines()[-1].split()
                if len(last) > 4 and last[4] in (b"G", b"W", b"O"):
                    holding.append(p)
            except (OSError, IndexError):
                pass
        return random.choice(holding or live) if live else None

    def live(self):
        return [p for p in self.procs if p.poll() is None]

    def log(self, kind, start=None, end=None, **extra):
        rec = {"kind": kind, "start": start or mono(), "end": end, **extra}
        rec["end"] = rec["end"] or rec["start"]
        self.faults.write(json.dumps(rec) + "\n")
        self.faults.flush()

    # ---- faults ----
    def signal_all(self, pids, sig):
        for p in pids:
            try:
                os.kill(p, sig)
            except OSError:
                pass

    def apply(self, kind):
        lease = self.a.lease_ms / 1000
        if kind == "kill" and (p := self.victim()):
            t = mono()
            p.kill()
            p.wait()
            self.log(kind, t, pid=p.pid)
            self.spawn()
        elif kind == "stop" and (p := self.victim()):
            t = mono()
            p.send_signal(signal.SIGSTOP)
            time.sleep(lease * 1.5)
            p.send_signal(signal.SIGCONT)
            # SQLite: a process stopped inside a write transaction holds the database file's
            # write lock, and every other writer waits for its SIGCONT (the checker allows it).
            self.log(kind, t, mono(), pid=p.pid,
                     **({"blocks_store": True} if self.a.backend == "sqlite" else {}))
        elif kind in ("freeze-short", "freeze-long"):
            pids = self.server.pids()
            t = mono()
            self.signal_all(pids, signal.SIGSTOP)
            time.sleep(lease * (0.5 if kind == "freeze-short" else 2))
            self.signal_all(pids, signal.SIGCONT)
            self.log(kind, t, mono())
        elif kind == "restart":
            t = mono()
            self.server.restart()
            self.log(kind, t, mono())
        elif kind in ("minority", "majority"):
            size = len(self.server.nodes)  # Redlock: 2 or 3 of 5; an etcd cluster: 1 or 2 of 3
            count = (size - 1) // 2 if kind == "minority" else size // 2 + 1
            nodes = random.sample(self.server.nodes, count)
            t = mono()
            for n in nodes:
                n.kill()
            time.sleep(lease * 2)
            for n in nodes:
                n.start()
            self.log(kind, t, mono())
        elif kind in ("member-kill", "leader-kill"):
            lead = self.server.leader()
            if lead is None:
                return
            i = lead if kind == "leader-kill" else (lead + 1) % len(self.server.dirs)
            t = mono()
            self.server.kill_member(i)
            time.sleep(lease * 2)
            self.server.restart_member(i)
            self.log(kind, t, mono(), member=i + 1)
        elif kind in ("promote", "promote-lagging"):  # once: the standby becomes the primary
            if self.server.failed_over:
                return
            t = mono()
            self.server.failover(lag=lease if kind == "promote-lagging" else 0)
            self.log(kind, t, mono())
        elif kind == "blackhole":
            t = mono()
            self.proxy_cmd("blackhole on")
            time.sleep(lease * 2)
            self.proxy_cmd("blackhole off")
            self.log(kind, t, mono())
        elif kind == "lost-reply":
            # Whatever the workers send for half a lease is done by the server and never
            # answered (a ZooKeeper create, a hold's insert, a release); the connections end.
            t = mono()
            self.proxy_cmd("lose-replies on")
            time.sleep(lease * 0.5)
            self.proxy_cmd("lose-replies off")
            self.log(kind, t, mono())
        elif kind == "reset":
            t = mono()
            self.proxy_cmd("reset")
            self.log(kind, t)
        elif kind == "delay":
            t = mono()
            self.proxy_cmd(f"delay {int(self.a.lease_ms / 10)}")
            time.sleep(lease)
            self.proxy_cmd("delay 0")
            self.log(kind, t, mono())

    def expected_s(self, kind):
        """About how long apply(kind) takes: its sleeps, and a second for a server (re)start."""
        lease = self.a.lease_ms / 1000
        sleeps = {"stop": 1.5, "freeze-short": 0.5, "freeze-long": 2, "minority": 2,
                  "majority": 2, "member-kill": 2, "leader-kill": 2, "blackhole": 2,
                  "lost-reply": 0.5, "delay": 1, "promote-lagging": 1}
        starts = {"restart", "minority", "majority", "member-kill", "leader-kill", "promote",
                  "promote-lagging"}
        return lease * sleeps.get(kind, 0) + (1.0 if kind in starts else 0.0)

    # ---- the run ----
    def run(self):
        a = self.a
        faults = [f for f in a.faults if f != "skew"]
        skews = ["+10m", "-10m"] if "skew" in a.faults else []
        for i in range(a.procs):
            self.spawn(skews[i] if i < len(skews) else None)
        self.end_at = mono() + int(a.seconds * 1e9)
        if faults:
            time.sleep(min(2.0, a.seconds / 4))  # let the workers connect and contend
            plan = faults * a.rounds
            gap = a.seconds / (len(plan) + 1)
            last = self.end_at - 2e9  # no fault starts in the run's last 2 s
            for i, kind in enumerate(plan):
                if mono() > last or not self.live():
                    # Said, so that a profile too short for its faults shows.
                    print(f"chaos: not applied (the run ended first): {','.join(plan[i:])}")
                    break
                self.apply(kind)
                # A pause of half the run's share per fault (the long profile's runs end when
                # their cycles do, so its faults come that often), but no longer than the time
                # the remaining faults do not need, shared out evenly between the pauses after
                # each of them and the end: a fault that took longer than expected (a slow
                # restart) shortens the pauses after it instead of pushing the last faults past
                # the run's end.
                rest = plan[i + 1:]
                spare = (last - mono()) / 1e9 - sum(self.expected_s(k) for k in rest)
                if rest:
                    time.sleep(max(MIN_PAUSE_S, min(gap / 2, spare / (len(rest) + 1))))
        deadline = time.monotonic() + a.seconds + a.acquire_timeout_ms / 1000 + HANG_GRACE_S
        for p in self.procs:
            try:
                p.wait(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                self.log("worker-timeout", pid=p.pid)
                self.hung += 1

    def finish(self):
        a = self.a
        if self.proxy:
            self.proxy.stdin.close()
            self.proxy.wait()
        if a.backend != "memory":
            admin = self.server.admin_url if self.server else self.admin_url  # after failovers
            with open(os.path.join(a.out, "list.txt"), "w") as f:
                subprocess.run([self.worker, "--url", admin, "--prefix", self.prefix,
                                "--list"], stdout=f, check=True, timeout=60)
        else:  # in-process: nothing can be left once the workers ended
            with open(os.path.join(a.out, "list.txt"), "w") as f:
                f.write("rows 0\n")
        self.faults.close()
        # What the checker needs beyond the histories (read again by any later check).
        mark = 0 if "mode=advisory" in a.param else WRITER_MARK_MS.get(a.backend, 0)
        mark += NOTIFY_RECHECK_MS if mark else 0
        with open(os.path.join(a.out, "run.json"), "w") as f:
            json.dump({"backend": a.backend, "kind": a.kind, "writer_mark_ms": mark,
                       "expiry_slack_ms": EXPIRY_SLACK_MS.get(a.backend, 0)}, f)
        check = os.path.join(servers.REPO, "tests", "chaos", "check_history.py")
        rc = subprocess.run([sys.executable, check, a.out]).returncode
        if self.hung:
            # Every wait has a deadline: a worker still running two minutes past its run is a
            # hang (its threads' stacks are gone with it; rerun and attach gdb to see them).
            print(f"chaos: {self.hung} worker(s) still running {HANG_GRACE_S} s after the run "
                  "ended were killed: a call outlived its deadline")
            rc = rc or 1
        return rc

    def cleanup(self):
        for p in self.live():
            p.send_signal(signal.SIGCONT)
            p.kill()
        if self.server:
            self.server.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", required=True, choices=["memory", "sqlite", *SHARED_URL])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", required=True)
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--clients", type=int, default=0)
    ap.add_argument("--names", type=int, default=1)
    ap.add_argument("--cycles", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--lease-ms", type=int, default=2000)
    ap.add_argument("--hold-us", type=int, default=2000)
    ap.add_argument("--acquire-timeout-ms", type=int, default=30000)
    ap.add_argument("--kind", choices=["exclusive", "shared", "semaphore"], default="exclusive",
                    help="what the workers take: a mutex, a shared_mutex (readers and writers) "
                         "or a semaphore's permits")
    ap.add_argument("--permits", type=int, default=2, help="--kind semaphore: permits per name")
    ap.add_argument("--writers-percent", type=int, default=20,
                    help="--kind shared: share of cycles that take the lock exclusively")
    ap.add_argument("--faults", default="")
    ap.add_argument("--rounds", type=int, default=1, help="times the fault list is applied")
    ap.add_argument("--private", action="store_true", help="private server even without faults")
    ap.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="URL option for the workers (e.g. mode=advisory); repeatable")
    ap.add_argument("--figures", help="append a JSON line describing the run to this file")
    a = ap.parse_args()
    a.faults = [f for f in a.faults.split(",") if f]
    if any("=" not in kv for kv in a.param):
        ap.error("--param takes KEY=VALUE")
    unknown = set(a.faults) - HOLDER - SERVER - NETWORK
    if unknown:
        ap.error(f"unknown faults: {', '.join(sorted(unknown))}")
    if a.backend == "memory":
        a.procs, a.faults = 1, []  # one process by nature: no holder or server to fault
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    r = Run(a)

    def ended(sig, _frame):  # a CTest timeout or a closed terminal: still stop what was started
        raise SystemExit(128 + sig)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, ended)
    try:
        r.setup()
        r.run()
        rc = r.finish()
        if a.figures:
            with open(a.figures, "a") as f:
                f.write(json.dumps({"backend": a.backend, "kind": a.kind, "permits": a.permits,
                                    "faults": a.faults, "procs": a.procs,
                                    "threads": a.threads, "cycles": a.cycles, "params": a.param,
                                    "out": a.out, "rc": rc}) + "\n")
    finally:
        r.cleanup()
    params = "".join(f" {kv}" for kv in a.param)
    kind = a.kind + (f"/{a.permits}" if a.kind == "semaphore" else "")
    print(f"chaos: {a.backend}{params} {kind} faults={','.join(a.faults) or 'none'} -> {a.out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
