"""check() and the verdict for the Python CLI tests, as lib.sh has them for the shell ones."""


class Checks:
    """Counts failed checks; `finish` prints the verdict and gives the exit status."""

    def __init__(self):
        self.fails = 0

    def __call__(self, what, expected, actual):
        if expected == actual:
            print(f"ok: {what}")
        else:
            print(f"FAIL: {what}: expected {expected!r}, got {actual!r}")
            self.fails += 1

    def finish(self, what):
        if self.fails:
            print(f"{self.fails} failure(s)")
            return 1
        print(f"all {what} checks passed")
        return 0
