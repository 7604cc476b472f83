#!/usr/bin/env python3
"""`sqlock run` on a terminal: CMD's process group is the terminal's foreground group (it reads
the terminal; Ctrl-C reaches it), and sqlock exits with CMD's status. Usage: terminal.py SQLOCK"""
import os
import pty
import select
import sys
import tempfile
import time

from checks import Checks


def run_on_pty(argv, keys, env):
    """Runs argv as a session leader on a new pty, types `keys` once it printed READY, returns
    (output, exit status). Everything is bounded by a 20 s deadline."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env)
    out, sent, deadline = b"", False, time.monotonic() + 20
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if not sent and b"READY" in out:
            time.sleep(0.2)
            os.write(fd, keys)
            sent = True
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return out.decode(errors="replace"), os.waitstatus_to_exitcode(status)


def main():
    sqlock = sys.argv[1]
    check = Checks()
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, SQLOCK_URL=f"sqlite:{d}/locks.db")
        # Fields 5 and 8 of /proc/PID/stat: process group and the terminal's foreground group.
        script = ('set -- $(cat /proc/$$/stat); echo "own=$([ "$5" = "$$" ] && echo yes)"; '
                  'echo "fg=$([ "$5" = "$8" ] && echo yes)"; '
                  'echo READY; read -r x; echo "got=$x"; exit 3')
        out, status = run_on_pty([sqlock, "run", "tty", "--", "sh", "-c", script], b"hello\n", env)
        check("CMD leads a process group of its own", True, "own=yes" in out)
        check("CMD's group is the terminal's foreground group", True, "fg=yes" in out)
        check("CMD reads the terminal", True, "got=hello" in out)
        check("sqlock exits with CMD's status", 3, status)

        out, status = run_on_pty([sqlock, "run", "tty", "--", "sh", "-c", "echo READY; sleep 30"],
                                 b"\x03", env)
        check("Ctrl-C reaches CMD (exit 130)", 130, status)
    return check.finish("terminal")


if __name__ == "__main__":
    sys.exit(main())
