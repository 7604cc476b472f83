// sqlock::election: leader election over a lock name. campaign(value) blocks until this
// process leads; the leader's hold carries `value` (an address, a host name) as its holder
// text and is renewed while it leads; its fence is its term, so terms strictly rise across
// leaders. A leader whose lease cannot be renewed is told through the loss signal before the
// lease ends in the store, so it can stop acting before a successor can be elected. Anyone
// can read the current leader (value and term) or observe changes; that needs a backend that
// can list holds (caps().list). lead() gives the term as a movable sqlock::hold instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "sqlock/client.hpp"
#include "sqlock/hold.hpp"

namespace sqlock {

/// Options of an election (an aggregate: use designated initialisers).
struct election_options {
  milliseconds lease{10000};  ///< the leader's lease, renewed while it leads (> 0)
  milliseconds poll{0};       ///< how often observe() reads the leader; 0 = lease / 4
};

/// Who leads: the value its campaign gave and its term (the fence of its hold).
struct leader_info {
  std::string value;       ///< the leader's campaign value
  std::uint64_t term = 0;  ///< strictly rises from leader to leader

  bool operator==(const leader_info&) const = default;  ///< Same value and term.
};

/// A running observe(): stops (and joins its thread) when stopped or destroyed.
class SQLOCK_API observation {
 public:
  observation() = default;
  observation(observation&&) noexcept = default;  ///< Moves.
  /// Stops this observation, then takes `o`'s.
  observation& operator=(observation&& o) noexcept;
  observation(const observation&) = delete;
  observation& operator=(const observation&) = delete;
  ~observation();
  /// Stops calling back; returns once no callback runs any more. Idempotent.
  void stop() noexcept;

  struct state;  ///< internal

 private:
  friend class election;
  explicit observation(std::shared_ptr<state> s) : st_(std::move(s)) {}
  std::shared_ptr<state> st_;
};

/// One participant of a leader election (made by client::make_election()). Thread-safe.
class SQLOCK_API election {
 public:
  election(election&&) noexcept;             ///< Moves.
  election& operator=(election&&) noexcept;  ///< Moves.
  election(const election&) = delete;
  election& operator=(const election&) = delete;
  /// Resigns (never throws); the on_lost callback is not called after it returns.
  ~election();

  /// Blocks until this participant leads with `value` (non-empty; config_error otherwise).
  /// usage_error when it already leads or campaigns; after a lost term it campaigns anew. A
  /// campaign ends on `stop` as a timeout would and throws interrupted (see sqlock::mutex).
  void campaign(const std::string& value, std::stop_token stop = {});
  /// One attempt: true when it now leads.
  bool try_campaign(const std::string& value);
  /// Waits at most `d` to lead.
  template <class Rep, class Period>
  bool campaign_for(const std::string& value, const std::chrono::duration<Rep, Period>& d,
                    std::stop_token stop = {}) {
    return campaign_until_steady(value,
                                 std::chrono::steady_clock::now() +
                                     std::chrono::ceil<std::chrono::steady_clock::duration>(d),
                                 std::move(stop));
  }
  /// Waits until `t` (any clock) to lead.
  template <class Clock, class Duration>
  bool campaign_until(const std::string& value, const std::chrono::time_point<Clock, Duration>& t,
                      std::stop_token stop = {}) {
    return campaign_for(value, t - Clock::now(), std::move(stop));
  }
  /// Waits until a steady_clock time point to lead (or `stop`: interrupted).
  bool campaign_until_steady(const std::string& value, steady_time deadline,
                             std::stop_token stop = {});
  /// Blocks until elected with `value` (or `stop`: interrupted) and returns the term as a
  /// movable hold (its fence is the term): leadership ends when the hold is released, from any
  /// thread, or destroyed. Independent of campaign(): this participant's is_leader(), term(),
  /// resign() and on_lost() do not see it (the hold has its own loss signal), and a campaign
  /// of this participant waits for it like any other candidate's term.
  hold lead(const std::string& value, std::stop_token stop = {});
  /// One attempt; an empty hold when another leads.
  hold try_lead(const std::string& value);
  /// Waits at most `d` to lead; an empty hold when not elected by then.
  template <class Rep, class Period>
  hold try_lead_for(const std::string& value, const std::chrono::duration<Rep, Period>& d,
                    std::stop_token stop = {}) {
    return try_lead_until_steady(value,
                                 std::chrono::steady_clock::now() +
                                     std::chrono::ceil<std::chrono::steady_clock::duration>(d),
                                 std::move(stop));
  }
  /// Waits until `t` (any clock) to lead.
  template <class Clock, class Duration>
  hold try_lead_until(const std::string& value, const std::chrono::time_point<Clock, Duration>& t,
                      std::stop_token stop = {}) {
    return try_lead_for(value, t - Clock::now(), std::move(stop));
  }
  /// Waits until a steady_clock time point to lead (or `stop`: interrupted).
  hold try_lead_until_steady(const std::string& value, steady_time deadline,
                             std::stop_token stop = {});

  /// Stops leading (releases the hold at once); does nothing when not leading.
  void resign() noexcept;

  /// Whether this participant leads now (holds, and the hold was not found lost).
  bool is_leader() const;
  /// This participant's term; usage_error when it does not lead.
  std::uint64_t term() const;
  /// The current leader as the store sees it, if any (unsupported without caps().list).
  std::optional<leader_info> leader() const;
  /// Calls `cb` from a thread of its own with the leader now and on every change (another
  /// term, no leader), reading it every `poll`; errors reading it are skipped until the next
  /// read. Runs until the returned observation stops.
  observation observe(std::function<void(const std::optional<leader_info>&)> cb) const;

  /// True once this participant's current (or last) leadership was found lost.
  bool lost() const;
  /// Called (from the library thread that found it) when leadership is found lost; replaces
  /// the previous one, with sqlock::hold::on_lost()'s guarantee: the callback replaced, or
  /// dropped by the destructor, is not called after they return.
  void on_lost(std::function<void(const std::string& name)> cb);
  /// The election's name.
  const std::string& name() const;

  struct state;  ///< internal

 private:
  friend class client;
  friend struct detail::hold_maker;  // the asynchronous acquisitions (async.hpp)
  explicit election(std::shared_ptr<state> s);
  std::shared_ptr<state> st_;
};

}  // namespace sqlock
