// Background work of a backend on the library's driver threads, instead of a thread of its own.
// Part of the backend-author API.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "sqlock/export.hpp"
#include "sqlock/types.hpp"

namespace sqlock {

/// Runs `task` at `when` (at once when it has passed) on one of the process's driver threads:
/// the few threads that drive every asynchronous acquisition (docs/async.md), started on first
/// use. For periodic or batched store calls a backend would otherwise give a thread of their
/// own. The task should return soon: a store call in it is bounded by its own deadline, as an
/// attempt is, and it must not wait for another task. A task outliving what it refers to must
/// find out by itself (hold a std::weak_ptr). Never blocks; never throws but std::bad_alloc.
SQLOCK_API void run_in_background(steady_time when, std::function<void()> task);

class descriptor_watch;

/// Calls `ready(revents)` once, on a driver thread, when `fd` has one of `events` (poll(2)'s
/// flags; POLLERR, POLLHUP and POLLNVAL are reported whatever `events` asks): a one-shot watch,
/// to be made again for more. For a socket a backend would otherwise give a thread of its own
/// to wait on (a session's hang-up, a listener's notifications). A driver thread waits in
/// poll(2) for every watch of the process while it has nothing else to do, and polls at least
/// every 10 ms while it has. `ready` should return soon, as a task of run_in_background()
/// should, and must find out by itself whether what it refers to is still there. Remove the
/// watch before closing `fd`: a descriptor closed while watched fires with POLLNVAL, or, once
/// its number is reused, with what the new one has. Never throws but std::bad_alloc.
[[nodiscard]] SQLOCK_API descriptor_watch
watch_descriptor(int fd, short events, std::function<void(short revents)> ready);

/// A watch made by watch_descriptor(). Destroying it (or reset()) before it fired removes the
/// watch; a callback that has already started runs to its end.
class SQLOCK_API descriptor_watch {
 public:
  /// No watch.
  descriptor_watch() noexcept = default;
  /// reset().
  ~descriptor_watch();
  /// Takes over the watch of `o`, which is left empty.
  descriptor_watch(descriptor_watch&& o) noexcept;
  /// reset(), then takes over the watch of `o`, which is left empty.
  descriptor_watch& operator=(descriptor_watch&& o) noexcept;
  descriptor_watch(const descriptor_watch&) = delete;
  descriptor_watch& operator=(const descriptor_watch&) = delete;

  /// Removes the watch if it has not fired yet. Never waits for a running callback.
  void reset() noexcept;
  /// True until reset() or a move from it (also after it fired).
  explicit operator bool() const noexcept { return id_ != 0; }

 private:
  friend descriptor_watch watch_descriptor(int, short, std::function<void(short)>);
  explicit descriptor_watch(std::uint64_t id) noexcept : id_(id) {}
  std::uint64_t id_ = 0;
};

/// Lets background tasks (run_in_background, watch_descriptor) call into an object that may be
/// destroyed meanwhile: the tasks hold the gate (a std::shared_ptr of it) and call the object
/// only through run(); the object's destructor calls close() first.
class SQLOCK_API task_gate {
 public:
  /// Runs `fn` unless the gate is closed; false when it is (`fn` not run).
  bool run(const std::function<void()>& fn);
  /// No run() starts `fn` after it returns; waits for the ones running on other threads. One
  /// running on the calling thread (the object destroyed by its own task) goes on after its
  /// caller returns: it should look at closed() before calling into the object again.
  void close();
  /// True once close() was called.
  bool closed() const;

 private:
  mutable std::mutex m_;
  std::condition_variable left_;
  std::vector<std::thread::id> inside_;  // the threads in run() now
  bool closed_ = false;
};

}  // namespace sqlock
