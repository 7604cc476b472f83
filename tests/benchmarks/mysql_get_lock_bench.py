#!/usr/bin/python3
"""Python MySQLdb (Debian python3-mysqldb) running SELECT GET_LOCK(name, 0) and
SELECT RELEASE_LOCK(name) on one connection for a given time; prints pairs per second.
A reference for the MySQL advisory mode (scripts/bench/mysql.sh).
Usage: mysql_get_lock_bench.py mysql://user:pw@host:port/db [SECONDS]"""
import sys
import time
import urllib.parse

import MySQLdb


def main():
    url = urllib.parse.urlparse(sys.argv[1])
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    conn = MySQLdb.connect(host=url.hostname or "127.0.0.1", port=url.port or 3306,
                           user=urllib.parse.unquote(url.username or ""),
                           passwd=urllib.parse.unquote(url.password or ""),
                           db=url.path.lstrip("/"))
    cur = conn.cursor()
    name = "py-bench-%d" % conn.thread_id()
    pairs = 0
    start = time.monotonic()
    end = start + secs
    while time.monotonic() < end:
        cur.execute("SELECT GET_LOCK(%s, 0)", (name,))
        got = cur.fetchone()[0]
        cur.execute("SELECT RELEASE_LOCK(%s)", (name,))
        if got != 1 or cur.fetchone()[0] != 1:
            sys.exit("GET_LOCK or RELEASE_LOCK did not answer 1")
        pairs += 1
    took = time.monotonic() - start
    print("python MySQLdb GET_LOCK+RELEASE_LOCK pairs/s %.0f (%d pairs in %.2f s)"
          % (pairs / took, pairs, took))


if __name__ == "__main__":
    main()
