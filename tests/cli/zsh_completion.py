#!/usr/bin/env python3
"""The zsh completion (scripts/completion/_sqlock) in an interactive zsh on a pty, as a user meets
it: compinit finds it on $fpath, TAB completes the line or lists the choices with their
descriptions. Each case types a line and TAB, then a key bound to a widget that prints the line
between markers and accepts an empty line (a fresh prompt, no listing left below it); what the
terminal showed up to the marker is the listing.
Skips when zsh is not installed (fails instead under SQLOCK_TEST_REQUIRE_ALL=1).
Usage: zsh_completion.py SQLOCK COMPLETION_DIR"""
import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time

from checks import Checks

SHOW_KEY = b"\x14"  # ^T: bound to the widget that prints the line
# The widget's output: @@BUF[the line]@@ (a marker no listing contains).
MARKER = re.compile(rb"@@BUF\[(.*?)\]@@")
ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|[()][0-9A-Za-z]|[=>78M])")

SETUP = r"""
fpath=({completion} $fpath)
PATH={bin}:$PATH
autoload -U compinit && compinit -u -d $ZDOTDIR/.zcompdump
PS1='zsh%# '
unsetopt beep
# Group headings and messages are shown, so a test sees what kind of word zsh expects.
zstyle ':completion:*:descriptions' format 'GROUP<%d>'
_show_line() {{ zle -I; print -r -- "@@BUF[$BUFFER]@@"; BUFFER=; zle .accept-line }}
zle -N _show_line
bindkey '^T' _show_line
print -r -- "@@BUF[ready]@@"
"""


class Zsh:
    """An interactive `zsh -f -i` on a pty, in a 250×100 window; every read has a deadline."""

    def __init__(self, zsh, env, cwd):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 100, 250, 0, 0))
            os.chdir(cwd)
            os.execve(zsh, [zsh, "-f", "-i"], env)
        self.out = b""

    def until_marker(self, seconds=20):
        """The output up to the next marker and the line the marker holds (None at the
        deadline or when zsh ended)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = MARKER.search(self.out)
            if found:
                before, self.out = self.out[:found.start()], self.out[found.end():]
                return before.decode(errors="replace"), found.group(1).decode(errors="replace")
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                self.out += chunk
        return self.out.decode(errors="replace"), None

    def complete(self, line):
        """Types `line` and TAB; returns (the line after completion, the screen text shown)."""
        os.write(self.fd, line.encode() + b"\t" + SHOW_KEY)
        screen, result = self.until_marker()
        # The screen as lines: escape sequences and carriage returns dropped.
        return result, ANSI.sub("", screen).replace("\r", "").replace("\0", "")

    def close(self):
        try:
            os.write(self.fd, b"exit\n")
        except OSError:
            pass  # zsh has ended
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


# (what, the line typed before TAB, the line after it). Long options take their value after
# `=` or in the next word; zsh completes them to `--name=`.
LINES = [
    ("a subcommand completes", "sqlock lis", "sqlock list "),
    ("a top-level option completes", "sqlock --ver", "sqlock --version "),
    ("an option of run completes", "sqlock run --kill", "sqlock run --kill-after="),
    ("an option whose entry fills the column", "sqlock run --at-l",
     "sqlock run --at-least="),
    ("--wait is not offered after -n (Excludes: in --help)", "sqlock run -n --wa",
     "sqlock run -n --wa"),
    ("an option of release completes", "sqlock release --f", "sqlock release --force "),
    ("release's options after the name too", "sqlock release name --f",
     "sqlock release name --force "),
    ("no run option after the name (the command's words)", "sqlock run name --k",
     "sqlock run name --k"),
    ("an unknown subcommand: nothing", "sqlock lsit --", "sqlock lsit --"),
    ("a mode completes", "sqlock run --mode adv", "sqlock run --mode advisory "),
    ("--token-file takes a file", "sqlock serve --token-file some-f",
     "sqlock serve --token-file some-file.txt "),
    ("nothing odd for a lock name", "sqlock run or", "sqlock run or"),
    ("a command after --", "sqlock run name -- zsqtest", "sqlock run name -- zsqtestcmd "),
    ("then files", "sqlock run name -- zsqtestcmd some-f",
     "sqlock run name -- zsqtestcmd some-file.txt "),
    ("a command after the name without --", "sqlock run name zsqtest",
     "sqlock run name zsqtestcmd "),
    ("a command after -c", "sqlock run -c zsqtest", "sqlock run -c zsqtestcmd "),
    ("inside -c's quoted string, files", "sqlock run -c 'zsqtestcmd some-f",
     "sqlock run -c 'zsqtestcmd some-file.txt"),
]
# (what, the line typed before TAB, words one line of the listing shows in this order).
LISTINGS = [
    ("run's options listed with descriptions", "sqlock run --",
     ("--kill-after", "--", "on a lost lease: SIGTERM")),
    ("a short and a long name share a line", "sqlock run -",
     ("--wait", "-w", "--", "how long to wait")),
    ("an option whose entry wraps in --help", "sqlock run -",
     ("--conflict-exit-code", "-E", "--", "exit code when the lock")),
    ("--mode lists the modes", "sqlock run --mode ", ("advisory", "optimistic", "pessimistic")),
    ("the lock name is announced", "sqlock run or", ("GROUP<lock name>",)),
]


def subcommands(sqlock):
    """(name, description) of every subcommand in `sqlock --help`."""
    text = subprocess.run([sqlock, "--help"], capture_output=True, text=True, check=True).stdout
    section = text.split("\nSubcommands:\n", 1)[1].split("\n\n", 1)[0]
    return [tuple(l.split(None, 1)) for l in section.splitlines() if re.match(r"  [a-z]", l)]


def listed(screen, *words):
    """Whether one line of the screen shows `words` in this order, apart from spaces."""
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    return any(pattern.search(l) for l in screen.splitlines())


def main():
    sqlock, completion = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    zsh = shutil.which("zsh")
    if not zsh:
        if os.environ.get("SQLOCK_TEST_REQUIRE_ALL") == "1":
            print("FAIL: zsh is not installed (SQLOCK_TEST_REQUIRE_ALL=1)")
            return 1
        print("skip: zsh completion (zsh not installed)")
        return 0
    check = Checks()
    with tempfile.TemporaryDirectory() as d:
        # On PATH: sqlock behind a wrapper that logs its arguments (to count --help runs) and
        # a command of our own; a file to complete; the shell's setup.
        bindir, calls = os.path.join(d, "bin"), os.path.join(d, "calls.log")
        os.mkdir(bindir)
        with open(os.path.join(bindir, "sqlock"), "w") as f:
            f.write(f'#!/bin/sh\necho "$*" >>"{calls}"\nexec "{sqlock}" "$@"\n')
        os.chmod(os.path.join(bindir, "sqlock"), 0o755)
        os.symlink("/bin/true", os.path.join(bindir, "zsqtestcmd"))
        open(os.path.join(d, "some-file.txt"), "w").close()
        with open(os.path.join(d, "setup.zsh"), "w") as f:
            f.write(SETUP.format(completion=completion, bin=bindir))
        env = dict(os.environ, ZDOTDIR=d, HOME=d, TERM="vt100")
        shell = Zsh(zsh, env, d)
        try:
            os.write(shell.fd, b"source setup.zsh\n")
            _, ready = shell.until_marker()
            check("zsh started with compinit", "ready", ready)
            if ready != "ready":
                return 1
            line, screen = shell.complete("sqlock ")
            check("sqlock TAB: the line stays", "sqlock ", line)
            check("sqlock TAB: the group heading", True, "GROUP<sqlock subcommand>" in screen)
            for name, desc in subcommands(sqlock):
                check(f"sqlock TAB lists {name} with its description", True,
                      listed(screen, name, "--", desc))
            for what, typed, expected in LINES:
                check(what, expected, shell.complete(typed)[0])
            for what, typed, words in LISTINGS:
                check(what, True, listed(shell.complete(typed)[1], *words))
            screen = shell.complete("sqlock lsit --")[1]
            check("an unknown subcommand: no error shown", False,
                  bool(re.search(r"_arguments|not found|[Ee]rror", screen)))
        finally:
            shell.close()
        with open(calls) as f:
            runs = f.read().splitlines()
        check("--help read once per shell", 1, runs.count("--help"))
        check("run --help read once per shell", 1, runs.count("run --help"))
    return check.finish("zsh completion")


if __name__ == "__main__":
    sys.exit(main())
