// One chaos worker process's history file: one line per operation, written with a single
// write(2) on an O_APPEND descriptor, so a line is never torn, lines of several threads never
// interleave and a SIGKILL loses at most the operation in progress. Line format (times are
// CLOCK_MONOTONIC nanoseconds, shared by every process on the machine):
//   <start_ns> <end_ns> <thread> <client> <event> <name-hex> [fields...]
// Events: G acquired (fence owner kind), T acquire timed out (kind), E error (kind message),
// W fenced write (fence accepted|rejected highest accepted_ns), O fenced read of a shared
// holder (fence highest: the highest fence the store had accepted), V verify (ok|lost), R
// release (lost flag after it), L loss callback (thread -1). A kind is the library's lock_kind:
// "exclusive" (a mutex or a shared_mutex writer), "shared" (a shared_mutex reader) or
// "permit/N" (one of a semaphore's N permits); lines without one (older histories) are
// exclusive. V is renew() for a mutex and a permit; a shared_mutex has no renew(), so there it
// is the loss signal (!lost()), which the core raises when a renewal is refused or while one is
// unanswered at lease − min(lease/10, 1 s) on the client's clock. Only exclusive holds write
// (a fenced store orders one writer at a time); shared holders read; permit holders do neither
// (N holders at once have no fence order a store could enforce). Lines starting with '#' are
// comments the checker reads for the process's settings and clean end.
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
