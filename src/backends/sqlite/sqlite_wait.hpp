// How a SQLite waiter learns it may try again: an inotify watch on the database's WAL file
// (sqlite_wait.cpp), per blocked waiter, or one per client for every asynchronous waiter.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "sql/engine_acquisition.hpp"
#include "sqlock/backend/background.hpp"

namespace sqlock::sqlite::detail {

// The WAL file's changes for the asynchronous waiters of one client: one inotify instance,
// made by the first arm() (a client that never waits asynchronously has none), whatever the
// number of waiters, and read on the library's driver threads (sqlock::watch_descriptor), not a
// thread of its own. Every change of the file (any commit) counts
// one more in seq() and calls every wake-up armed at that time, once.
class wal_notifier final {
 public:
  explicit wal_notifier(std::string path) : path_(std::move(path)) {}
  // Waits for a read of the instance under way, then closes it.
  ~wal_notifier();
  wal_notifier(const wal_notifier&) = delete;
  wal_notifier& operator=(const wal_notifier&) = delete;

  // The number of changes seen so far.
  std::uint64_t seq() const { return seq_.load(std::memory_order_acquire); }

  // What arm() did.
  enum class armed {
    heard,      // a change newer than `since` was seen, or the watch was only just set: try now
    waiting,    // `wake` is kept until the next change
    unwatched,  // no WAL file to watch (none yet, or no inotify): try again after a pause
  };
  // Keeps `wake` under `key` until the next change of the file, unless one newer than `since`
  // (a seq() value) was seen already.
  armed arm(std::uint64_t since, const void* key, std::function<void()> wake);
  // Drops the wake-up kept under `key`.
  void disarm(const void* key) noexcept;

 private:
  // With m_ held: the instance, its descriptor watched and the watch on the file; false when
  // the file cannot be watched now.
  bool ensure_watch();
  // With m_ held: has the instance's next event read (read_changes) on a driver thread.
  void watch_instance();
  // Reads what the instance says, counts a change and calls the wake-ups armed.
  void read_changes();

  const std::string path_;
  std::mutex m_;
  int fd_ = -1;  // the inotify instance
  int wd_ = -1;  // the watch on the WAL file (-1: none now)
  std::shared_ptr<task_gate> gate_ = std::make_shared<task_gate>();  // read_changes()'s way in
  descriptor_watch readable_;                                        // of fd_, while it stands
  std::map<const void*, std::function<void()>> armed_;
  std::atomic<std::uint64_t> seq_{0};
};

// One acquire() call's wait: any commit appends to the WAL file, so an inotify watch on it
// wakes on every release after the watch was set. The watch is set by the first wait() (after
// the first busy attempt), which returns at once so that the core's next attempt runs with the
// watch in place: a release is never missed, and an acquisition that succeeds at once creates
// no inotify instance (closing one waits for the kernel's SRCU grace period, 7-22 ms, which
// `sqlock run` would otherwise pay on every lock). The watch is re-checked at a bounded
// interval: the WAL file may not exist yet (no commit since the database was opened) or be
// reset after a checkpoint. Driven asynchronously (arm()), the request uses its client's
// wal_notifier instead and has no instance of its own.
class wal_watch final : public sql::release_watch {
 public:
  wal_watch(std::string path, wal_notifier& shared) : path_(std::move(path)), shared_(shared) {}
  ~wal_watch() override;
  wal_watch(const wal_watch&) = delete;
  wal_watch& operator=(const wal_watch&) = delete;

  void wait(steady_time until, const std::stop_token& stop) override;
  void attempt_starts() override { since_ = shared_.seq(); }
  std::optional<steady_time> arm(steady_time until, std::function<void()> wake) override;
  void disarm() noexcept override { shared_.disarm(this); }

 private:
  static constexpr milliseconds recheck_armed{250};   // in case the WAL file was replaced
  static constexpr milliseconds recheck_unarmed{20};  // no WAL file to watch yet

  void arm();

  std::string path_;
  wal_notifier& shared_;
  std::uint64_t since_ = 0;  // the shared notifier's seq() when the last attempt started
  bool opened_ = false;
  int fd_ = -1;
  bool armed_ = false;
};

}  // namespace sqlock::sqlite::detail
