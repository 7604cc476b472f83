// How a SQLite waiter learns it may try again: an inotify watch on the database's WAL file
// (sqlite_wait.cpp).
#pragma once

#include <string>
#include <utility>

#include "sql/engine_acquisition.hpp"

namespace sqlock::sqlite::detail {

// One acquire() call's wait: any commit appends to the WAL file, so an inotify watch on it
// wakes on every release after the watch was set. The watch is set by the first wait() (after
// the first busy attempt), which returns at once so that the core's next attempt runs with the
// watch in place: a release is never missed, and an acquisition that succeeds at once creates
// no inotify instance (closing one waits for the kernel's SRCU grace period, 7-22 ms, which
// `sqlock run` would otherwise pay on every lock). The watch is re-checked at a bounded
// interval: the WAL file may not exist yet (no commit since the database was opened) or be
// reset after a checkpoint.
class wal_watch final : public sql::release_watch {
 public:
  explicit wal_watch(std::string path) : path_(std::move(path)) {}
  ~wal_watch() override;
  wal_watch(const wal_watch&) = delete;
  wal_watch& operator=(const wal_watch&) = delete;

  void wait(steady_time until, const std::stop_token& stop) override;

 private:
  static constexpr milliseconds recheck_armed{250};   // in case the WAL file was replaced
  static constexpr milliseconds recheck_unarmed{20};  // no WAL file to watch yet

  void arm();

  std::string path_;
  bool opened_ = false;
  int fd_ = -1;
  bool armed_ = false;
};

}  // namespace sqlock::sqlite::detail
