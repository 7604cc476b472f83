"""`sqlock doctor --json` against every server of scripts/servers.sh (/tmp/sqlock-servers/env.sh):
PostgreSQL (direct, pgbouncer in transaction, statement and session pooling, the hot standby),
the Patroni cluster (--patroni), MariaDB, Redis, Redlock, ZooKeeper and etcd (single and cluster), SQLite. Checks each report's
findings and exit status (0 safe, 1 unsafe, 69 unreachable, 77 refused credentials), that no
password is printed, and that a lock command on the standby exits 73 naming it. A server whose
URL variable is unset is skipped (a failure under SQLOCK_TEST_REQUIRE_ALL=1)."""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from checks import Checks

sqlock = sys.argv[1]
check = Checks()
require_all = os.environ.get("SQLOCK_TEST_REQUIRE_ALL") == "1"


def url_of(var):
    value = os.environ.get(var, "")
    if not value:
        if require_all:
            check(f"{var} set under SQLOCK_TEST_REQUIRE_ALL", True, False)
        else:
            print(f"skip: {var} unset")
    return value


def with_params(url, params):
    return url + ("&" if "?" in url else "?") + params if params else url


def doctor(url, args=()):
    p = subprocess.run([sqlock, "doctor", "--json", url, *args], capture_output=True, text=True,
                       timeout=120)
    return p


def credentials_of(url):
    rest = url.split("://", 1)[-1]
    userinfo = rest.split("@", 1)[0] if "@" in rest else ""
    return userinfo.split(":", 1) if ":" in userinfo else ["", ""]


def expect(what, url, code, findings, args=()):
    """Runs doctor on `url` (with `args`); `findings` maps a check to (status, text the message
    contains)."""
    p = doctor(url, args)
    check(f"{what}: exit", code, p.returncode)
    user, secret = credentials_of(url)
    if secret:
        printed = p.stdout + p.stderr
        # The test roles' passwords may equal their names, which are printed.
        check(f"{what}: no password printed", False,
              f":{secret}@" in printed or (secret != user and secret in printed))
    if p.returncode not in (0, 1):
        return p
    report = json.loads(p.stdout)
    check(f"{what}: 'safe' matches the exit", p.returncode == 0, report["safe"])
    got = {f["check"]: f for f in report["findings"]}
    for name, (status, text) in findings.items():
        f = got.get(name)
        if f is None:
            check(f"{what}: finding {name}", "present", f"missing in {sorted(got)}")
            continue
        check(f"{what}: {name} status", status, f["status"])
        if text not in f["message"]:
            check(f"{what}: {name} says '{text}'", text, f["message"])
    return p


with tempfile.TemporaryDirectory() as d:
    expect("sqlite", f"sqlite:{d}/locks.db", 0,
           {"store": ("ok", "sqlite"), "local": ("ok", "local file system"),
            "journal": ("ok", "wal"), "schema": ("ok", "version")})

pg = url_of("SQLOCK_TEST_POSTGRES_URL")
if pg:
    subprocess.run([sqlock, "migrate", "--url", pg], check=True, capture_output=True)
    # An asynchronous standby streams from it when the standby is started.
    role = (("warn", "primary (accepts writes), 1 streaming standby(s), 0 synchronous")
            if os.environ.get("SQLOCK_TEST_POSTGRES_STANDBY_URL") else ("ok", "primary"))
    expect("postgres", pg, 0,
           {"server": ("ok", "PostgreSQL 15"), "role": role,
            "pooler": ("ok", "direct connection"), "schema": ("ok", "the latest"),
            "clock": ("ok", "round trip"), "connections": ("ok", "up to 8 connections"),
            "timeouts": ("ok", "")})
    expect("postgres max_connections=3", with_params(pg, "max_connections=3"), 0,
           {"connections": ("ok", "up to 3 connections")})
    expect("postgres advisory", with_params(pg, "mode=advisory"), 0, {"pooler": ("ok", "")})
    bad = pg.replace(":sqlock_owner@", ":wrong-pw@")
    expect("postgres bad password", bad, 77, {})
    expect("postgres unreachable", pg.replace(":25432/", ":1/"), 69, {})
app = url_of("SQLOCK_TEST_POSTGRES_APP_URL")
if app:
    expect("postgres app role", app, 0, {"schema": ("ok", "EXECUTE granted")})

tx = url_of("SQLOCK_TEST_PGBOUNCER_TX_URL")
if tx:
    expect("pgbouncer transaction", tx, 0, {"pooler": ("ok", "in transaction pooling")})
    expect("pgbouncer transaction, advisory", with_params(tx, "mode=advisory"), 1,
           {"pooler": ("unsafe", "in transaction pooling")})
stmt = url_of("SQLOCK_TEST_PGBOUNCER_STMT_URL")
if stmt:
    expect("pgbouncer statement", stmt, 0, {"pooler": ("ok", "in statement pooling")})
session = url_of("SQLOCK_TEST_PGBOUNCER_SESSION_URL")
if session:
    expect("pgbouncer session", session, 0, {"pooler": ("ok", "in session pooling")})
    expect("pgbouncer session, advisory declared",
           with_params(session, "mode=advisory&pooler=session"), 0,
           {"pooler": ("ok", "in session pooling")})
    expect("pgbouncer session, advisory undeclared", with_params(session, "mode=advisory"), 1,
           {"pooler": ("error", "add pooler=session")})

standby = url_of("SQLOCK_TEST_POSTGRES_STANDBY_URL")
if standby:
    port = standby.rsplit(":", 1)[1].split("/")[0]
    expect("postgres standby", standby, 1,
           {"role": ("unsafe", f"127.0.0.1:{port} is a hot standby (read-only)")})
    p = subprocess.run([sqlock, "run", "-u", standby, "doctor-standby", "--", "true"],
                       capture_output=True, text=True, timeout=60)
    check("run on the standby: exit 73", 73, p.returncode)
    check("run on the standby: names it", True,
          f"127.0.0.1:{port} is a hot standby" in p.stderr)

patroni = url_of("SQLOCK_TEST_PATRONI_URL")
if patroni:
    subprocess.run([sqlock, "migrate", "--url", patroni], check=True, capture_output=True)
    rest = os.environ["SQLOCK_TEST_PATRONI_REST_URL"]
    # The failover test (same resource lock) leaves the cluster electing a synchronous standby
    # again for a few seconds: wait for a settled cluster before checking the report.
    for _ in range(60):
        p = doctor(patroni, ["--patroni", rest])
        if p.returncode == 0:
            break
        time.sleep(0.5)
    expect("patroni", patroni, 0,
           {"patroni": ("ok", "Patroni cluster of 3 members"), "role": ("ok", "primary")},
           ["--patroni", rest])
    # Leave out a replica: the failover test may have made any member the leader, and a URL
    # without the leader has no writable host at all.
    with urllib.request.urlopen(rest + "/cluster", timeout=10) as answer:
        members = json.load(answer)["members"]
    replica = next(m for m in members if m["role"] != "leader")
    two_hosts = patroni.replace(f"127.0.0.1:{replica['port']},", "").replace(
        f",127.0.0.1:{replica['port']}", "")
    # A warning: the locks are safe, a failover to the member left out is not followed.
    expect("patroni, a URL without one member", two_hosts, 0,
               {"patroni": ("warn", "the URL does not list")}, ["--patroni", rest])
    expect("patroni, no REST API there", patroni, 1,
           {"patroni": ("error", "no answer")}, ["--patroni", "http://127.0.0.1:1"])

my = url_of("SQLOCK_TEST_MYSQL_URL")
if my:
    subprocess.run([sqlock, "migrate", "--url", my], check=True, capture_output=True)
    expect("mariadb", my, 0,
           {"server": ("ok", "MariaDB"), "role": ("ok", "writable"),
            "cluster": ("ok", "no Galera"), "schema": ("ok", "the latest"),
            "clock": ("ok", "round trip"), "connections": ("ok", "max_connections"),
            "timeouts": ("ok", "overridden by sqlock's sessions")})
    expect("mariadb advisory", with_params(my, "mode=advisory"), 0, {"cluster": ("ok", "")})

redis = url_of("SQLOCK_TEST_REDIS_URL")
if redis:
    # The test server persists nothing (--save '' --appendonly no).
    expect("redis", redis, 0,
           {"server": ("ok", "role master"), "replication": ("ok", "no replicas"),
            "persistence": ("warn", "nothing is persisted"), "clock": ("ok", "")})
redlock = url_of("SQLOCK_TEST_REDLOCK_URL")
if redlock:
    expect("redlock", redlock, 0, {"quorum": ("ok", "5 of 5 masters answer, quorum 3")})

zk = url_of("SQLOCK_TEST_ZOOKEEPER_URL")
if zk:
    expect("zookeeper", zk, 0, {"server": ("ok", "ZooKeeper at"), "ensemble": ("warn", "1 server")})
zke = url_of("SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_URL")
if zke:
    expect("zookeeper ensemble", zke, 0, {"ensemble": ("ok", "3 voting members")})

etcd = url_of("SQLOCK_TEST_ETCD_URL")
if etcd:
    expect("etcd", etcd, 0, {"server": ("ok", "leader"), "members": ("warn", "1 voting member")})
etcdc = url_of("SQLOCK_TEST_ETCD_CLUSTER_URL")
if etcdc:
    expect("etcd cluster", etcdc, 0, {"members": ("ok", "quorum 2: locks survive the loss of 1 member")})

sys.exit(check.finish("doctor"))
