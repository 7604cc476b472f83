#!/usr/bin/env python3
"""Checks the histories of one chaos run (tests/chaos/history.hpp has the line format).

Usage: check_history.py RUN_DIR [--json] [--writer-mark-ms MS]
RUN_DIR holds h-*.txt (one history per worker process), store/ (the fenced store's per-name
logs), faults.jsonl (the faults the driver injected, CLOCK_MONOTONIC ns), list.txt (the
locks left at the end, from `sqlock_chaos_worker --list`) and run.json (the driver's settings
the checker uses: writer_mark_ms, the default of --writer-mark-ms). Prints the figures and every
violation; exits 1 when there is one.

Holds are of three kinds (the G line's last field; "exclusive" when absent): exclusive (a
mutex, or a shared_mutex's writer), shared (a shared_mutex's reader) and permit/N (one of a
semaphore's N permits). A hold is *confirmed* when it was never found lost: the verify step
(renew(), or the loss signal for a shared_mutex) said held, no loss callback, its release did
not find it lost, and its process was not faulted during it. Its interval is [acquired, verify
started] - a sub-interval of the real hold on every backend.

Rules:
  exclusion  a confirmed exclusive hold overlaps no other confirmed hold of its name, of any
             kind; a confirmed shared hold overlaps no confirmed permit (kinds on one name
             exclude each other).
  permits    at no instant more than N confirmed permit/N holds of one name.
  fences     a hold acquired after another hold of the name was granted has a higher fence
             (every kind: each grant takes a new fence of the name), and no two holds of a
             name (two owners) share a fence. In grant order too: of two confirmed holds that
             exclude each other (one exclusive), the one whose interval comes first has the
             lower fence, even when the later one's acquire began first (their real holds
             cannot overlap, so the earlier interval's hold was granted first).
  writes     the store's log of accepted writes never goes down in fence; every accepted write
             in a history is in the store log and vice versa (bar a writer killed mid-line).
             Only exclusive holds write.
  reads      a confirmed shared hold's read of the store saw no fence at or above its own (a
             write of a writer granted after it, while it held).
  takeover   a hold ended by a fault (holder SIGKILL/SIGSTOP past its lease; server freeze,
             restart or network cut) is followed by another holder within lease + 1 s of
             the fault (holder faults) or of the fault's end (server faults), plus the
             server's own expiry slack (run.json's expiry_slack_ms: ZooKeeper ends a session up
             to one tickTime after its timeout), for each class of
             request that was waiting (readers; every other kind); a server fault that begins
             within that bound moves its start to its own end, and a holder fault of another
             process that was waiting for the name (a waiter ahead in a fair queue keeps the
             others out until its own lease or session ends) moves it to that fault's start.
             With readers in the run the
             bound is max(lease, --writer-mark-ms) + 1 s: a writer that dies while waiting
             keeps new readers out for its mark's life (Redis 3 s, SQL rows 5 s), and a
             waiting reader notices its end up to notify_recheck (1 s) later. A stopped
             process that may hold the store's only write lock (a fault marked blocks_store:
             SQLite, one database file locked by whoever writes) keeps every writer out until
             it runs again: then the next holder may also come within 1 s of its SIGCONT.
  orphans    no locks left under the run's prefix at the end.
"""
import argparse
import bisect
import collections
import glob
import json
import os
import sys

GRACE_NS = 1_000_000_000


class Hold:
    __slots__ = ("pid", "thread", "client", "name", "fence", "owner", "acq_start", "acq_end",
                 "kind", "permits", "write", "read", "verify_start", "verified", "rel_start",
                 "rel_end", "rel_lost", "lost")

    def __init__(self, pid, thread, client, name, fence, owner, start, end, kind="exclusive"):
        self.pid, self.thread, self.client, self.name = pid, thread, client, name
        self.fence, self.owner, self.acq_start, self.acq_end = fence, owner, start, end
        self.kind, _, n = kind.partition("/")  # exclusive | shared | permit (of n)
        self.permits = int(n) if n else 0
        self.write = self.read = None
        self.verify_start = self.rel_start = self.rel_end = None
        self.verified = False
        self.rel_lost = False
        self.lost = False


def read_histories(run):
    holds, attempts, losses, procs = [], collections.Counter(), [], {}
    failed_attempts = []  # (name, pid, start, end, shared) of attempts that timed out or failed
    for path in sorted(glob.glob(os.path.join(run, "h-*.txt"))):
        pid, ended, lease = None, False, None
        counters = {}
        open_hold = {}
        with open(path) as f:
            for line in f:
                if line.startswith("#"):
                    p = line.split()
                    if p[1] == "pid":
                        pid, lease = int(p[2]), int(p[4]) * 1_000_000
                    elif p[1] == "end":
                        ended = True
                    elif p[1] == "counter" and len(p) == 4:  # a backend's own count
                        counters[p[2]] = int(p[3])
                    continue
                p = line.split()
                if len(p) < 6:
                    continue  # torn last line of a killed process
                start, end, thread, client, ev, name = (int(p[0]), int(p[1]), int(p[2]),
                                                        int(p[3]), p[4], p[5])
                key = (thread, name)
                if ev == "G":
                    h = Hold(pid, thread, client, name, int(p[6]), p[7], start, end, *p[8:9])
                    holds.append(h)
                    open_hold[key] = h
                    attempts["granted"] += 1
                elif ev in "TE":
                    attempts["timeouts" if ev == "T" else "errors"] += 1
                    if key not in open_hold:  # a writer's unless the line says shared
                        failed_attempts.append((name, pid, start, end, p[6:7] == ["shared"]))
                elif ev == "W" and key in open_hold:
                    open_hold[key].write = (start, end, int(p[6]), p[7] == "accepted",
                                            int(p[9]))
                elif ev == "O" and key in open_hold:
                    open_hold[key].read = (start, end, int(p[7]))
                elif ev == "V" and key in open_hold:
                    open_hold[key].verify_start = start
                    open_hold[key].verified = p[6] == "ok"
                elif ev == "R" and key in open_hold:
                    h = open_hold.pop(key)
                    h.rel_start, h.rel_end, h.rel_lost = start, end, p[6] == "lost"
                elif ev == "L":
                    losses.append((pid, client, name, start))
        procs[pid] = {"ended": ended, "lease": lease, "path": path, "counters": counters}
    return holds, attempts, losses, procs, failed_attempts


def read_faults(run):
    path = os.path.join(run, "faults.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def mark_lost(holds, losses, faults):
    by_key = collections.defaultdict(list)
    for h in holds:
        by_key[(h.pid, h.client, h.name)].append(h)
    for v in by_key.values():
        v.sort(key=lambda h: h.acq_end)
    for pid, client, name, t in losses:
        v = by_key.get((pid, client, name), [])
        i = bisect.bisect_right([h.acq_end for h in v], t) - 1
        if i >= 0:
            v[i].lost = True
    holder_faults = collections.defaultdict(list)
    for f in faults:
        if f.get("pid") and not f.get("condition"):
            holder_faults[f["pid"]].append((f["start"], f.get("end") or f["start"]))
    for h in holds:
        if not h.verified or h.rel_lost or h.rel_end is None:
            h.lost = True
        for s, e in holder_faults.get(h.pid, []):
            if h.acq_end <= e and (h.rel_end is None or h.rel_end >= s):
                h.lost = True


def kind_of(h):
    return h.kind + (f"/{h.permits}" if h.permits else "")


def holder(h):
    return f"{h.pid}.{h.thread} ({kind_of(h)}, fence {h.fence})"


def check_bounds(holds, out):
    """exclusion and permits: a sweep over the confirmed holds' intervals of each name; returns
    the most confirmed holds of one name seen at once."""
    by_name = collections.defaultdict(list)
    for h in holds:
        if not h.lost:
            by_name[h.name].append(h)
    most = 0
    for name, v in by_name.items():
        # Ends before starts at one instant: intervals that only touch do not overlap.
        events = sorted([(h.verify_start, 0, i) for i, h in enumerate(v)] +
                        [(h.acq_end, 1, i) for i, h in enumerate(v)])
        active = {}
        for t, starts, i in events:
            if not starts:
                active.pop(i, None)
                continue
            h = v[i]
            others = list(active.values())
            clash = next((o for o in others if "exclusive" in (h.kind, o.kind) or
                          (h.kind != o.kind)), None)
            if clash is not None:
                out.append(f"exclusion: {name} held by {holder(clash)} until "
                           f"{clash.verify_start} and by {holder(h)} from {h.acq_end}")
            elif h.kind == "permit" and len(others) + 1 > h.permits:
                out.append(f"permits: {name} held by {len(others) + 1} permits of "
                           f"{h.permits} at {h.acq_end}: " +
                           ", ".join(holder(o) for o in others + [h]))
            active[i] = h
            most = max(most, len(active))
    return most


def check_fences(holds, out):
    by_name = collections.defaultdict(list)
    for h in holds:
        if h.fence:
            by_name[h.name].append(h)
    for name, v in by_name.items():
        ends = sorted(v, key=lambda h: h.acq_end)
        i, best = 0, None
        for h in sorted(v, key=lambda h: h.acq_start):
            while i < len(ends) and ends[i].acq_end < h.acq_start:
                if best is None or ends[i].fence > best.fence:
                    best = ends[i]
                i += 1
            if best is not None and h.fence <= best.fence:
                out.append(f"fences: {name} hold of {h.pid}.{h.thread} got fence {h.fence}, "
                           f"not above {best.fence} granted earlier to {best.pid}.{best.thread}")
        check_grant_order(name, v, out)
        first = {}
        for h in v:
            o = first.setdefault(h.fence, h)
            if o.owner != h.owner:
                out.append(f"fences: {name} fence {h.fence} granted to two holds: {holder(o)} "
                           f"and {holder(h)}")


def check_grant_order(name, v, out):
    """The fences rule in grant order: confirmed holds of `name` (with their fences) that exclude
    each other, ordered by their intervals ([acquired, verify started])."""
    confirmed = [h for h in v if not h.lost and h.verify_start is not None]
    ended = sorted(confirmed, key=lambda h: h.verify_start)
    i, best, best_exclusive = 0, None, None
    for h in sorted(confirmed, key=lambda h: h.acq_end):
        while i < len(ended) and ended[i].verify_start < h.acq_end:
            e = ended[i]
            if best is None or e.fence > best.fence:
                best = e
            if e.kind == "exclusive" and (best_exclusive is None or
                                          e.fence > best_exclusive.fence):
                best_exclusive = e
            i += 1
        # An exclusive hold comes after every hold whose interval ended before it began; any
        # hold comes after the exclusive ones that did.
        before = best if h.kind == "exclusive" else best_exclusive
        if before is not None and before is not h and h.fence <= before.fence:
            out.append(f"fences: {name} hold of {holder(h)} granted after the hold of "
                       f"{holder(before)} (whose interval ended at {before.verify_start}, "
                       f"before {h.acq_end}) has a fence not above it")


def check_reads(holds, out):
    for h in holds:
        if h.read and not h.lost and h.fence and h.read[2] >= h.fence:
            out.append(f"reads: {h.name} reader {holder(h)} saw fence {h.read[2]} written "
                       f"at {h.read[0]}, while it held")


def check_writes(run, holds, procs, out):
    store_writes = {}
    stale = 0
    for path in glob.glob(os.path.join(run, "store", "*.log")):
        name = os.path.basename(path)[:-4]
        last = 0
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) != 3:
                    continue
                t, fence = int(p[0]), int(p[1])
                if fence < last:
                    stale += 1
                    out.append(f"writes: {name} store accepted fence {fence} after {last}")
                last = max(last, fence)
                store_writes[(name, t, fence)] = p[2]
    seen = set()
    for h in holds:
        if h.write and h.write[3]:
            k = (h.name, h.write[4], h.write[2])
            if k not in store_writes:
                out.append(f"writes: accepted write of {h.pid}.{h.thread} fence {h.fence} "
                           f"missing from the store log")
            seen.add(k)
    for k, writer in store_writes.items():
        pid = int(writer.split(".")[0])
        if k not in seen and procs.get(pid, {}).get("ended", False):
            out.append(f"writes: store accepted fence {k[2]} from {writer}, absent from its history")
    return len(store_writes), stale


def waited_out(name, t0, fault, faults, waits, bound_ns):
    """When the takeover after `fault` on `name` is counted from: `t0`, or later when another
    process that was waiting for `name` met a holder fault (killed, stopped) before the bound
    ran out. In a fair queue (etcd, ZooKeeper) a waiter ahead of the others keeps them waiting
    until its own lease or session ends, which the bound then counts from that fault."""
    for g in sorted(faults, key=lambda x: x["start"]):
        if not g.get("pid") or g.get("condition") or g["pid"] == fault.get("pid"):
            continue
        if not t0 < g["start"] <= t0 + bound_ns + GRACE_NS:
            continue
        if any(s <= g["start"] < e and p == g["pid"] for s, e, p, _ in waits[name]):
            t0 = g["start"]
    return t0


def check_takeover(holds, faults, failed, bound_ns, out):
    """bound_ns: how long a fault may keep a waiter out (lease, or a writer mark that outlives
    a dead waiting writer) - GRACE_NS is added."""
    # name -> (granted, pid, shared) of every hold; (start, end, pid, shared) of every attempt
    grants = collections.defaultdict(list)
    waits = collections.defaultdict(list)
    for h in holds:
        grants[h.name].append((h.acq_end, h.pid, h.kind == "shared"))
        waits[h.name].append((h.acq_start, h.acq_end, h.pid, h.kind == "shared"))
    for name, pid, s, e, shared in failed:
        waits[name].append((s, e, pid, shared))
    for v in grants.values():
        v.sort()
    outages = sorted((f["start"], f["end"]) for f in faults
                     if not f.get("pid") and not f.get("condition"))
    worst = 0
    for f in faults:
        if f.get("condition"):
            continue
        if f.get("pid"):  # holder fault: holds of that process open at the fault
            t0 = f["start"]
            ended = [h for h in holds if h.pid == f["pid"] and h.acq_end <= t0 and
                     (h.rel_start is None or h.rel_start > t0)]
        else:  # server fault: holds lost while it lasted; clock starts when it ends
            t0 = f.get("end") or f["start"]
            ended = [h for h in holds if h.lost and h.acq_end <= t0 and
                     (h.rel_end is None or h.rel_end >= f["start"])]
        # A server or network fault starting before the bound ends it: count from its end.
        for s, e in outages:
            if t0 < s <= t0 + bound_ns + GRACE_NS:
                t0 = max(t0, e)
        for name in {h.name for h in ended}:
            t0 = waited_out(name, t0, f, faults, waits, bound_ns)
            # Each class of request that waited (readers; writers, permits or mutex holders) is
            # served within the bound: a dead reader must not keep writers out, and readers
            # queued behind a writer that waits for it must not wait on either.
            g = grants[name][bisect.bisect_right(grants[name], (t0, 1 << 62)):]
            for shared in (False, True):
                nxt = next((t for t, p, r in g if p != f.get("pid") and r == shared), None)
                waited = any(s <= t0 + bound_ns and e > t0 and p != f.get("pid") and r == shared
                             for s, e, p, r in waits[name])
                if nxt is not None:
                    worst = max(worst, nxt - t0)
                blocked = f.get("blocks_store") and nxt is not None and nxt <= f["end"] + GRACE_NS
                if waited and (nxt is None or nxt - t0 > bound_ns + GRACE_NS) and not blocked:
                    delay = "never" if nxt is None else f"after {(nxt - t0) / 1e9:.3f}s"
                    who = "reader" if shared else "holder"
                    out.append(f"takeover: {name} after {f['kind']} at {t0}: next {who} {delay}")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--writer-mark-ms", type=int,
                    help="how long the backend's mark of a waiting writer keeps new readers out "
                         "after that writer died, with the readers' longest sleep before they "
                         "notice (default: run.json's, else 0: none)")
    a = ap.parse_args()
    run = a.run
    settings = {}
    if os.path.exists(os.path.join(run, "run.json")):
        with open(os.path.join(run, "run.json")) as f:
            settings = json.load(f)
    if a.writer_mark_ms is None:
        a.writer_mark_ms = settings.get("writer_mark_ms", 0)
    holds, attempts, losses, procs, failed = read_histories(run)
    faults = read_faults(run)
    lease_ns = max((p["lease"] for p in procs.values() if p["lease"]), default=0)
    mark_lost(holds, losses, faults)
    out = []
    most = check_bounds(holds, out)
    check_fences(holds, out)
    check_reads(holds, out)
    accepted, _ = check_writes(run, holds, procs, out)
    shared = any(h.kind == "shared" for h in holds)
    bound_ns = max(lease_ns, a.writer_mark_ms * 1_000_000 if shared else 0)
    bound_ns += settings.get("expiry_slack_ms", 0) * 1_000_000
    worst = check_takeover(holds, faults, failed, bound_ns, out)
    orphans = 0
    list_path = os.path.join(run, "list.txt")
    if os.path.exists(list_path):
        with open(list_path) as f:
            for line in f:
                if line.startswith("rows "):
                    orphans = int(line.split()[1])
        if orphans:
            out.append(f"orphans: {orphans} locks left under the prefix (list.txt)")
    else:
        out.append("orphans: list.txt missing (the end-of-run list() did not run)")
    writes = [h.write for h in holds if h.write]
    figures = {
        "processes": len(procs),
        "holds": len(holds),
        "kinds": dict(collections.Counter(kind_of(h) for h in holds)),
        "most_at_once": most,
        "acquire_timeouts": attempts["timeouts"],
        "acquire_errors": attempts["errors"],
        "writes_accepted": sum(1 for w in writes if w[3]),
        "writes_rejected": sum(1 for w in writes if not w[3]),
        "reads": sum(1 for h in holds if h.read),
        "store_log_writes": accepted,
        "holds_lost": sum(1 for h in holds if h.lost),
        "loss_callbacks": len(losses),
        "faults": dict(collections.Counter(f["kind"] for f in faults)),
        "worst_takeover_s": round(worst / 1e9, 3),
        "orphans": orphans,
        "backend_counters": dict(sum((collections.Counter(p["counters"])
                                      for p in procs.values()), collections.Counter())),
        "violations": len(out),
        "violations_by_rule": dict(collections.Counter(v.split(":")[0] for v in out)),
    }
    if a.json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k}: {v}")
    for v in out[:50]:
        print("VIOLATION", v)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
