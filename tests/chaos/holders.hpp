// The lock one chaos worker thread takes in a cycle, of each kind the fault suite checks: a
// sqlock::mutex (exclusive), a sqlock::shared_mutex taken shared (a reader) or exclusively (a
// writer), or one permit of a sqlock::semaphore. One interface, so the worker's cycle is the
// same for every kind; kind() is what the history records of each hold.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sqlock/client.hpp"

namespace sqlock::chaos {

/// What the workers of a run take: --kind exclusive|shared|semaphore.
enum class run_kind { exclusive, shared, semaphore };

/// Parses "exclusive", "shared" or "semaphore"; std::invalid_argument otherwise.
run_kind parse_run_kind(const std::string& text);

/// One lock name of one worker thread, through the public API of its kind.
class holder {
 public:
  virtual ~holder() = default;
  /// Waits at most `timeout`; `writer` asks a shared_mutex for an exclusive hold (ignored by
  /// the other kinds). False when not obtained in time; throws what the library throws.
  virtual bool acquire(std::chrono::milliseconds timeout, bool writer) = 0;
  /// Fence of the current hold.
  virtual std::uint64_t fence() const = 0;
  /// Owner token of the current hold.
  virtual std::string owner() const = 0;
  /// "exclusive", "shared" or "permit/N": the library's lock_kind of the current hold, or of
  /// the last one asked for.
  virtual std::string kind() const = 0;
  /// Whether the hold is still valid: renew() where the kind offers it (mutex, permit), else
  /// the library's loss signal (shared_mutex has no renew(); see history.hpp). May throw.
  virtual bool verify() = 0;
  /// Releases; true when the hold had been found lost by then.
  virtual bool release() = 0;
  /// The lock name.
  virtual const std::string& name() const = 0;
};

/// What make_holder() needs beyond the client.
struct holder_options {
  run_kind kind = run_kind::exclusive;
  std::string name;
  std::chrono::milliseconds lease{2000};
  std::uint32_t permits = 1;                     ///< kind semaphore
  std::function<void(const std::string&)> lost;  ///< the loss callback of every hold
};

/// A holder of `o.kind` for `o.name` made by `c`.
std::unique_ptr<holder> make_holder(const sqlock::client& c, const holder_options& o);

}  // namespace sqlock::chaos
