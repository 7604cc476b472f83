// The shared resource the chaos workers write to: a "fenced store" on the local disk. Each lock
// name has one file holding the highest fence the store has accepted; a write carrying a lower
// fence is rejected. Every accepted write is also appended to
// the name's log (monotonic time, fence, writer) while the file lock is held, so the checker can
// compare the store's own order with the workers' histories. A reader (a shared holder) reads
// the highest accepted fence instead of writing. Files are guarded by flock(2), so any number
// of processes may write and read at once.
#pragma once

#include <cstdint>
#include <string>

namespace sqlock::chaos {

/// Outcome of one fenced write.
struct write_result {
  bool accepted = false;         ///< false: the fence was lower than one already seen
  std::uint64_t highest = 0;     ///< highest fence seen before this write
  std::int64_t accepted_ns = 0;  ///< CLOCK_MONOTONIC time of acceptance (0 when rejected)
};

/// A directory of per-name files; see the file comment.
class fenced_store {
 public:
  /// Uses (and creates) directory `dir`.
  explicit fenced_store(std::string dir);

  /// Writes under `fence` for lock `name`; `writer` is recorded in the log ("pid.thread").
  write_result write(const std::string& name, std::uint64_t fence, const std::string& writer);

  /// The highest fence accepted for lock `name` so far (0 before any write).
  std::uint64_t read(const std::string& name);

  /// File name used for a lock name (hex of its bytes, so any name is a safe file name).
  static std::string file_key(const std::string& name);

 private:
  std::string dir_;
};

/// CLOCK_MONOTONIC in nanoseconds (the clock every history and log line uses).
std::int64_t monotonic_ns();

}  // namespace sqlock::chaos
