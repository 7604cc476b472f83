#!/usr/bin/env python3
"""Prints a Markdown table of chaos runs: the JSON lines chaos.py --figures wrote, each joined
with the checker's figures for its run directory."""
import json
import os
import subprocess
import sys

CHECK = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "tests", "chaos", "check_history.py")


def main():
    print("| backend | worker processes (with respawns) × threads | holds | writes accepted / rejected | holds lost "
          "| faults injected | worst takeover | orphans | violations |")
    print("|---|---|---|---|---|---|---|---|---|")
    with open(sys.argv[1]) as f:
        runs = [json.loads(l) for l in f if l.strip()]
    for r in runs:
        out = subprocess.run([sys.executable, CHECK, r["out"], "--json"], capture_output=True,
                             text=True).stdout.splitlines()[0]
        c = json.loads(out)
        faults = ", ".join(f"{k} {v}" for k, v in sorted(c["faults"].items())) or "none"
        kind = {"exclusive": [], "shared": ["shared"]}.get(r.get("kind", "exclusive"),
                                                           [f"semaphore/{r.get('permits')}"])
        backend = " ".join([r["backend"], *r.get("params", []), *kind])
        print(f"| {backend} | {c['processes']} × {r['threads']} | {c['holds']} | "
              f"{c['writes_accepted']} / {c['writes_rejected']} | {c['holds_lost']} | {faults} | "
              f"{c['worst_takeover_s']} s | {c['orphans']} | {c['violations']} |")


if __name__ == "__main__":
    main()
