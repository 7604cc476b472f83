#!/usr/bin/env python3
"""Runs the side builds of a build tree ahead of CTest: the tests labelled side_build_setup (the
sanitizer builds, the clang fuzzing build, the shared-library build), one after another, each
with its command and working directory as CTest would run it (their commands run them at idle
CPU priority, SCHED_IDLE: only CPU time no other process wants). scripts/test.sh starts this in
the background while CTest runs every test not labelled side_build, then runs the side_build
tests: the same builds again (up to date: seconds) and the programs they built. Each build's
command holds a lock file of its own (flock), so that CTest's run of a build that is still going
on here waits for it, and the programs of the builds done so far run meanwhile. A build that
fails here fails again there, with its output in the CTest log.

  ctest --test-dir BUILD -L side_build_setup --show-only=json-v1 >TESTS.json
  scripts/side-builds.py TESTS.json LOG

(The listing is made first, in the foreground: a ctest run writes BUILD/Testing/, so it must not
overlap the CTest run this one goes beside.)

Exit status: 0 when every build passed (or was skipped, exit 77), else 1."""
import json
import os
import subprocess
import sys
import time


def side_build_tests(listing):
    with open(listing) as f:
        tests = json.load(f)["tests"]
    # The order CTest would start them in: the highest COST first.
    cost = lambda t: next((p["value"] for p in t.get("properties", []) if p["name"] == "COST"), 0)
    return sorted(tests, key=cost, reverse=True)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: side-builds.py TESTS.json LOG")
    listing, log_path = sys.argv[1], sys.argv[2]
    status = 0
    with open(log_path, "w") as log:
        for t in side_build_tests(listing):
            props = {p["name"]: p["value"] for p in t.get("properties", [])}
            cwd = props.get("WORKING_DIRECTORY", os.path.dirname(os.path.abspath(listing)))
            t0 = time.monotonic()
            log.write(f"side-builds: {t['name']}: {' '.join(t['command'])}\n")
            log.flush()
            try:
                rc = subprocess.run(t["command"], cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                    timeout=props.get("TIMEOUT")).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            log.write(f"side-builds: {t['name']}: exit {rc} after {time.monotonic() - t0:.0f} s\n")
            log.flush()
            if rc not in (0, 77):
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
