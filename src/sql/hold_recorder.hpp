// Records the advisory holds of this process in the server's table of holds, in the
// background, once each has lived `delay`: what list() and force_release() of other processes
// show (owner, fence, since). The lock call itself writes nothing (a row write costs the
// server several times the lock: sql/postgresql/advisory_session.sql, sql/mysql/advisory.sql),
// so a hold released within `delay` is never written, and a longer one costs one row write in
// a batch, off the caller's path. Shared by the PostgreSQL and MySQL advisory backends; the
// batch's wire form (hold_recorder_json.hpp) is theirs. With a 10 ms delay a recorded hold has
// lived at least 50 times the write. No thread of its own: its writes run as tasks on the
// library's driver threads (sqlock/backend/background.hpp), one at a time, each bounded by the
// timeout, and a flush writes on the caller's thread; a failed write is retried with the next
// batch (list() then lags, no lock is affected).
// The engine records its waiting requests with another one (sql_engine.hpp, waiting()): there
// the end of a written record is written too, and a record still live is written again before
// its row expires on the server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
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
    steady_time since{};   ///< when it was granted (the answer arrived), or began waiting
    lock_kind kind = lock_kind::exclusive;
    std::uint32_t permits = 0;  ///< kind permit: the name's number of permits
  };
  /// A hold as written: its age when the batch was taken in place of `since`.
  struct record {
    std::string name, owner, holder;
    std::uint64_t fence = 0;
    std::int64_t pid = 0;
    std::int64_t age_ms = 0;
    lock_kind kind = lock_kind::exclusive;
    std::uint32_t permits = 0;
  };
  using key = std::pair<std::string, std::string>;  ///< name, owner
  /// What one write carries.
  struct batch {
    std::vector<record> records;  ///< to write (again, for a record being kept alive)
    std::vector<key> ended;       ///< written records that ended (only with ends_written)
  };
  /// Writes a batch by `deadline`; throws when it could not (the batch is retried later).
  using writer = std::function<void(const batch& b, steady_time deadline)>;
  /// What happens to a written record later. By default nothing: the release that ends a hold
  /// removes its row itself, and a row left by a lost session is recognised as stale.
  struct upkeep {
    bool ends_written = false;     ///< released() of a written record queues its end
    milliseconds rewrite_every{};  ///< a written record still live is written again this long
                                   ///< after its last write (0: never)
  };

  hold_recorder(writer write, milliseconds delay, milliseconds timeout, upkeep keep);
  /// Without upkeep (holds).
  hold_recorder(writer write, milliseconds delay, milliseconds timeout);
  ~hold_recorder();
  hold_recorder(const hold_recorder&) = delete;
  hold_recorder& operator=(const hold_recorder&) = delete;

  /// A hold was granted: recorded `delay` from now unless released before.
  void held(hold h);
  /// The hold of `name` by `owner` ended (released, lost): it is not recorded any more. True
  /// when its record was written or is being written (its end is then written too when
  /// upkeep::ends_written).
  bool released(const std::string& name, const std::string& owner);
  /// Records every waiting hold (and queued end) now, waiting for that at most until
  /// `deadline`.
  void flush(steady_time deadline);

 private:
  struct entry {  // a hold but its name and owner, which are its key
    std::string holder;
    std::uint64_t fence = 0;
    std::int64_t pid = 0;
    steady_time since, due;  // due: when it is (or, once sent, is again) to be written
    lock_kind kind = lock_kind::exclusive;
    std::uint32_t permits = 0;
    bool sent = false;    // written, or in the batch being written
    bool stored = false;  // a write of it succeeded
  };

  // The tasks' way back to this object, cleared by the destructor, which then waits until no
  // task uses it (a task never waits for another: the driver's threads stay free).
  // A background task, run at `fired`.
  void step(steady_time fired);
  // With m_ held by `lk`: writes whatever is due now (or owed to a flush), one batch after the
  // other, unless another thread writes or stop_; then has a task run at the next due time.
  // Each write is bounded by `write_by` when earlier than its timeout.
  void pump(std::unique_lock<std::mutex>& lk, steady_time write_by);
  // With m_ held: has a task run at `t` unless one is due by then.
  void arm(steady_time t);
  // The entries due by `now` (every unsent one when `all`), marked sent, as records, and the
  // queued ends; the records' keys appended to `keys`.
  batch take_batch(steady_time now, bool all, std::vector<key>& keys);
  // When the next write is due: the earliest due entry (a sent one only when rewritten), now
  // with ends queued; max() when there is nothing to write.
  steady_time next_due(steady_time now) const;
  // An entry waits in due_ to be written: unsent, or sent and to be written again.
  bool scheduled(const entry& e) const;
  // Puts the hold in due_ at its due time if it waits to be written, or takes it out: called
  // around every change of its `sent` or `due` (each touches due_ alone, in O(log n)).
  void schedule(const std::pair<const key, entry>& h);
  void unschedule(const std::pair<const key, entry>& h);

  const writer write_;
  const milliseconds delay_, timeout_;
  const upkeep keep_;
  std::mutex m_;
  std::condition_variable cv_;
  std::map<key, entry> holds_;
  std::set<std::pair<steady_time, key>> due_;  // the holds that wait to be written, by due time
  std::vector<key> ended_;  // ends of written records, to write (upkeep::ends_written)
  std::size_t unsent_ = 0;
  std::uint64_t flushes_ = 0;  // flush requests made
  std::uint64_t flushed_ = 0;  // flush requests served (a batch written or failed after them)
  steady_time ends_due_{};     // when the queued ends are written (later after a failed write)
  unsigned failures_ = 0;      // writes failed in a row
  steady_time next_write_{};   // the earliest start of the next write but a flush's
  bool stop_ = false;
  steady_time task_at_ = steady_time::max();  // the earliest task to come (max(): none)
  bool writing_ = false;                      // a batch is being written
  std::shared_ptr<task_gate> gate_;           // what the background tasks call step() through
};

}  // namespace sqlock::sql
