// Counts the connections of one backend object (what backend::connections() reports) and, with
// the client's connection budget, reserves a place before each connect.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "sqlock/types.hpp"

namespace sqlock::sql {

/// Counts the connections of one backend object, of every kind (statement pool, lock
/// sessions, listener): what backend::connections() reports. Thread-safe. With a limit (the
/// client's connection budget), a driver whose closed connections count until the server has
/// ended their sessions (closing_sessions.hpp) reserves a place before it connects, so the
/// server never sees more sessions of the client than the budget.
class connection_counter {
 public:
  /// `limit`: the most connections open at once that reserve() allows (0: no limit).
  explicit connection_counter(std::size_t limit = 0) : limit_(limit) {}
  /// A connection was made.
  void opened() noexcept;
  /// Counts one more connection open once fewer than the limit are, waiting for that until
  /// `deadline`; false then. Before a connect: connected() after it succeeded, closed() after
  /// it failed (or once the connection's session ended).
  bool reserve(steady_time deadline);
  /// The connection reserve() counted was made.
  void connected() noexcept;
  /// A connection counted by opened() or reserve() was closed.
  void closed() noexcept;
  /// The counts so far.
  connection_stats get() const noexcept;

 private:
  void count_open() noexcept;

  const std::size_t limit_;
  std::mutex m_;  // reserve() waits under it for closed()
  std::condition_variable cv_;
  std::atomic<std::uint64_t> opened_{0};
  std::atomic<std::size_t> open_{0};
  std::atomic<std::size_t> peak_{0};
};

}  // namespace sqlock::sql
