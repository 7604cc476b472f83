// The shared conformance suite: every backend and mode instantiates it with the stores it runs
// on, each a store_case (a value: the suite's cases are compiled once, in
// conformance_cases.cpp, conformance_kinds.cpp and conformance_forms.cpp, which a test program
// links as the object library sqlock_conformance_cases):
//
//   INSTANTIATE_TEST_SUITE_P(my_backend, conformance,
//                            ::testing::Values(store_case{.label = "plain",
//                                                         .url_var = "SQLOCK_TEST_MY_URL",
//                                                         .url = same_url}),
//                            store_label);
//
// What a backend declares it cannot do (capabilities) is checked to fail with `unsupported`
// instead of being tested for behaviour. The lock kinds (shared, permits, run_exclusive,
// election) and stopped waits are in conformance_kinds.cpp, the acquire cases through the
// blocking, future and Asio forms in conformance_forms.cpp.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "forked_child.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "test_env.hpp"

namespace sqlock::test {

using namespace std::chrono_literals;

/// Runs `work` in `procs - 1` forked children and here; expects every child to exit 0.
template <class F>
void in_processes(int procs, F work) {
  std::vector<pid_t> children;
  for (int p = 1; p < procs; ++p) {
    pid_t pid = fork_child(work);
    ASSERT_GE(pid, 0);
    children.push_back(pid);
  }
  work();
  for (pid_t pid : children) expect_child_succeeded(pid);
}

/// In `procs` processes (forked), `threads` threads each: body(c, t), with two clients per
/// process that threads alternate between (so clients of one process exclude each other too);
/// a throw counts in `errors` (which lives in shared memory).
template <class F>
void in_threads_of_processes(int procs, int threads, const std::string& url,
                             std::atomic<int>& errors, F body) {
  in_processes(procs, [&] {
    auto c1 = sqlock::connect(url, patient_tries());
    auto c2 = sqlock::connect(url, patient_tries());
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        try {
          body(t % 2 ? c1 : c2, t);
        } catch (...) {
          ++errors;
        }
      });
    }
    for (auto& t : ts) t.join();
  });
}

/// An object of type T in memory shared with forked children (zero-initialised).
template <class T>
struct shared_mem {
  T* p;
  shared_mem() {
    void* m = ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
    p = new (m) T{};
  }
  ~shared_mem() { ::munmap(p, sizeof(T)); }
  shared_mem(const shared_mem&) = delete;
  shared_mem& operator=(const shared_mem&) = delete;
  T* operator->() { return p; }
};

/// Waits (bounded by 20 s) until `cond` holds; returns whether it did.
template <class F>
bool eventually(F cond) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/// Raises `max` to `v` if higher.
inline void raise_to(std::atomic<int>& max, int v) {
  int m = max.load();
  while (v > m && !max.compare_exchange_weak(m, v)) {
  }
}

/// One store the suite runs on: a backend in one mode or layout.
struct store_case {
  std::string label;  ///< the tests' name suffix (letters, digits and '_')
  /// The environment variable holding the server URL (nullptr: no server).
  const char* url_var = nullptr;
  using url_type =
      std::function<std::string(const std::string& base, const std::filesystem::path& tmp)>;
  /// The store's URL, from the server URL (base) and a fresh temporary directory.
  url_type url;
  /// unlock() returns once the release is sent (release=async): another client may find the
  /// lock busy for a moment after it.
  bool release_async = false;
  /// The shortest lease the store keeps (etcd: TTLs of whole seconds, at least about 2 s).
  std::chrono::milliseconds lease_floor{0};
  /// The longest name the layout stores (ShedLock's VARCHAR(64)); 0: no limit the suite meets.
  std::size_t max_name_chars = 0;
  /// Names are the peer's own znode paths (ZooKeeper compat=): no control characters and none
  /// beyond U+FFFF.
  bool znode_path_names = false;
  /// Names are ASCII only (MySQL compat=distributedlock: the peer lower-cases others in a way
  /// the layout does not reproduce, so it refuses them with config_error).
  bool ascii_names = false;
};

/// gtest prints a case by its label.
inline void PrintTo(const store_case& c, std::ostream* os) {
  *os << c.label;
}

/// INSTANTIATE_TEST_SUITE_P's name generator: the case's label.
inline std::string store_label(const ::testing::TestParamInfo<store_case>& i) {
  return i.param.label;
}

/// store_case::url for a store at the server URL as it is.
inline std::string same_url(const std::string& base, const std::filesystem::path&) {
  return base;
}

class conformance : public ::testing::TestWithParam<store_case> {
 protected:
  void SetUp() override {
    std::string base;
    if (const char* var = GetParam().url_var) SQLOCK_REQUIRE_URL(var, base);
    url_ = GetParam().url(base, tmp_.path);
  }
  client connect_new() { return sqlock::connect(url_, patient_tries()); }
  /// The store's capabilities, read through a client closed again before the caller forks:
  /// a ZooKeeper client just opened may be resolving its hosts in its own thread, inside
  /// getaddrinfo() under a glibc lock, and a child forked then waits on that lock forever.
  capabilities caps_before_fork() { return connect_new().caps(); }
  std::string name(const std::string& stem) { return unique_name(stem); }
  /// try_lock() of a lock that another client's unlock() just gave up. A store opened with
  /// releases that do not wait (release_async: unlock() returns once the release is sent) may
  /// show it busy for a moment, so that is waited for briefly.
  bool taken_after_release(sqlock::mutex& l) const {
    if (GetParam().release_async) return l.try_lock_for(std::chrono::seconds(5));
    return l.try_lock();
  }
  /// `take` (one try by another client) right after a client's release: tried again for up to
  /// 20 s (eventually) where releases do not wait.
  template <class F>
  bool free_after_release(F take) const {
    if (GetParam().release_async) return eventually(take);
    return take();
  }
  /// The same for a permit of a semaphore whose permit another client just released.
  sqlock::permit permit_after_release(sqlock::semaphore& s) const {
    if (GetParam().release_async) return s.try_acquire_for(std::chrono::seconds(5));
    return s.try_acquire();
  }

  temp_dir tmp_;
  std::string url_;
};

}  // namespace sqlock::test
