// A forked child that runs one part of a test. It never returns into the test: an exception or
// a failed check ends it with a non-zero status. (Unwinding into the test would destroy the
// parent's objects in the child, whose threads the child does not have: a condition variable
// another thread of the parent waited on then blocks its destructor forever.)
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

namespace sqlock::test {

/// Forks; the child runs `work`, then _exit()s 0, or 1 after a failed check, or 2 after an
/// exception (its message on stderr, prefixed "child: "). Returns the child's pid (-1 when fork
/// failed) in the parent.
template <class F>
pid_t fork_child(F&& work) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  int rc = 0;
  try {
    work();
    rc = ::testing::Test::HasFailure() ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    rc = 2;
  } catch (...) {
    std::fprintf(stderr, "child: an exception of unknown type\n");
    rc = 2;
  }
  std::fflush(nullptr);
  ::_exit(rc);
}

/// Waits for the child `pid` and expects it to have exited 0.
inline void expect_child_succeeded(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

}  // namespace sqlock::test
