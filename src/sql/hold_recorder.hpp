// Records the advisory holds of this process in the server's table of holds, in the
// background, once each has lived `delay`: what list() and force_release() of other processes
// show (owner, fence, since). The lock call itself writes nothing (a row write costs the
// server several times the lock: sql/postgresql/advisory_session.sql, sql/mysql/advisory.sql),
// so a hold released within `delay` is never written, and a longer one costs one row write in
// a batch, off the caller's path. Shared by the PostgreSQL and MySQL advisory backends; the
// batch's wire form (hold_recorder_json.hpp) is theirs. With a 10 ms delay a recorded hold has
// lived at least 50 times the write. One thread; every wait it does is bounded; a failed write is
// retried with the next batch (list() then lags, no lock is affected).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sqlock/backend.hpp"

namespace sqlock::sql {

class hold_recorder {
 public:
  /// A hold to record.
  struct hold {
    std::string name, owner, holder;
    std::uint64_t fence = 0;
    std::int64_t pid = 0;  ///< the server's id of the session that holds it (pid, thread id)
    steady_time since{};   ///< when it was granted (the answer arrived)
  };
  /// A hold as written: its age when the batch was taken in place of `since`.
  struct record {
    std::string name, owner, holder;
    std::uint64_t fence = 0;
    std::int64_t pid = 0;
    std::int64_t age_ms = 0;
  };
  /// Writes a batch by `deadline`; throws when it could not (the batch is retried later).
  using writer = std::function<void(const std::vector<record>& batch, steady_time deadline)>;

  hold_recorder(writer write, milliseconds delay, milliseconds timeout);
  ~hold_recorder();
  hold_recorder(const hold_recorder&) = delete;
  hold_recorder& operator=(const hold_recorder&) = delete;

  /// A hold was granted: recorded `delay` from now unless released before.
  void held(hold h);
  /// The hold of `name` by `owner` ended (released, lost): it is not recorded any more. True
  /// when its record was written or is being written.
  bool released(const std::string& name, const std::string& owner);
  /// Records every waiting hold now, waiting for that at most until `deadline`.
  void flush(steady_time deadline);

 private:
  struct entry {  // a hold but its name and owner, which are its key
    std::string holder;
    std::uint64_t fence = 0;
    std::int64_t pid = 0;
    steady_time since, due;
    bool sent = false;  // written, or in the batch being written
  };
  using key = std::pair<std::string, std::string>;  // name, owner

  void run();
  // The entries due by `now` (every unsent one when `all`), marked sent, as records; their
  // keys appended to `keys`.
  std::vector<record> take_batch(steady_time now, bool all, std::vector<key>& keys);

  const writer write_;
  const milliseconds delay_, timeout_;
  std::mutex m_;
  std::condition_variable cv_;
  std::map<key, entry> holds_;
  std::size_t unsent_ = 0;
  std::uint64_t flushes_ = 0;  // flush requests made
  std::uint64_t flushed_ = 0;  // flush requests served (a batch written or failed after them)
  bool stop_ = false;
  bool idle_ = false;     // the thread waits with nothing to record
  bool writing_ = false;  // a batch is being written
  std::thread thread_;    // last: started once the rest is ready
};

}  // namespace sqlock::sql
