#!/usr/bin/env python3
"""Two builds of the sqlock command side by side, in one run: `sqlock bench` per store and mode
and `sqlock run NAME -- true` start-up, each measured with the BEFORE and the AFTER build in
turn (the order alternating by round), so that both meet the same machine. For each it prints the
median pairs/s and the median client CPU per pair (user + system time of the bench process over
its pairs): the wall figure moves with the machine's load, the CPU figure much less, and the CPU
figure is what a change of the client's code path changes.

  scripts/bench/before_after.py BEFORE_BUILD AFTER_BUILD [--rounds 5] [--seconds 3] [--only RE]

Server URLs come from the environment (source $SQLOCK_RUN_DIR/env.sh after scripts/servers.sh
start). Each build gets schemas of its own where a store has a schema (PostgreSQL schemas
bench_before / bench_after in the test database; MariaDB databases of the same names, created
through the server's socket as root), since the two builds may expect different versions."""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def sqlock(build):
    return os.path.join(build, "bin", "sqlock")


def mysql_root(sql):
    sock = os.environ["SQLOCK_TEST_MYSQL_SOCKET"]
    subprocess.run(["mysql", "-S", sock, "-u", "root", "-e", sql], check=True)


def cases(tmp):
    """(label, url of a side, extra bench arguments); url(side) gives that side's URL."""
    env = os.environ.get
    out = [("memory", lambda s: "memory:", []),
           ("sqlite pessimistic", lambda s: f"sqlite:{tmp}/{s}.db", [])]
    if env("SQLOCK_TEST_POSTGRES_URL"):
        pg = env("SQLOCK_TEST_POSTGRES_URL")
        for mode in ("pessimistic", "optimistic", "advisory"):
            out.append((f"postgres {mode}",
                        lambda s, m=mode: f"{pg}?schema=bench_{s}&mode={m}", []))
    if env("SQLOCK_TEST_MYSQL_URL"):
        my = re.sub(r"/sqlock$", "", env("SQLOCK_TEST_MYSQL_URL"))
        for mode in ("pessimistic", "advisory"):
            out.append((f"mariadb {mode}", lambda s, m=mode: f"{my}/bench_{s}?mode={m}", []))
    if env("SQLOCK_TEST_REDIS_URL"):
        out.append(("redis", lambda s: env("SQLOCK_TEST_REDIS_URL"), []))
    if env("SQLOCK_TEST_ZOOKEEPER_URL"):
        out.append(("zookeeper", lambda s: env("SQLOCK_TEST_ZOOKEEPER_URL"), []))
    if env("SQLOCK_TEST_ETCD_URL"):
        # The JSON gateway on both sides: the only transport of builds older than the gRPC one,
        # which do not know the option (BEFORE_ETCD_OPTION="" for such a build).
        etcd, opt = env("SQLOCK_TEST_ETCD_URL"), env("BEFORE_ETCD_OPTION", "?transport=json")
        out.append(("etcd (json)", lambda s: etcd + (opt if s == "before" else "?transport=json"),
                    []))
    return out


def prepare(builds, tmp):
    if os.environ.get("SQLOCK_TEST_MYSQL_URL"):
        user = re.match(r"mysql://([^:@]+)", os.environ["SQLOCK_TEST_MYSQL_URL"]).group(1)
        for side in builds:
            mysql_root(f"CREATE DATABASE IF NOT EXISTS bench_{side}; "
                       f"GRANT ALL ON bench_{side}.* TO '{user}'@'127.0.0.1'")
    for side, build in builds.items():
        for label, url, _ in cases(tmp):
            if label.startswith(("postgres pessimistic", "mariadb pessimistic", "sqlite")):
                subprocess.run([sqlock(build), "migrate", "--url", url(side)], check=True,
                               stdout=subprocess.DEVNULL)


def bench(build, url, seconds, extra):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sqlock(build), "bench", "-u", url, "--duration", f"{seconds}s", "--json",
                        *extra], check=True, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = json.loads(p.stdout.splitlines()[0])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r["pairs_per_sec"], cpu / max(1, r["pairs"]) * 1e6


def startup(build, url, n=15):
    times = []
    for i in range(n):
        t0 = time.monotonic()
        subprocess.run([sqlock(build), "run", "-u", url, f"bench-start-{i}", "--", "true"],
                       check=True, stdout=subprocess.DEVNULL)
        times.append((time.monotonic() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    builds = {"before": a.before, "after": a.after}
    with tempfile.TemporaryDirectory() as tmp:
        prepare(builds, tmp)
        print(f"load average at start: {os.getloadavg()[0]:.2f}; {a.rounds} rounds of "
              f"{a.seconds:g} s per side, the order alternating")
        print(f"{'store and mode':<22}{'pairs/s before':>16}{'after':>10}{'ratio':>7}"
              f"{'CPU µs/pair before':>20}{'after':>8}{'ratio':>7}")
        for label, url, extra in cases(tmp):
            if a.only and not re.search(a.only, label):
                continue
            got = {s: ([], []) for s in builds}
            for r in range(a.rounds):
                order = list(builds) if r % 2 == 0 else list(reversed(builds))
                for side in order:
                    rate, cpu = bench(builds[side], url(side), a.seconds, extra)
                    got[side][0].append(rate)
                    got[side][1].append(cpu)
            med = {s: (statistics.median(v[0]), statistics.median(v[1])) for s, v in got.items()}
            b, f = med["before"], med["after"]
            print(f"{label:<22}{b[0]:>16.0f}{f[0]:>10.0f}{f[0] / b[0]:>7.2f}"
                  f"{b[1]:>20.1f}{f[1]:>8.1f}{f[1] / b[1]:>7.2f}", flush=True)
        for label, url in (("sqlite", lambda s: f"sqlite:{tmp}/{s}.db"),):
            ms = {s: [] for s in builds}
            for r in range(a.rounds):
                for side in (builds if r % 2 == 0 else reversed(list(builds))):
                    ms[side].append(startup(builds[side], url(side)))
            b, f = statistics.median(ms["before"]), statistics.median(ms["after"])
            print(f"`sqlock run -- true` on {label}: {b:.1f} ms before, {f:.1f} ms after "
                  f"(median of {a.rounds} rounds of 15)")
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
