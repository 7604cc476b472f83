// One chaos worker process's history file: one line per operation, written with a single
// write(2) on an O_APPEND descriptor, so a line is never torn, lines of several threads never
// interleave and a SIGKILL loses at most the operation in progress. Line format (times are
// CLOCK_MONOTONIC nanoseconds, shared by every process on the machine):
//   <start_ns> <end_ns> <thread> <client> <event> <name-hex> [fields...]
// Events: G acquired (fence owner), T acquire timed out, E error (message), W fenced write
// (fence accepted|rejected highest accepted_ns), V verify by renew() (ok|lost), R release (lost
// flag after it), L loss callback (thread -1). Lines starting with '#' are comments the checker
// reads for the process's settings and clean end.
#pragma once

#include <string>

namespace sqlock::chaos {

/// Appends history lines to one file; thread-safe.
class history {
 public:
  /// Creates or truncates `path`.
  explicit history(const std::string& path);
  ~history();
  history(const history&) = delete;
  history& operator=(const history&) = delete;

  /// Writes one line (a '\n' is added).
  void line(const std::string& text);

 private:
  int fd_ = -1;
};

}  // namespace sqlock::chaos
