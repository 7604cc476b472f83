"""A kazoo lock the C++ tests drive line by line (tests/support/peer_process.hpp).

Usage: kazoo_peer.py HOSTS PATH KIND, KIND one of lock (Lock), read (ReadLock), write
(WriteLock). Commands on stdin, one answer line each:
  try        acquire(blocking=False)                  -> yes | no
  start      acquire() in a thread: answers queued once the node exists, then prints held
             (a line of its own) when the lock is obtained
  release    release()                                -> released
  children   the children of PATH, sorted             -> comma-separated names
  make NAME  an EPHEMERAL_SEQUENTIAL child NAME<seq> of PATH, made by hand (another recipe's
             node, e.g. Curator's)                    -> the child's name
  drop CHILD delete PATH/CHILD                        -> dropped
"""
import sys
import threading

from kazoo.client import KazooClient

hosts, path, kind = sys.argv[1], sys.argv[2], sys.argv[3]
zk = KazooClient(hosts=hosts)
zk.start(timeout=20)
make = {"lock": zk.Lock, "read": zk.ReadLock, "write": zk.WriteLock}[kind]
lock = make(path, "kazoo-peer")
out = threading.Lock()


def say(text):
    with out:
        print(text, flush=True)


def mine():
    return [c for c in zk.get_children(path) if c.startswith(lock.prefix)] if zk.exists(path) else []


say("ready")
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "try":
        say("yes" if lock.acquire(blocking=False) else "no")
    elif cmd[0] == "start":
        threading.Thread(target=lambda: lock.acquire() and say("held"), daemon=True).start()
        while not mine():
            threading.Event().wait(0.01)
        say("queued")
    elif cmd[0] == "release":
        lock.release()
        say("released")
    elif cmd[0] == "children":
        say(",".join(sorted(zk.get_children(path))) if zk.exists(path) else "")
    elif cmd[0] == "make":
        made = zk.create(path + "/" + cmd[1], b"", ephemeral=True, sequence=True, makepath=True)
        say(made[len(path) + 1:])
    elif cmd[0] == "drop":
        zk.delete(path + "/" + cmd[1])
        say("dropped")
    else:
        say("unknown")
