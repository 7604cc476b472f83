#!/usr/bin/env python3
"""The chaos checker must catch what it claims to: each case writes a small synthetic run
(histories, store log, faults, list) that breaks one rule and expects exactly that rule to be
reported; a clean run must pass."""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_history.py")
S = 1_000_000_000
NAME = "6e"  # hex of "n"


def hold(pid, thread, fence, start, end, write=True, verified=True, accepted=None, kind=None,
         read=None, asked=None):
    """History lines of one hold of process `pid` (1 or 2) from `start` to `end` seconds;
    accepted = the time the store accepted its write; kind = the G line's kind (none: an older
    history's line, exclusive); read = the highest fence a reader's read saw; asked = when its
    acquire began (default: just before `start`)."""
    a, e = int(start * S), int(end * S)
    asked_ns = a if asked is None else int(asked * S)
    acc = accepted if accepted is not None else a + 1000
    lines = [f"{asked_ns} {a + 10} {thread} {thread} G {NAME} {fence} owner{pid}.{thread}.{fence}" +
             (f" {kind}" if kind else "")]
    if write:
        lines.append(f"{a + 20} {a + 30} {thread} {thread} W {NAME} {fence} accepted 0 {acc}")
    if read is not None:
        lines.append(f"{a + 20} {a + 30} {thread} {thread} O {NAME} {fence} {read}")
    lines.append(f"{e - 20} {e - 10} {thread} {thread} V {NAME} {'ok' if verified else 'lost'}")
    lines.append(f"{e} {e + 10} {thread} {thread} R {NAME} held")
    return lines, (acc, fence, f"{pid}.{thread}") if write else None


def kind_hold(pid, thread, fence, start, end, kind, read=None, verified=True):
    """A hold of a kind: exclusive ones write, shared ones read (`read`), permits do neither."""
    return (pid, thread, fence, start, end, kind == "exclusive", verified, None, kind, read)


def run_case(holds, faults=(), orphans=0, store_extra=(), log_writes=True, waits=(), args=()):
    d = tempfile.mkdtemp(prefix="chaos-check-")
    os.makedirs(os.path.join(d, "store"))
    lines, store = collections.defaultdict(list, {1: [], 2: []}), []
    for h in holds:
        l, w = hold(*h)
        lines[h[0]] += l
        if w and log_writes:
            store.append(w)
    store += list(store_extra)
    for pid, start, end, *kind in waits:  # acquire attempts of process `pid` that timed out
        lines[pid].append(f"{int(start * S)} {int(end * S)} 9 9 T {NAME}" +
                          "".join(f" {k}" for k in kind))
    for pid, ls in lines.items():
        with open(os.path.join(d, f"h-00{pid}.txt"), "w") as f:
            f.write(f"# pid {pid} lease_ms 2000 threads 4 start 0\n" + "\n".join(ls) +
                    "\n# end 1\n")
    with open(os.path.join(d, "store", NAME + ".log"), "w") as f:
        for t, fence, w in sorted(store):
            f.write(f"{t} {fence} {w}\n")
    with open(os.path.join(d, "faults.jsonl"), "w") as f:
        for x in faults:
            f.write(json.dumps(x) + "\n")
    with open(os.path.join(d, "list.txt"), "w") as f:
        f.write(f"rows {orphans}\n")
    try:
        r = subprocess.run([sys.executable, CHECK, d, *args], capture_output=True, text=True)
    finally:
        shutil.rmtree(d)
    return r.returncode, r.stdout


def expect(label, rule, result):
    rc, out = result
    ok = (rc == 0 and "VIOLATION" not in out) if rule is None else (
        rc == 1 and f"VIOLATION {rule}:" in out)
    print(("ok   " if ok else "FAIL ") + label)
    if not ok:
        print(out)
    return ok


def main():
    clean = [(1, 0, 1, 1.0, 2.0), (2, 1, 2, 2.5, 3.0), (1, 2, 3, 3.5, 4.0)]
    results = [
        expect("clean run passes", None, run_case(clean)),
        expect("overlapping holds", "exclusion",
               run_case([(1, 0, 1, 1.0, 3.0), (2, 1, 2, 2.0, 4.0)])),
        expect("overlap of a hold found lost is allowed", None,
               run_case([(1, 0, 1, 1.0, 3.0, True, False), (2, 1, 2, 2.0, 4.0)])),
        expect("fence not rising", "fences",
               run_case([(1, 0, 5, 1.0, 2.0), (2, 1, 4, 2.5, 3.0, False)])),
        # The second acquire began first (0.5 s) and was granted after the first hold ended:
        # only the rule in grant order sees that its lower fence came later.
        expect("fence not rising in grant order", "fences",
               run_case([(1, 0, 5, 1.0, 2.0), (2, 1, 4, 2.5, 3.0, False, True, None, None,
                                                None, 0.5)])),
        expect("an earlier ask granted later with a higher fence passes", None,
               run_case([(1, 0, 5, 1.0, 2.0), (2, 1, 6, 2.5, 3.0, True, True, None, None,
                                                None, 0.5)])),
        expect("store accepted a lower fence", "writes",
               run_case(clean, store_extra=[(int(4.5 * S), 2, "1.9")])),
        expect("accepted write missing from the store", "writes",
               run_case([(1, 0, 1, 1.0, 2.0)], log_writes=False)),
        expect("orphans left", "orphans", run_case(clean, orphans=1)),
        expect("slow takeover after a holder kill", "takeover",
               run_case([(1, 0, 1, 1.0, 1.5), (2, 1, 2, 6.0, 7.0)], waits=[(2, 1.1, 5.0)],
                        faults=[{"kind": "kill", "pid": 1, "start": int(1.2 * S),
                                 "end": int(1.2 * S)}])),
        # SIGSTOP at 1.2 s for 3 s (to 4.2 s), lease 2 s: the next holder at 4.3 s is late by
        # the lease, in time for a stopped SQLite writer's SIGCONT, and late for that at 5.5 s.
        expect("takeover after a stopped store writer runs again", None,
               run_case([(1, 0, 1, 1.0, 1.5), (2, 1, 2, 4.3, 5.0)], waits=[(2, 1.1, 4.2)],
                        faults=[{"kind": "stop", "pid": 1, "start": int(1.2 * S),
                                 "end": int(4.2 * S), "blocks_store": True}])),
        expect("slow takeover after a stopped process that holds no store lock", "takeover",
               run_case([(1, 0, 1, 1.0, 1.5), (2, 1, 2, 4.3, 5.0)], waits=[(2, 1.1, 4.2)],
                        faults=[{"kind": "stop", "pid": 1, "start": int(1.2 * S),
                                 "end": int(4.2 * S)}])),
        # Holder 1 killed at 1.2 s (lease 2 s: bound 4.2 s); process 2, waiting ahead in a fair
        # queue, stopped at 3.0 s past its lease: the next holder is due by 6.0 s, counted from
        # that stop. Without the stop catching process 2 waiting, 5.5 s is late.
        expect("takeover behind a waiter stopped past its lease", None,
               run_case([(1, 0, 1, 1.0, 1.5), (3, 1, 2, 5.5, 6.0)],
                        waits=[(2, 1.1, 6.0), (3, 1.1, 5.5)],
                        faults=[{"kind": "kill", "pid": 1, "start": int(1.2 * S),
                                 "end": int(1.2 * S)},
                                {"kind": "stop", "pid": 2, "start": int(3.0 * S),
                                 "end": int(6.0 * S)}])),
        expect("slow takeover, a stopped process not waiting for the name", "takeover",
               run_case([(1, 0, 1, 1.0, 1.5), (3, 1, 2, 5.5, 6.0)],
                        waits=[(2, 1.1, 2.0), (3, 1.1, 5.5)],
                        faults=[{"kind": "kill", "pid": 1, "start": int(1.2 * S),
                                 "end": int(1.2 * S)},
                                {"kind": "stop", "pid": 2, "start": int(3.0 * S),
                                 "end": int(6.0 * S)}])),
        expect("slow takeover long after a stopped store writer runs again", "takeover",
               run_case([(1, 0, 1, 1.0, 1.5), (2, 1, 2, 5.5, 6.0)], waits=[(2, 1.1, 5.0)],
                        faults=[{"kind": "stop", "pid": 1, "start": int(1.2 * S),
                                 "end": int(4.2 * S), "blocks_store": True}])),
    ]
    return 0 if all(results + kinds_cases()) else 1


def kinds_cases():
    """The shared_mutex and semaphore rules (kind_hold: pid, thread, fence, start, end, kind)."""
    p2 = "permit/2"
    permits_ok = [kind_hold(1, 0, 1, 1.0, 3.0, p2), kind_hold(2, 1, 2, 1.5, 2.5, p2),
                  kind_hold(2, 2, 5, 2.6, 4.0, p2)]
    readers_ok = [kind_hold(1, 0, 1, 1.0, 3.0, "shared", read=0),
                  kind_hold(2, 1, 2, 1.5, 2.5, "shared", read=0),
                  kind_hold(1, 2, 3, 3.5, 4.0, "exclusive"),
                  kind_hold(2, 3, 4, 4.5, 5.0, "shared", read=3)]
    kill_reader = {"kind": "kill", "pid": 1, "start": int(1.2 * S), "end": int(1.2 * S)}
    return [
        expect("permits: N overlapping permits pass", None, run_case(permits_ok)),
        expect("permits: N + 1 overlapping permits", "permits",
               run_case(permits_ok + [kind_hold(1, 3, 4, 2.0, 2.2, p2)])),
        expect("permits: N + 1 overlapping, one found lost, pass", None,
               run_case(permits_ok + [kind_hold(1, 3, 4, 2.0, 2.2, p2, verified=False)])),
        expect("permits: a shared hold overlapping a permit", "exclusion",
               run_case(permits_ok[:1] + [kind_hold(2, 1, 2, 1.5, 2.5, "shared", read=0)])),
        expect("permits: two permits with one fence", "fences",
               run_case([kind_hold(1, 0, 5, 1.0, 3.0, p2), kind_hold(2, 1, 5, 1.5, 2.5, p2)])),
        expect("permits: a later permit with a lower fence", "fences",
               run_case([kind_hold(1, 0, 5, 1.0, 2.0, p2), kind_hold(2, 1, 4, 2.5, 3.0, p2)])),
        expect("shared: readers overlap, a writer alone, pass", None, run_case(readers_ok)),
        expect("shared: a writer overlapping a reader", "exclusion",
               run_case(readers_ok + [kind_hold(2, 4, 5, 2.0, 2.2, "exclusive")])),
        expect("shared: a writer overlapping a reader found lost, pass", None,
               run_case([kind_hold(2, 1, 2, 1.5, 2.5, "shared", 0, False),
                         kind_hold(1, 4, 5, 2.0, 2.2, "exclusive")])),
        expect("shared: a reader saw a write of a later writer", "reads",
               run_case(readers_ok[:3] + [kind_hold(2, 3, 4, 4.5, 5.0, "shared", read=7)],
                        store_extra=[(int(4.6 * S), 7, "1.9")])),
        expect("shared: a writer waited long after a reader's kill", "takeover",
               run_case([kind_hold(1, 0, 1, 1.0, 1.5, "shared", read=0),
                         kind_hold(2, 1, 2, 1.3, 1.4, "shared", read=0),
                         kind_hold(2, 2, 3, 6.0, 7.0, "exclusive")],
                        waits=[(2, 1.1, 5.0, "exclusive")], faults=[kill_reader])),
        expect("shared: readers kept out by a dead writer's mark within it pass", None,
               run_case([kind_hold(1, 0, 1, 1.0, 1.5, "exclusive"),
                         kind_hold(2, 1, 2, 4.5, 5.0, "shared", read=1)],
                        waits=[(2, 1.3, 4.4, "shared")], faults=[kill_reader],
                        args=["--writer-mark-ms", "3000"])),
        expect("shared: readers kept out past lease + 1 s without a mark", "takeover",
               run_case([kind_hold(1, 0, 1, 1.0, 1.5, "exclusive"),
                         kind_hold(2, 1, 2, 4.5, 5.0, "shared", read=1)],
                        waits=[(2, 1.3, 4.4, "shared")], faults=[kill_reader])),
    ]


if __name__ == "__main__":
    sys.exit(main())
