// The conformance suite's core cases (conformance.hpp): exclusion, leases and renewal, waits,
// fences, reentrancy, names, admin calls and waiting requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "conformance.hpp"

namespace sqlock::test {

TEST_P(conformance, exclusive_between_two_clients) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto n = this->name("excl");
  auto la = a.make_lock(n);
  auto lb = b.make_lock(n);
  la.lock();
  EXPECT_TRUE(la.owns_lock());
  EXPECT_FALSE(lb.try_lock());
  std::thread other([&] { EXPECT_FALSE(lb.try_lock()); });
  other.join();
  la.unlock();
  EXPECT_FALSE(la.owns_lock());
  EXPECT_TRUE(this->taken_after_release(lb));
  EXPECT_FALSE(la.try_lock());
  lb.unlock();
}

TEST_P(conformance, works_with_standard_lock_types) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto n = this->name("std");
  auto la = a.make_lock(n);
  auto lb = b.make_lock(n);
  {
    std::unique_lock g(la);
    EXPECT_TRUE(g.owns_lock());
    std::unique_lock gb(lb, std::defer_lock);
    EXPECT_FALSE(gb.try_lock_for(50ms));
  }
  {
    std::scoped_lock g(lb);
    EXPECT_TRUE(lb.owns_lock());
  }
  std::unique_lock g(la, std::chrono::steady_clock::now() + 2s);
  EXPECT_TRUE(g.owns_lock());
}

TEST_P(conformance, non_owner_release_is_a_noop) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto n = this->name("nonowner");
  auto la = a.make_lock(n);
  la.lock();
  // A release with a foreign owner token does nothing.
  EXPECT_FALSE(b.get_backend().release(lease_info{n, random_token(), 0, nullptr}, soon()));
  auto lb = b.make_lock(n);
  EXPECT_FALSE(lb.try_lock());
  // unlock() of a handle that holds nothing does not throw and releases nothing.
  EXPECT_NO_THROW(lb.unlock());
  EXPECT_FALSE(lb.last_error().empty());
  EXPECT_FALSE(lb.try_lock());
  la.unlock();
  EXPECT_TRUE(this->taken_after_release(lb));
  lb.unlock();
}

TEST_P(conformance, expiry_allows_takeover_and_old_holder_sees_loss) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto n = this->name("expiry");
  if (a.caps().session_bound) {
    // Declared: the hold lives as long as the session, whatever the lease says. Prove it.
    auto la = a.make_lock(n, {.lease = 300ms, .auto_renew = false});
    la.lock();
    std::this_thread::sleep_for(900ms);
    auto lb = b.make_lock(n);
    EXPECT_FALSE(lb.try_lock_for(300ms));
    EXPECT_TRUE(la.renew());
    EXPECT_FALSE(la.lost());
    la.unlock();
    EXPECT_TRUE(lb.try_lock_for(5s));
    lb.unlock();
    return;
  }
  auto la = a.make_lock(n, {.lease = 400ms, .auto_renew = false});
  std::atomic<int> lost_calls{0};
  la.on_lost([&](const std::string& which) {
    EXPECT_EQ(which, n);
    ++lost_calls;
  });
  la.lock();
  const bool fencing = a.caps().fencing;  // a peer's layout may carry none (compat=)
  auto first_fence = fencing ? la.fence() : 0;
  auto lb = b.make_lock(n, {.lease = 10s});
  EXPECT_TRUE(lb.try_lock_for(10s));  // succeeds once la's lease ran out
  if (fencing) {
    EXPECT_GT(lb.fence(), first_fence);
  }
  EXPECT_FALSE(la.renew());
  EXPECT_TRUE(la.lost());
  // The callback runs on the thread that found the loss (a store's watch may have), just after
  // lost() turned true: give that thread the moment it may still need.
  for (auto until = std::chrono::steady_clock::now() + 5s;
       lost_calls.load() == 0 && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(lost_calls.load(), 1);
  la.unlock();  // must not touch b's hold
  auto c = this->connect_new();
  auto lc = c.make_lock(n);
  EXPECT_FALSE(lc.try_lock());
  lb.unlock();
  EXPECT_TRUE(this->taken_after_release(lc));
  lc.unlock();
}

TEST_P(conformance, renewal_keeps_the_lock_past_several_leases) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto n = this->name("renew");
  // Three leases (renewed every lease / 3): without renewals the hold would end in the first.
  // A store that raises short leases to a floor of its own (etcd: TTLs of whole seconds, at
  // least about 2 s) says so in its traits (lease_floor), and the hold is watched past that,
  // with a lease of half the floor: the server keeps it that long anyway, and a 400 ms lease
  // would leave a renewal (two round trips there) 270 ms on a loaded machine.
  const auto lease = std::max<std::chrono::milliseconds>(400ms, GetParam().lease_floor / 2);
  std::chrono::milliseconds watch = 3 * lease;
  watch = std::max(watch, GetParam().lease_floor + 500ms);
  auto la = a.make_lock(n, {.lease = lease});
  la.lock();
  auto lb = b.make_lock(n);
  auto until = std::chrono::steady_clock::now() + watch;
  while (std::chrono::steady_clock::now() < until) {
    EXPECT_FALSE(lb.try_lock());
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_FALSE(la.lost());
  EXPECT_TRUE(la.renew());
  if (!a.caps().session_bound) {
    EXPECT_GE(a.stats().renewals, 3u);
  }
  la.unlock();
  EXPECT_TRUE(this->taken_after_release(lb));
  lb.unlock();
}

TEST_P(conformance, a_wait_longer_than_the_lease_keeps_the_lock) {
  // The waiter's lease starts when the store grants the lock, not when its wait began: after a
  // wait of two leases it holds the lock for two more, renews it and is not told it lost it (in
  // PostgreSQL advisory mode, a wait inside the server once counted against the lease: the
  // hold was reported lost the moment it was granted).
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto n = this->name("longwait");
  // 600 ms: renewals every third of the lease may run up to 400 ms late on a loaded machine;
  // at 400 ms a SQLite hold was lost in a full run, its renewal unanswered at the lease's end.
  constexpr auto lease = 600ms;
  auto la = a.make_lock(n);
  la.lock();
  std::atomic<bool> waiting{false};
  std::thread waiter([&] {
    auto lb = b.make_lock(n, {.lease = lease});
    std::atomic<int> lost_calls{0};
    lb.on_lost([&](const std::string&) { ++lost_calls; });
    const auto began = std::chrono::steady_clock::now();  // before the holder starts counting
    waiting = true;
    ASSERT_TRUE(lb.try_lock_for(20s));
    EXPECT_GE(std::chrono::steady_clock::now() - began, 2 * lease);
    std::this_thread::sleep_for(2 * lease);  // renewed meanwhile
    EXPECT_FALSE(lb.lost());
    EXPECT_EQ(lost_calls.load(), 0);
    EXPECT_FALSE(this->connect_new().make_lock(n).try_lock());
    lb.unlock();
  });
  while (!waiting) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(2 * lease);
  la.unlock();
  waiter.join();
  EXPECT_TRUE(this->taken_after_release(la));  // the waiter released it
  la.unlock();
}

TEST_P(conformance, release_is_idempotent) {
  auto a = this->connect_new();
  auto n = this->name("idem");
  auto la = a.make_lock(n);
  la.lock();
  lease_info held{n, la.owner(), a.caps().fencing ? la.fence() : 0, nullptr};
  la.unlock();
  EXPECT_NO_THROW(la.unlock());
  if (!a.caps().session_bound) {
    // Where releases do not wait, the client's own may still be on its way: this first call
    // may be the one that releases.
    if (GetParam().release_async) (void)a.get_backend().release(held, soon());
    EXPECT_FALSE(a.get_backend().release(held, soon()));
    EXPECT_FALSE(a.get_backend().release(held, soon()));
  }
  EXPECT_TRUE(la.try_lock());
  la.unlock();
}

TEST_P(conformance, try_lock_for_gives_up_at_its_deadline) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto n = this->name("deadline");
  auto la = a.make_lock(n);
  la.lock();
  auto lb = b.make_lock(n);
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(lb.try_lock_for(400ms));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 400ms);
  EXPECT_LT(took, 400ms + 10s);  // liveness only: it does return
  EXPECT_FALSE(lb.try_lock_until(std::chrono::system_clock::now() + 100ms));
  EXPECT_GE(b.stats().timeouts, 2u);
  la.unlock();
}

TEST_P(conformance, reentrant_per_thread) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto n = this->name("reentrant");
  auto la = a.make_lock(n);
  auto la2 = a.make_lock(n);  // a second handle of the same name in the same client
  la.lock();
  if (a.caps().fencing) {
    auto fence = la.fence();
    la.lock();
    EXPECT_TRUE(la2.try_lock());
    EXPECT_EQ(la2.fence(), fence);
  } else {
    la.lock();
    EXPECT_TRUE(la2.try_lock());
  }
  std::thread other([&] {  // another thread of the same client must not get in
    EXPECT_FALSE(la.try_lock());
    EXPECT_FALSE(la2.try_lock_for(50ms));
  });
  other.join();
  auto lb = b.make_lock(n);
  la2.unlock();
  la.unlock();
  EXPECT_FALSE(lb.try_lock());
  la.unlock();
  EXPECT_TRUE(this->taken_after_release(lb));
  lb.unlock();
  EXPECT_GE(a.stats().reentries, 2u);
}

TEST_P(conformance, fencing_tokens_strictly_rise) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  if (!a.caps().fencing) {
    auto l = a.make_lock(this->name("nofence"));
    l.lock();
    EXPECT_THROW(l.fence(), unsupported);
    l.unlock();
    return;
  }
  auto n = this->name("fence");
  std::uint64_t last = 0;
  for (int i = 0; i < 6; ++i) {
    auto& c = i % 2 ? a : b;
    auto l = c.make_lock(n);
    l.lock();
    EXPECT_GT(l.fence(), last) << "hold " << i;
    last = l.fence();
    l.unlock();
  }
}

TEST_P(conformance, threads_and_processes_keep_an_exact_counter) {
  const int procs = this->caps_before_fork().cross_process ? 3 : 1, threads = 4, rounds = 15;
  struct shared_state {
    std::atomic<int> holders;
    std::atomic<int> max_holders;
    long counter;  // deliberately not atomic: the lock protects it
    std::atomic<int> errors;
  };
  shared_mem<shared_state> st;
  auto n = this->name("counter");
  in_threads_of_processes(procs, threads, this->url_, st->errors, [&](client& c, int) {
    auto l = c.make_lock(n, {.lease = 20s});
    for (int r = 0; r < rounds; ++r) {
      std::unique_lock g(l);
      raise_to(st->max_holders, ++st->holders);
      long v = st->counter;
      std::this_thread::sleep_for(200us);
      st->counter = v + 1;
      --st->holders;
    }
  });
  EXPECT_EQ(st->errors.load(), 0);
  EXPECT_EQ(st->max_holders.load(), 1);
  EXPECT_EQ(st->counter, static_cast<long>(procs) * threads * rounds);
}

TEST_P(conformance, odd_names_are_stored_verbatim) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  std::string tag = random_token().substr(0, 8);
  std::vector<std::string> names = {
      "it's " + tag,
      "double \"quote\" " + tag,
      "'; DROP TABLE sqlock_locks; -- " + tag,
      "Robert'); DELETE FROM sqlock_locks WHERE ('1'='1 " + tag,
      "ключ-🔒-鍵-" + tag,
      "back\\slash\\ " + tag,
      "%_like_* wildcards? " + tag,
      "new\nline\ttab " + tag,
      tag + std::string(1024, 'x'),
      tag + std::string(1024, 'x') + "y",  // differs only after 1 KiB
      "Case " + tag,
      "case " + tag,
  };
  // A peer's layout whose lock names are the peer's own znode paths (ZooKeeper compat=) cannot
  // hold control characters or characters beyond U+FFFF: its traits say so, and those names
  // lose them (in place: the checks below find names by index).
  if (GetParam().znode_path_names) {
    names[4] = "ключ-鍵-" + tag;
    names[7] = "new line tab " + tag;
  }
  // A peer's layout that takes ASCII names only refuses the others (config_error).
  if (GetParam().ascii_names) {
    EXPECT_THROW(a.make_lock(names[4]).try_lock(), config_error);
    names[4] = "kljuch-lock-key-" + tag;
  }
  // A peer's layout with a short name column (ShedLock's VARCHAR(64)): its traits give the
  // longest name, and the two long names become names of that length and one less.
  if (const auto max = GetParam().max_name_chars; max > 0) {
    names[8] = tag + std::string(max - tag.size() - 1, 'x');
    names[9] = names[8] + "y";  // differs only in its last character
  }
  std::vector<mutex> held;
  for (const auto& n : names) {
    held.push_back(a.make_lock(n));
    ASSERT_TRUE(held.back().try_lock()) << n;
  }
  // Every name is its own lock: none was folded onto another.
  for (const auto& n : names) {
    auto l = b.make_lock(n);
    EXPECT_FALSE(l.try_lock()) << n;
  }
  // A peer's layout that keeps neither names nor owners (listed_as_taken false) lists the
  // server's own record of each lock; that every name above is its own lock is checked already.
  if (a.caps().list && a.caps().listed_as_taken) {
    auto all = a.list();
    for (std::size_t i = 0; i < names.size(); ++i) {
      auto it = std::find_if(all.begin(), all.end(), [&](auto& s) { return s.name == names[i]; });
      ASSERT_NE(it, all.end()) << "not listed verbatim: " << names[i];
      EXPECT_EQ(it->owner, held[i].owner());
      if (a.caps().fencing) {
        EXPECT_EQ(it->fence, held[i].fence());
      }
    }
    // A prefix is matched literally, never as a pattern.
    auto pct = a.list("%_like_* wildcards? " + tag);
    ASSERT_EQ(pct.size(), 1u);
    EXPECT_EQ(pct[0].name, names[6]);
    auto starts_with_pct = a.list("%");
    EXPECT_TRUE(std::all_of(starts_with_pct.begin(), starts_with_pct.end(),
                            [](auto& s) { return s.name[0] == '%'; }));
  }
  for (auto& l : held) l.unlock();
  for (const auto& n : names) {
    auto l = b.make_lock(n);
    EXPECT_TRUE(this->taken_after_release(l)) << n;
    l.unlock();
  }
}

TEST_P(conformance, invalid_input_is_a_config_error) {
  auto a = this->connect_new();
  EXPECT_THROW(a.make_lock(""), config_error);
  EXPECT_THROW(a.make_lock("x", {.lease = 0ms}), config_error);
  EXPECT_THROW(a.make_lock("x", {.lease = -5s}), config_error);
  EXPECT_THROW(a.make_lock("x", {.lease = 1s, .renew_every = 2s}), config_error);
  EXPECT_THROW(sqlock::connect(""), config_error);
  EXPECT_THROW(sqlock::connect("no scheme here"), config_error);
  EXPECT_THROW(sqlock::connect("nosuchbackend://host/db"), config_error);
  EXPECT_THROW(
      sqlock::connect(this->url_ + (this->url_.find('?') == std::string::npos ? "?" : "&") +
                      "no_such_option=1"),
      config_error);
  // Nothing was damaged: the store still works.
  auto l = a.make_lock(this->name("after-bad-input"));
  EXPECT_TRUE(l.try_lock());
  l.unlock();
}

TEST_P(conformance, list_and_force_release) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto n = this->name("admin");
  auto la = a.make_lock(n);
  la.lock();
  if (!a.caps().list) {
    EXPECT_THROW(a.list(), unsupported);
  } else if (!a.caps().listed_as_taken) {
    // A peer's layout lists the server's record (a key, the holding session): the hold is
    // there, under some name, with the session that holds it.
    auto held = [&] {
      auto rows = b.list();
      return std::any_of(rows.begin(), rows.end(), [](auto& s) { return !s.holder.empty(); });
    };
    EXPECT_TRUE(eventually(held));
  } else {
    // Another process's list() sees a session-bound hold once its holder recorded it (PostgreSQL
    // advisory: after ~10 ms, in the background; docs/backends/postgres.md).
    auto rows = b.list(n);
    if (rows.empty() && a.caps().session_bound) {
      EXPECT_TRUE(eventually([&] { return !(rows = b.list(n)).empty(); }));
    }
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].name, n);
    EXPECT_EQ(rows[0].owner, la.owner());
    EXPECT_FALSE(rows[0].mode.empty());
  }
  if (!a.caps().force_release) {
    EXPECT_THROW(b.force_release(n), unsupported);
    la.unlock();
    return;
  }
  std::atomic<bool> told{false};
  la.on_lost([&](const std::string&) { told = true; });
  EXPECT_TRUE(b.force_release(n));
  EXPECT_FALSE(b.force_release(n));
  auto lb = b.make_lock(n);
  EXPECT_TRUE(lb.try_lock_for(5s));
  EXPECT_FALSE(la.renew());
  EXPECT_TRUE(la.lost());
  EXPECT_TRUE(told);  // lost() answers true once the callback has returned
  la.unlock();
  EXPECT_FALSE(a.make_lock(n).try_lock());  // b still holds
  lb.unlock();
}

// The optional admin calls are what the backend implements (capabilities_of() derives
// force_release, events and sweep from its store admin): a store with an audit trail records a
// forced release there with the actor who forced it, one without throws unsupported; sweep()
// answers 0 without a sweeper.
TEST_P(conformance, admin_calls_are_what_the_backend_implements) {
  auto a = this->connect_new();
  const auto caps = a.caps();
  auto n = this->name("trail");
  if (!caps.events) {
    EXPECT_THROW(a.events(n, 10), unsupported);
  } else if (caps.force_release) {
    auto l = a.make_lock(n);
    ASSERT_TRUE(l.try_lock());
    const std::string actor = "alice@ops-" + random_token().substr(0, 6);
    EXPECT_TRUE(a.force_release(n, actor));
    auto events = a.events(n, 10);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].event, "force_release");
    EXPECT_EQ(events[0].name, n);
    // Who forced it, as named (a server database adds its role or user after it).
    EXPECT_EQ(events[0].actor.rfind(actor, 0), 0u) << events[0].actor;
    l.unlock();
  }
  if (!caps.sweep)
    EXPECT_EQ(a.sweep(), 0u);
  else
    EXPECT_NO_THROW(a.sweep());
}

// Where the store can tell (caps().waiting), a blocked request is listed with its holder text
// and its place in the queue (in a fair store; 0 elsewhere, listed by when each began waiting),
// and is no longer listed once granted or given up; elsewhere waiting() throws unsupported.
TEST_P(conformance, waiting_requests_are_listed_in_queue_order) {
  auto a = this->connect_new();
  auto n = this->name("waiting");
  if (!a.caps().waiting) {
    EXPECT_THROW(a.waiting(n), unsupported);
    return;
  }
  const bool fair = a.caps().fair;
  const std::uint32_t first = fair ? 1 : 0, second = fair ? 2 : 0;
  auto b = sqlock::connect(this->url_, {.holder = "waiter-b"});
  auto c = sqlock::connect(this->url_, {.holder = "waiter-c"});
  auto la = a.make_lock(n);
  la.lock();
  EXPECT_TRUE(a.waiting(n).empty());
  // A waiter that holds, once granted, until told it is done; `stop` makes it give up.
  struct waiter {
    waiter(const sqlock::client& c, const std::string& name) : lock(c.make_lock(name)) {}
    sqlock::mutex lock;
    std::atomic<bool> got{false}, done{false};
    std::stop_source stop;
    std::thread thread;
    void start() {
      thread = std::thread([this] {
        try {
          got = lock.try_lock_for(15s, stop.get_token());
        } catch (const interrupted&) {  // stopped: gave up, nothing held
        }
        while (got && !done) std::this_thread::sleep_for(5ms);
        if (got) lock.unlock();
      });
    }
  };
  waiter wb(b, n), wc(c, n);
  wb.start();
  std::vector<waiting_request> w;
  EXPECT_TRUE(eventually([&] { return (w = a.waiting(n)).size() == 1; }));
  wc.start();
  EXPECT_TRUE(eventually([&] { return (w = a.waiting(n)).size() == 2; }));
  if (w.size() == 2) {  // in queue order, or by when each began waiting
    EXPECT_EQ(w[0].name, n);
    EXPECT_EQ(w[0].holder, "waiter-b");
    EXPECT_EQ(w[0].position, first);
    EXPECT_EQ(w[0].kind, lock_kind::exclusive);
    if (!fair) {
      EXPECT_FALSE(w[0].since.empty());  // the order it is listed in
    }
    EXPECT_EQ(w[1].holder, "waiter-c");
    EXPECT_EQ(w[1].position, second);
    EXPECT_FALSE(w[0].owner.empty());
    EXPECT_NE(w[0].owner, w[1].owner);
  }
  EXPECT_TRUE(a.waiting("no-such-prefix-" + n).empty());
  la.unlock();  // one is granted (b, first in a fair queue); the other moves up
  EXPECT_TRUE(eventually([&] {
    if (!wb.got && !wc.got) return false;
    w = a.waiting(n);
    return w.size() == 1 && w[0].holder == (wb.got ? "waiter-c" : "waiter-b") &&
           w[0].position == first;
  }));
  if (fair) {
    EXPECT_TRUE(wb.got);
  }
  (wb.got ? wc : wb).stop.request_stop();  // the other gives up
  EXPECT_TRUE(eventually([&] { return a.waiting(n).empty(); }));
  wb.done = wc.done = true;
  wb.thread.join();
  wc.thread.join();
  EXPECT_NE(wb.got, wc.got) << "exactly one was granted";
}

}  // namespace sqlock::test
