"""A redis-py Lock the C++ tests drive line by line (tests/support/peer_process.hpp).

Usage: redispy_peer.py HOST PORT NAME. Commands on stdin, one answer line each:
  try        acquire(blocking=False)            -> yes | no
  wait SECS  acquire(blocking_timeout=SECS)     -> yes | no
  release    release()                          -> released | not-owned
  token      the token of the hold              -> its hex, or none
The lock's lease (timeout) is 30 s.
"""
import sys

import redis
from redis.exceptions import LockError

host, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lock = redis.Redis(host=host, port=port).lock(name, timeout=30, sleep=0.01)
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "try":
        answer = "yes" if lock.acquire(blocking=False) else "no"
    elif cmd[0] == "wait":
        answer = "yes" if lock.acquire(blocking_timeout=float(cmd[1])) else "no"
    elif cmd[0] == "release":
        try:
            lock.release()
            answer = "released"
        except LockError:
            answer = "not-owned"
    elif cmd[0] == "token":
        token = lock.local.token
        answer = token.decode() if token else "none"
    else:
        answer = "unknown"
    print(answer, flush=True)
