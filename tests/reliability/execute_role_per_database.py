#!/usr/bin/env python3
"""The EXECUTE-only role is per database: two databases of one private PostgreSQL cluster,
each migrated with its own execute_role; the application role of database A can lock and
force-release in A but can neither force-release nor take a lock in database B.

Usage: execute_role_per_database.py BUILD_DIR
Starts its own cluster (scripts/chaos/servers.py) on a private port, never the shared one.
Skips (77) when SQLOCK_TEST_POSTGRES_URL is unset (no PostgreSQL here), fails under
SQLOCK_TEST_REQUIRE_ALL=1."""
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts", "chaos"))
import servers  # noqa: E402


def main():
    if not os.environ.get("SQLOCK_TEST_POSTGRES_URL"):
        if os.environ.get("SQLOCK_TEST_REQUIRE_ALL") == "1":
            sys.exit("SQLOCK_TEST_POSTGRES_URL unset and SQLOCK_TEST_REQUIRE_ALL=1")
        print("SQLOCK_TEST_POSTGRES_URL unset: skipped")
        return 77
    cli = os.path.join(sys.argv[1], "bin", "sqlock")
    run_dir = tempfile.mkdtemp(prefix="sqlock-roles-")
    os.chmod(run_dir, 0o755)
    pg = servers.Postgres(run_dir)
    failures = []
    try:
        def psql(sql, db="postgres"):
            cmd = [os.path.join(pg.bin, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h",
                   os.path.join(run_dir, "postgres"), "-p", str(pg.port), "-U", "postgres",
                   "-d", db, "-tA", "-c", sql]
            if os.getuid() == 0:
                cmd = ["runuser", "-u", "postgres", "--"] + cmd
            return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()

        def url(user, db, extra=""):
            return f"postgresql://{user}:{user}@127.0.0.1:{pg.port}/{db}{extra}"

        def sqlock(*args):
            return subprocess.run([cli, *args], capture_output=True, text=True)

        psql("CREATE DATABASE sqlock_b OWNER sqlock_owner")
        psql("CREATE ROLE app_a LOGIN PASSWORD 'app_a'")
        psql("CREATE ROLE app_b LOGIN PASSWORD 'app_b'")
        for db, role in (("sqlock", "a_locks"), ("sqlock_b", "b_locks")):
            r = sqlock("migrate", "--url", url("sqlock_owner", db, f"?execute_role={role}"))
            if r.returncode != 0:
                sys.exit(f"migrate of {db} failed: {r.stderr}")
        psql("GRANT a_locks TO app_a")
        psql("GRANT b_locks TO app_b")

        # A lock held in B by B's application role.
        held = "SELECT fence FROM sqlock.acquire_pessimistic('victim', 'owner-b', 600000, 'test')"
        psql(f"SET ROLE app_b; {held}", db="sqlock_b")

        r = sqlock("release", "--force", "--url", url("app_a", "sqlock_b"), "victim")
        if r.returncode == 0:
            failures.append("app role of A force-released a lock in B")
        elif "permission denied" not in (r.stdout + r.stderr):
            failures.append(f"A in B failed, but not for permission: {r.stderr.strip()}")
        r = sqlock("list", "--url", url("app_b", "sqlock_b"))
        if "victim" not in r.stdout:
            failures.append(f"the lock in B is gone: {r.stdout} {r.stderr}")
        r = sqlock("run", "--url", url("app_a", "sqlock_b"), "--wait", "0", "--lease", "5s",
                   "other", "--", "true")
        if r.returncode == 0:
            failures.append("app role of A took a lock in B")

        # Controls: each role works in its own database.
        r = sqlock("run", "--url", url("app_a", "sqlock"), "--lease", "5s", "mine", "--", "true")
        if r.returncode != 0:
            failures.append(f"app role of A cannot lock in A: {r.stderr.strip()}")
        r = sqlock("release", "--force", "--url", url("app_b", "sqlock_b"), "victim")
        if r.returncode != 0:
            failures.append(f"app role of B cannot force-release in B: {r.stderr.strip()}")
        # The default-named role from servers.sh (sqlock_app IN ROLE sqlock_execute) has nothing.
        r = sqlock("list", "--url", url("sqlock_app", "sqlock"))
        if r.returncode == 0:
            failures.append("a member of the default-named role can still list in A")
    finally:
        pg.stop()
    for f in failures:
        print("FAIL", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
